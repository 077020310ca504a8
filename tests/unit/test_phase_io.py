"""Block I/O per phase: the I/O counters kept beside the CPU's in the phases' timeline, each
phase's rise of them (read, written, waited), and the ``Storage by phase`` table."""

from __future__ import annotations

import json
import math

import pytest

from edgeprof.measure.phase_tail import SLICE_S, PhaseTail
from edgeprof.measure.phases import Occurrence, phase_stats
from edgeprof.measure.timeline import IO_KEYS, Recorder, Timeline, io_reading
from edgeprof.model import Counters, PhaseStats
from edgeprof.report.phases import storage_rows
from edgeprof.report.results import render_markdown, render_plain

from .conftest import make_result

MiB = 2**20


def _timeline() -> Timeline:
    """Reads 64 MiB at a steady rate over [0, 2] s, waiting on it all the while; then
    writes 8 MiB over [3, 4] s; CPU 0.1 s a second throughout."""
    t = [0.0, 1.0, 2.0, 3.0, 4.0]
    return Timeline(
        t=t,
        cpu=[0.1 * x for x in t],
        mem=[MiB] * 5,
        io={
            "read": [0.0, 32.0 * MiB, 64.0 * MiB, 64.0 * MiB, 64.0 * MiB],
            "write": [0.0, 0.0, 0.0, 0.0, 8.0 * MiB],
            "stall": [0.0, 1.0, 2.0, 2.0, 2.25],
        },
    )


def test_each_phase_gets_the_io_its_stretch_of_time_made() -> None:
    occ = [Occurrence("load", 0.0, 2.0), Occurrence("infer", 2.0, 3.0),
           Occurrence("save", 3.0, 4.0), Occurrence("load", 0.5, 1.0)]  # fmt: skip
    load, infer, save = phase_stats(occ, _timeline(), [], run_end=4.0)
    # load's nested occurrence lies inside its first: counted once
    assert (load.io_read_bytes, load.io_write_bytes, load.io_stall_s) == (64 * MiB, 0, 2.0)
    assert (infer.io_read_bytes, infer.io_write_bytes, infer.io_stall_s) == (0, 0, 0.0)
    assert (save.io_read_bytes, save.io_write_bytes, save.io_stall_s) == (0, 8 * MiB, 0.25)


def test_a_stretch_between_readings_takes_its_share_by_time() -> None:
    (part,) = phase_stats([Occurrence("part", 0.25, 1.25)], _timeline(), [], run_end=4.0)
    assert part.io_read_bytes == 32 * MiB  # 0.75 s of the first second, 0.25 s of the next
    assert part.io_stall_s == pytest.approx(1.0)


def test_no_reading_inside_a_phase_leaves_its_io_unmeasured() -> None:
    """As its CPU time: the readings around it shared out by time are the surrounding
    stretch's figures, not the phase's."""
    (short,) = phase_stats([Occurrence("short", 1.2, 1.3)], _timeline(), [], run_end=4.0)
    assert (short.cpu_s, short.io_read_bytes, short.io_stall_s) == (None, None, None)


def test_a_timeline_without_io_counters_measures_none() -> None:
    plain = Timeline(t=[0.0, 1.0], cpu=[0.0, 1.0], mem=[MiB, MiB])
    (p,) = phase_stats([Occurrence("p", 0.0, 1.0)], plain, [], run_end=1.0)
    assert p.cpu_s == 1.0 and (p.io_read_bytes, p.io_write_bytes, p.io_stall_s) == (None,) * 3
    missing = Timeline(t=[0.0, 1.0], cpu=[0.0, 1.0], mem=[MiB, MiB],
                       io={key: [None, None] for key in IO_KEYS})  # fmt: skip
    assert missing.rise("read", 0.0, 1.0) is None


def test_the_recorder_keeps_the_io_counters_from_the_first_event() -> None:
    rec = Recorder()
    c = Counters(io_read_bytes=4096, io_write_bytes=None, io_some_us=1_500_000)
    assert io_reading(c) == (4096.0, None, 1.5)
    rec.add(0.0, 0.0, MiB, None, io_reading(c))  # before any event: pending
    rec.add(1.0, 0.5, MiB, 0.5, (8192.0, 0.0, 2.0))  # the first event at 0.5
    rec.add(2.0, 1.0, MiB, 0.5)  # a reading without the counters
    tl = rec.timeline()
    assert tl.t == [0.0, 1.0, 2.0]
    # arrays, NaN where a reading lacked the counter: no list of floats a reading
    kept = {k: [None if v is None or math.isnan(v) else v for v in col] for k, col in tl.io.items()}
    assert kept == {"read": [4096.0, 8192.0, None], "write": [None, 0.0, None],
                    "stall": [1.5, 2.0, None]}  # fmt: skip
    assert tl.rise("read", 0.0, 1.0) == 4096.0 and tl.rise("stall", 0.0, 1.0) == 0.5


def test_a_phase_tail_shares_each_slices_io_by_the_time_it_held() -> None:
    tl = _timeline()
    tail = PhaseTail()
    tail.begin(0.2)
    tail.cover(0.2, 0.2 + 3 * SLICE_S)
    tail.cover(0.5, 0.5 + SLICE_S / 2)
    rises: dict[str, float | None] = dict.fromkeys(IO_KEYS, 0.0)
    tail.add_rises(rises, tl)
    held = 3.5 * SLICE_S
    assert rises["read"] == pytest.approx(32 * MiB * held)  # 32 MiB a second
    assert rises["write"] == 0.0
    assert rises["stall"] == pytest.approx(held)
    nothing: dict[str, float | None] = dict.fromkeys(IO_KEYS, 0.0)
    PhaseTail().add_rises(nothing, Timeline())
    assert nothing["read"] == 0.0  # nothing held, nothing rose


def _phase(name: str, read: int | None, written: int | None, stall: float | None) -> PhaseStats:
    return PhaseStats(name=name, count=1, start_s=0.0, wall_s=2.0, cpu_s=0.1, cpu_pct=5.0,
                      peak_bytes=MiB, peak_source="kernel", avg_bytes=MiB, io_read_bytes=read,
                      io_write_bytes=written, io_stall_s=stall)  # fmt: skip


def test_the_storage_table_shows_what_each_phase_moved_and_waited() -> None:
    r = make_result(phases=(_phase("load", 67_108_864, 0, 1.9), _phase("infer", 0, 0, 0.0)))
    assert storage_rows([r]) == [
        [r.label, "load", "67.1MB", "0B", "1.90s (95.0%)"],
        [r.label, "infer", "0B", "0B", "0.0ms (0.0%)"],
    ]
    text = render_plain([r])
    assert "Storage by phase" in text and "I/O WAIT" in text
    assert "## Storage by phase" in render_markdown([r])
    # kept in result.json, and read back; a file from before has none
    d = r.to_dict()
    assert d["phases"][0]["io_read_bytes"] == 67_108_864
    assert type(r).from_dict(json.loads(json.dumps(d))).phases == r.phases
    for p in d["phases"]:
        for key in ("io_read_bytes", "io_write_bytes", "io_stall_s"):
            del p[key]
    assert type(r).from_dict(d).phases[0].io_read_bytes is None


def test_no_storage_table_where_no_phase_moved_block_io() -> None:
    quiet = make_result(phases=(_phase("infer", 0, 0, 0.0), _phase("post", None, None, None)))
    assert storage_rows([quiet]) == []
    assert "Storage by phase" not in render_plain([quiet])


def test_a_whole_io_column_in_order_is_its_own_series() -> None:
    """No (time, value) copy of a column every reading has, on readings in order; one with
    a gap, or readings out of order, is sorted and filtered as the CPU counter's."""
    import array

    t = [0.0, 1.0, 2.0]
    whole = array.array("d", [0.0, 10.0, 30.0])
    tl = Timeline(t=t, cpu=[0.0] * 3, mem=[0] * 3, io={"read": whole, "write": [0.0, None, 4.0],
                                                         "stall": [0.0, 0.5, 1.0]})  # fmt: skip
    assert tl.rise("read", 0.5, 1.5) == 15.0  # 5.0 at 0.5, 20.0 at 1.5
    assert tl._series("read")[1] is whole
    assert tl.rise("write", 0.0, 1.0) == 2.0  # the gap interpolated across
    shuffled = Timeline(t=[1.0, 0.0, 2.0], cpu=[0.0] * 3, mem=[0] * 3,
                        io={"read": [10.0, 0.0, 30.0]})  # fmt: skip
    assert shuffled.rise("read", 0.5, 1.5) == 15.0
