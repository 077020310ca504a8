"""measure/event_notes.tick_cpu_warning: the process backend's phase CPU times are in 10 ms
ticks (a user's six 13 ms busy phases read 0.0 ms, or 10.0 ms at 62 %, with no word)."""

from __future__ import annotations

from edgeprof.measure.event_notes import tick_cpu_warning
from edgeprof.model.phases import PhaseStats


def _phase(name: str, wall: float, cpu: float | None = 0.0) -> PhaseStats:
    return PhaseStats(name, 1, 0.0, wall, cpu, None, None, None, None)


def test_short_phases_on_the_process_backend_are_said_to_be_read_in_ticks() -> None:
    phases = [_phase("p0", 0.013), _phase("long", 0.2, 0.2)]
    said = tick_cpu_warning(phases, "process")
    assert said is not None and said.startswith(
        "phase CPU times are read in clock ticks of 10ms on the process backend: those of "
        "phases shorter than 100ms ('p0') are"
    )
    assert tick_cpu_warning(phases, "cgroup1") is None  # ns counters
    assert tick_cpu_warning([_phase("long", 0.2, 0.2)], "process") is None
    assert tick_cpu_warning([_phase("p0", 0.013, None)], "process") is None  # no CPU read
