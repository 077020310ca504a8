"""report/: the seed-compatible tables, result files, and the result JSON contract."""

from __future__ import annotations

import dataclasses
import io
import json
import os
import re
from pathlib import Path

import pytest

from edgeprof.analysis.cells import endings
from edgeprof.errors import ConfigError
from edgeprof.model import (
    SCHEMA_VERSION,
    CoreLease,
    CpuStats,
    IoStats,
    Limits,
    MemoryStats,
    RunResult,
    Termination,
)
from edgeprof.report.results import COLUMNS, print_table, render_markdown, render_plain
from edgeprof.resultfiles import load_runs
from edgeprof.storage import prepare_out_dir, write_json_atomic, write_result

from .conftest import SEED_COLUMNS, make_result


def cells(line: str) -> list[str]:
    return re.split(r"\s{2,}", line.strip())


def plain_rows(text: str) -> tuple[list[str], list[dict[str, str]]]:
    lines = text.splitlines()
    assert lines[0] == "Final Usage Stats"
    header = cells(lines[1])
    assert set(lines[2].replace(" ", "")) == {"-"}
    rows = []
    for line in lines[3:]:
        if not line or line.startswith(" ") or ":" in line.split("  ")[0]:
            break
        rows.append(dict(zip(header, cells(line), strict=True)))
    return header, rows


def test_plain_table_has_the_seed_columns_first() -> None:
    header, _ = plain_rows(render_plain([make_result()]))
    assert header[: len(SEED_COLUMNS)] == SEED_COLUMNS
    assert header == list(COLUMNS)


def test_rows_of_several_settings_name_theirs() -> None:
    """A sweep over ``--cpus 0.5,1``: two ``python3`` rows, told apart by footnotes only."""
    from edgeprof.model import Limits

    runs = [make_result(limits=Limits(cpus=c, memory="512m")) for c in (0.5, 1)]
    _, rows = plain_rows(render_plain(runs))
    assert [r["NAME"] for r in rows] == [
        "python3 (cpus=0.5, memory=512.0MiB)",
        "python3 (cpus=1, memory=512.0MiB)",
    ]
    assert "| python3 (cpus=1, memory=512.0MiB) |" in render_markdown(runs)
    _, one = plain_rows(render_plain(runs[:1] * 2))  # one setting: the label alone
    assert [r["NAME"] for r in one] == ["python3", "python3"]


def test_plain_table_values() -> None:
    _, rows = plain_rows(render_plain([make_result(name="resnet")]))
    assert rows == [
        {
            "NAME": "resnet",
            "AVG CPU %": "80.0%",
            "PEAK CPU": "120.0%",
            "AVG MEM USAGE / LIMIT": "100.0MiB / 512.0MiB",
            "PEAK MEM": "120.0MiB",
            "NET I/O": "n/a",
            "BLOCK I/O": "742B / 12.0MB",
            "TOTAL TIME (ms)": "1500",
            "CPU TIME": "1.20s",
            "THROTTLED": "12.3ms ×7",
            "END": "exited",
        }
    ]


def test_throttled_periods_of_no_whole_microsecond_are_not_shown_as_nothing() -> None:
    """A tester's result had ``throttled_s`` 0.0 with ``nr_throttled`` 7: "0.0ms ×7"."""
    base = make_result(name="m")

    def shown(seconds: float, periods: int) -> str:
        cpu = dataclasses.replace(base.cpu, throttled_s=seconds, nr_throttled=periods)
        _, rows = plain_rows(render_plain([dataclasses.replace(base, cpu=cpu)]))
        return rows[0]["THROTTLED"]

    assert shown(0.0, 7) == "<1µs ×7"
    assert shown(0.0, 0) == "0.0ms ×0"
    assert shown(0.000004, 7) == "4.0µs ×7"
    assert shown(0.0028, 19) == "2.8ms ×19"


def v1_written(write: int, dirtied: int | None, **kw: object) -> RunResult:
    """A cgroup v1 run whose written figure is ``write`` B and whose samples saw ``dirtied``
    B of page cache dirtied."""
    io = IoStats(
        read_bytes=0,
        write_bytes=write,
        net_rx_bytes=None,
        net_tx_bytes=None,
        write_incomplete=bool(dirtied),
        dirtied_bytes=dirtied,
    )
    return make_result(mechanism="cgroup1", io=io, warnings=(), **kw)


WRITTEN_NOTE = (
    "  block I/O: written (≥) counts only the writes cgroup v1 charged to the run's group "
    "(direct I/O, its own fsync), not the kernel's later writeback of the page cache it "
    "dirtied: {} dirtied, a lower bound of its buffered writes\n"
)


def test_a_v1_written_figure_that_lacks_the_writeback_is_a_lower_bound() -> None:
    """A buffered dd of 64 MiB read a plain 0B written on cgroup v1 (measure/dirtied.py)."""
    text = render_plain([v1_written(0, 67_108_864)])
    assert plain_rows(text)[1][0]["BLOCK I/O"] == "0B / ≥0B"
    assert WRITTEN_NOTE.format("67.1MB") in text
    assert text.count("block I/O:") == 1
    assert "0B / ≥0B" in render_markdown([v1_written(0, 67_108_864)])


def test_a_written_figure_without_dirty_pages_is_unchanged() -> None:
    """Direct I/O, a v1 run that wrote nothing, a v2 run: no mark, no note."""
    for r in (v1_written(67_108_864, 0), v1_written(0, None), make_result()):
        text = render_plain([r])
        assert "≥" not in text and "block I/O" not in text
    assert plain_rows(render_plain([v1_written(67_108_864, 0)]))[1][0]["BLOCK I/O"] == (
        "0B / 67.1MB"
    )


def test_a_cells_runs_that_dirtied_pages_are_named_once() -> None:
    some = [v1_written(0, 4_300_000), v1_written(8_500_000, 0), v1_written(0, 67_108_864)]
    text = render_plain(some)
    assert [r["BLOCK I/O"] for r in plain_rows(text)[1]] == ["0B / ≥0B", "0B / 8.5MB", "0B / ≥0B"]
    assert WRITTEN_NOTE.format("4.3MB in run 1, 67.1MB in run 3") in text
    every = render_plain([v1_written(0, 4_300_000), v1_written(0, 67_108_864)])
    assert WRITTEN_NOTE.format("4.3MB to 67.1MB a run") in every
    alike = render_plain([v1_written(0, 4_300_000), v1_written(0, 4_300_000)])
    assert WRITTEN_NOTE.format("4.3MB a run") in alike


def test_plain_table_columns_are_aligned() -> None:
    text = render_plain([make_result(name="a"), make_result(name="much-longer-name")])
    lines = text.splitlines()
    starts = [m.start() for m in re.finditer(r"AVG CPU %", lines[1])]
    assert starts
    col = starts[0]
    for line in lines[3:5]:
        assert line[col - 2 : col] == "  " and line[col] != " "


def test_null_values_print_as_na() -> None:
    r = make_result(
        cpu=CpuStats(None, None, None, None, None, None, None, None, None),
        memory=MemoryStats(None, None, None, None, None, None, None),
        io=IoStats(None, None, None, None),
    )
    _, rows = plain_rows(render_plain([r]))
    row = rows[0]
    assert row["AVG CPU %"] == row["PEAK CPU"] == "n/a"
    assert row["AVG MEM USAGE / LIMIT"] == "n/a / no limit"
    assert row["PEAK MEM"] == "n/a"
    assert row["NET I/O"] == row["BLOCK I/O"] == "n/a"
    assert row["CPU TIME"] == row["THROTTLED"] == "n/a"


def test_sampled_peak_is_labelled() -> None:
    r = make_result(memory=MemoryStats(120 * 2**20, "sampled", 100 * 2**20, None, 0, None, None))
    _, rows = plain_rows(render_plain([r]))
    assert rows[0]["PEAK MEM"] == "120.0MiB (sampled)"
    assert rows[0]["AVG MEM USAGE / LIMIT"] == "100.0MiB / no limit"
    assert "(sampled)" not in render_plain([make_result()])


@pytest.mark.parametrize(
    ("termination", "code", "end"),
    [
        (Termination.EXITED, 0, "exited"),
        (Termination.EXITED, 3, "exited (3)"),
        (Termination.SIGNALED, 137, "signaled (SIGKILL, 137)"),
        (Termination.SIGNALED, 139, "signaled (SIGSEGV, 139)"),
        (Termination.OOM, 137, "oom (137)"),
        (Termination.TIMEOUT, 143, "timeout (143)"),
        (Termination.INTERRUPTED, None, "interrupted"),
    ],
)
def test_end_column(termination: Termination, code: int | None, end: str) -> None:
    sig = code - 128 if termination is Termination.SIGNALED and code is not None else None
    r = make_result(termination=termination, exit_code=code, signal=sig)
    _, rows = plain_rows(render_plain([r]))
    assert rows[0]["END"] == end


def test_a_signal_is_named_in_the_endings_of_a_cell() -> None:
    """A cell's failed runs name the signal too: "signaled" alone had not said a SIGSEGV
    from a SIGABRT; a number this system has no name for is said as a number."""
    seg = make_result(termination=Termination.SIGNALED, exit_code=139, signal=11)
    abrt = make_result(termination=Termination.SIGNALED, exit_code=134, signal=6)
    assert endings([seg, seg, abrt]) == "SIGSEGV ×2, SIGABRT"
    odd = make_result(termination=Termination.SIGNALED, exit_code=227, signal=99)
    assert odd.end == "signaled (signal 99, 227)"


def test_label_defaults_to_program_name() -> None:
    assert make_result(command=("/usr/bin/python3", "x.py")).label == "python3"
    assert make_result(command=("x",), name="model A").label == "model A"


def test_notes_under_the_table() -> None:
    r = make_result(memory=MemoryStats(1, "kernel", 1, 512 * 2**20, 2, 1, 1), warnings=("w1", "w2"))
    text = render_plain([r])
    assert (
        "python3: cgroup/cgroup2, limits: cpus=1.5, cpuset=0-1, memory=512.0MiB, "
        "15 samples every 0.1s, OOM kills: 2"
    ) in text
    assert "  warning: w1\n  warning: w2\n" in text


def test_a_warning_of_every_run_of_several_cells_is_said_once() -> None:
    """The process backend's fallback warning had been repeated under each model of a sweep;
    a warning only some cells have stays under them, and one cell keeps its own."""
    a = make_result(name="a", warnings=("fallback", "a's"))
    b = make_result(name="b", warnings=("fallback",))
    notes = [ln for ln in render_plain([a, b]).splitlines() if "warning" in ln]
    assert notes == ["  warning: a's", "warning (every run): fallback"]
    assert "  warning: fallback\n" in render_plain([a])


def test_markdown_is_a_pipe_table() -> None:
    text = render_markdown([make_result(name="a|b"), make_result(name="c")])
    assert text.startswith("### Final Usage Stats\n\n")  # its heading, as every table's
    lines = text.splitlines()[2:]
    assert lines[0] == "| " + " | ".join(COLUMNS) + " |"
    assert re.fullmatch(rf"\|(---\|){{{len(COLUMNS)}}}", lines[1])
    body = lines[2:4]
    for line in body:
        assert line.startswith("| ") and line.endswith(" |")
        unescaped = re.findall(r"(?<!\\)\|", line)
        assert len(unescaped) == len(COLUMNS) + 1
    assert body[0].startswith("| a\\|b | 80.0% | 120.0% | 100.0MiB / 512.0MiB |")
    assert lines[4] == ""  # the table ends before the notes
    assert "a\\|b: cgroup/cgroup2" in text  # a note's text is escaped as a cell's


def test_print_table_plain_when_not_a_terminal() -> None:
    buf = io.StringIO()
    print_table([make_result()], buf)
    assert buf.getvalue() == render_plain([make_result()])


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_print_table_rich_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "250")  # rich's width for a file it cannot ask
    monkeypatch.delenv("NO_COLOR", raising=False)
    buf = Tty()
    print_table([make_result(name="tty-run")], buf)
    out = buf.getvalue()
    assert "Final Usage Stats" in out
    assert "tty-run" in out
    assert "warning: a warning" in out
    assert out != render_plain([make_result(name="tty-run")])
    assert "…" not in out


@pytest.mark.parametrize(("columns", "no_color"), [("80", None), ("250", "1")])
def test_print_table_plain_where_rich_would_cut_figures_or_colour_is_off(
    monkeypatch: pytest.MonkeyPatch, columns: str, no_color: str | None
) -> None:
    """At 80 columns rich had cut the figures short (``16.…``, ``512…``: a CLI tester's);
    under NO_COLOR it had still sent bold and italic."""
    monkeypatch.setenv("COLUMNS", columns)
    if no_color is None:
        monkeypatch.delenv("NO_COLOR", raising=False)
    else:
        monkeypatch.setenv("NO_COLOR", no_color)
    buf = Tty()
    print_table([make_result(name="tty-run")], buf)
    assert buf.getvalue() == render_plain([make_result(name="tty-run")])


# -- result files ----------------------------------------------------------------------------


def test_write_and_read_result_round_trip(tmp_path: Path) -> None:
    r = make_result(termination=Termination.OOM, exit_code=137, signal=9, warnings=("x", "y"))
    path = tmp_path / "result.json"
    write_result(path, r)
    back = load_runs([path])[0]
    assert back == r
    assert isinstance(back.termination, Termination)
    assert back.command == r.command and isinstance(back.command, tuple)
    assert back.limits.cpuset == (0, 1)
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]  # no temporary left
    v1 = v1_written(0, 67_108_864)
    write_result(path, v1)
    assert load_runs([path])[0].io == v1.io
    d = json.loads(path.read_text())["io"]
    assert (d["write_incomplete"], d["dirtied_bytes"]) == (True, 67_108_864)
    older = v1.to_dict()  # a file from before the figure: nothing said of its written
    del older["io"]["write_incomplete"], older["io"]["dirtied_bytes"]
    assert RunResult.from_dict(older).io == IoStats(0, 0, None, None, False, None)


def test_json_contract_keys() -> None:
    d = make_result().to_dict()
    for key in (
        "schema_version",
        "edgeprof_version",
        "backend",
        "mechanism",
        "command",
        "limits",
        "termination",
        "exit_code",
        "wall_s",
        "cpu",
        "memory",
        "io",
        "samples",
        "warnings",
    ):
        assert key in d, key
    assert d["schema_version"] == SCHEMA_VERSION == 1
    assert d["limits"] == {
        "cpus": 1.5,
        "cpuset": [0, 1],
        "memory_bytes": 512 * 2**20,
        "pids": None,
        "cpu_period_us": None,
        "read_bps": None,
        "write_bps": None,
        "read_iops": None,
        "write_iops": None,
    }
    assert d["command"] == ["python3", "infer.py"]
    assert d["termination"] == "exited"
    assert {
        "user_s",
        "system_s",
        "total_s",
        "avg_pct",
        "peak_pct",
        "throttled_s",
        "nr_throttled",
        "period_s",
    } <= set(d["cpu"])
    assert {"peak_bytes", "peak_source", "avg_bytes", "limit_bytes", "oom_kills"} <= set(
        d["memory"]
    )
    assert {"read_bytes", "write_bytes"} <= set(d["io"])
    assert set(d["samples"]) == {"count", "interval_s", "path"}
    assert d["warnings"] == ["a warning"]
    assert d["io"]["net_rx_bytes"] is None  # unmeasured is null, never 0
    text = json.dumps(d)
    assert json.loads(text) == d  # plain JSON types only


def test_json_key_order_starts_with_the_version() -> None:
    keys = list(make_result().to_dict())
    assert keys[:2] == ["schema_version", "edgeprof_version"]
    # Fields added after the first schema follow the original keys, in their order.
    assert keys[keys.index("warnings") + 1 :] == [
        "phases",
        "latency",
        "marks",
        "lease",
        "device",
        "events",
        "gpu",
        "target",
        "pids_refused",
        "processes_left",
        "env",
        "processes_at_peak",
        "busy_tasks_peak",
        "workdir",
        "rules",
        "thread_vars",
    ]


def test_no_limits_in_json() -> None:
    from edgeprof.model import Limits

    d = make_result(limits=Limits()).to_dict()
    assert d["limits"] == {
        "cpus": None,
        "cpuset": None,
        "memory_bytes": None,
        "pids": None,
        "cpu_period_us": None,
        "read_bps": None,
        "write_bps": None,
        "read_iops": None,
        "write_iops": None,
    }
    assert RunResult.from_dict(d).limits == Limits()
    # A file written before --cpu-period existed reads back with edgeprof's choice of period.
    del d["limits"]["cpu_period_us"], d["cpu"]["period_s"]
    assert RunResult.from_dict(d).limits == Limits()


def test_a_result_file_that_cannot_be_read_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ConfigError, match="cannot read result"):
        load_runs([bad])
    with pytest.raises(ConfigError, match="cannot read result"):
        load_runs([tmp_path / "missing.json"])
    other = tmp_path / "other.json"
    d = make_result().to_dict()
    d["schema_version"] = 99
    other.write_text(json.dumps(d))
    with pytest.raises(ConfigError, match="unsupported result schema_version 99"):
        load_runs([other])
    d = make_result().to_dict()
    del d["cpu"]
    other.write_text(json.dumps(d))
    with pytest.raises(ConfigError, match="not an edgeprof result"):
        load_runs([other])


def test_write_json_atomic_keeps_the_old_file_on_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "r.json"
    write_json_atomic(path, {"a": 1})

    def crash(src: str, dst: str, **dir_fds: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "rename", crash)
    with pytest.raises(OSError, match="No space"):
        write_json_atomic(path, {"a": 2})
    assert json.loads(path.read_text()) == {"a": 1}  # readers never see half a file
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]  # the temporary is removed


def test_prepare_out_dir(tmp_path: Path) -> None:
    out = tmp_path / "a" / "b"
    assert prepare_out_dir(out) == out
    assert out.is_dir() and list(out.iterdir()) == []  # the probe file is gone
    (tmp_path / "f").write_text("")
    with pytest.raises(ConfigError, match="cannot write to output directory"):
        prepare_out_dir(tmp_path / "f" / "out")


def test_a_cells_head_gives_the_setting_as_asked_and_its_leased_cores_apart() -> None:
    """The tutorial's sweep: run 3 of model 2 ran on CPU 1, and the head had said
    ``cpus=1, cpuset=0`` (its first run's core) of all three."""

    def run(core: int) -> RunResult:
        return make_result(
            name="2",
            limits=Limits(cpus=1, cpuset=str(core), memory="256m"),
            lease=CoreLease((core,), 0.0, chosen=True),
        )

    text = render_plain([run(0), run(0), run(1)])
    assert (
        "2: cgroup/cgroup2, limits: cpus=1, memory=256.0MiB (each run leased one core: 0 or "
        "1), 3 runs, samples every 0.1s"
    ) in text
    assert "cpuset=" not in text
    assert "limits: cpus=1, memory=256.0MiB (leased core 1), 15 samples" in render_plain([run(1)])
    pair = make_result(limits=Limits(cpus=2, cpuset="2-3"), lease=CoreLease((2, 3), 0.0, True))
    assert "limits: cpus=2 (leased cores 2-3), 15 samples" in render_plain([pair])
    # An explicit --cpuset is the setting, and said as one.
    asked = make_result(limits=Limits(cpus=1, cpuset="1"), lease=CoreLease((1,), 0.0, False))
    assert "limits: cpus=1, cpuset=1, 15 samples" in render_plain([asked])


def test_a_timelines_title_gives_the_setting_as_asked_and_its_leased_core_apart() -> None:
    """The plot's title had read ``cpus=1, cpuset=0``: the leased core as the setting."""
    from edgeprof.report.plots import run_title

    on_0 = Limits(cpus=1, cpuset="0")
    leased = make_result(name="m", limits=on_0, lease=CoreLease((0,), 0.0, True))
    assert run_title(leased) == "m — cpus=1 (leased core 0)"
    asked = make_result(name="m", limits=on_0, lease=CoreLease((0,), 0.0, False))
    assert run_title(asked) == "m — cpus=1, cpuset=0"


def test_a_failed_runs_chart_says_how_it_ended() -> None:
    """The OOM timeline PNG was titled ``oom1 — cpus=0.5, memory=96.0MiB``; the metric PNGs
    left fail1 out unsaid; the HTML legend named the line ``oom1`` alone."""
    from edgeprof.model import Termination
    from edgeprof.report.charts import _ended
    from edgeprof.report.plots import left_out, run_title

    oom = make_result(
        name="oom1", limits=Limits(memory="96m"), termination=Termination.OOM, exit_code=137
    )
    exited = make_result(name="fail1", limits=Limits(), exit_code=4)
    ok = make_result(name="small", limits=Limits())
    assert run_title(oom) == "oom1 — memory=96.0MiB — oom (137)"
    assert run_title(ok) == "small — none"
    assert _ended(exited) == " — exited (4)" and _ended(ok) == ""
    assert left_out([ok, exited, exited, oom]) == (
        "left out, no run succeeded: fail1 [none] (exit 4 ×2); oom1 [memory=96.0MiB] (oom)"
    )
    assert left_out([ok, make_result(name="small", limits=Limits(), exit_code=1)]) is None
