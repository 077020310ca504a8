"""This host's fingerprint (:class:`~edgeprof.model.HostInfo`), made once per process: what a
result records of the machine it ran on, and a relative speed (:func:`speed_probe`)."""

from __future__ import annotations

import contextlib
import math
import os
import time
from pathlib import Path

from ..backends.host_resources import meminfo_total
from ..model import HostInfo
from .provenance import cpu_identity, cpuinfo_keys
from .tick import configured_hz

_HOST: HostInfo | None = None


def host_info() -> HostInfo:
    """This host's fingerprint (:class:`HostInfo`), made once per process."""
    global _HOST
    if _HOST is None:
        cpu: dict[str, str] = {}
        with contextlib.suppress(OSError):
            cpu = cpuinfo_keys(Path("/proc/cpuinfo").read_text())
        flags = cpu.get("flags")
        uname = os.uname()  # what platform.release() and socket.gethostname() read
        ident = cpu_identity(cpu, uname.machine)
        _HOST = HostInfo(
            kernel=uname.release,
            cpus=os.cpu_count() or 0,
            cpu_model=cpu.get("model name"),
            hostname=uname.nodename,
            memory_bytes=meminfo_total(),
            cpu_flags=None if flags is None else _digest(" ".join(sorted(flags.split()))),
            speed=speed_probe(),
            tick_hz=configured_hz(),
            cpu_family=ident.family,
            cpu_model_id=ident.model,
            cpu_stepping=ident.stepping,
            virtual=ident.virtual,
        )
    return _HOST


PROBE_LOOPS = 20_000
"""Iterations of one try of :func:`speed_probe`: 1.1 ms on our 2-core Xeon VM."""


def speed_probe(tries: int = 3) -> float:
    """Millions of iterations per second of a fixed pure-Python loop, the best of ``tries``
    (the fastest try is the one least disturbed).  ~3 ms in all: a relative figure for
    telling hosts (and one host's speed over time) apart, not a benchmark.  On our shared
    2-core VM a 3-million-iteration run of this loop took 372 to 611 ms, measured 10 s
    apart: one host's speed drifts too."""
    best = math.inf
    for _ in range(tries):
        start = time.perf_counter()
        x = 0
        for i in range(PROBE_LOOPS):
            x += i * i
        best = min(best, time.perf_counter() - start)
    return round(PROBE_LOOPS / best / 1e6, 3)


def _digest(text: str) -> str:
    import hashlib  # only the fingerprint needs it

    return hashlib.sha256(text.encode()).hexdigest()[:12]
