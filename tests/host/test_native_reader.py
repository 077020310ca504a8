"""The native counter reader and the pure-Python one agree on the real kernel."""

from __future__ import annotations

import sys

from edgeprof.backends import cgroupfs as fs
from edgeprof.backends import get_backend
from edgeprof.model import RunSpec
from tests.conftest import require


def test_native_and_python_readers_agree_on_a_real_group(mechanism: str) -> None:
    require(fs.NATIVE_AVAILABLE, "the native helper is not built in this installation")
    be = get_backend("cgroup")
    code = "b = b'x' * (32 << 20); open('/dev/null', 'w').write('y' * 1000); sum(range(10**6))"
    with be.launch(RunSpec(command=(sys.executable, "-c", code))) as run:
        assert run.wait(60) == 0
        run.kill()  # nothing left: every counter is now still
        sources = run._counters.sources  # type: ignore[attr-defined]
        native, python = fs.CounterSet(sources, native=True), fs.CounterSet(sources, native=False)
        try:
            a, b = native.read(), python.read()
            assert a == b
            assert native.sample() == python.sample()
            assert a.cpu_usage_us and a.cpu_usage_us > 0
            assert a.memory_peak and a.memory_peak >= 32 << 20
        finally:
            native.close()
            python.close()
