"""The machine a run was measured on: :class:`HostInfo`, a result's ``host``."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HostInfo:
    kernel: str
    cpus: int
    cpu_model: str | None
    hostname: str
    memory_bytes: int | None = None
    """The host's memory (``MemTotal``; ``None``: older files)."""
    cpu_flags: str | None = None
    """The CPU's feature flags, as the first 12 hex digits of the SHA-256 of their sorted
    list: two hosts with the same model and different flags (a VM that hides AVX-512) do
    not run the same code (``None``: older files)."""
    speed: float | None = None
    """A speed probe taken once per edgeprof process: millions of iterations per second of a
    fixed pure-Python loop, the best of a few 1-ms tries (``None``: older files)."""
    tick_hz: int | None = None
    """The kernel's scheduler tick rate (``CONFIG_HZ``), read from its build configuration
    (``/proc/config.gz``, ``/boot/config-<release>``): a CPU quota is enforced once per tick,
    so a fractional ``cpus`` run's latency tail is a tick's.  ``None`` where no configuration
    is installed (``edgeprof doctor`` then counts it from ``/proc/timer_list``, as root, an
    estimate not recorded here), and in older files."""
    cpu_family: int | None = None
    """The x86 CPU's family, model and stepping (``/proc/cpuinfo``'s ``cpu family``,
    ``model``, ``stepping``; ``lscpu``'s): ``cpu_model`` may be a VM's bare "AMD EPYC" of
    family 26 model 2.  ``None`` off x86, where not readable, and in older files."""
    cpu_model_id: int | None = None
    """The x86 CPU's model number (``model``), as ``cpu_family``."""
    cpu_stepping: int | None = None
    """The x86 CPU's stepping, as ``cpu_family``."""
    virtual: bool | None = None
    """The CPU announces a hypervisor (x86's ``hypervisor`` flag): a virtual machine,
    whose vCPUs the host may share.  ``False``: x86 flags without it (a hypervisor may hide
    itself); ``None`` off x86, where not readable, and in older files."""
