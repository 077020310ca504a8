"""Bad input found by an audit of the CLI, each refused in one line (exit 2) before anything
is made or run: non-finite numbers in result files, absurd run counts, output files that
cannot be written (``--summary /proc/version``), empty ``--out``/``--interval``/``--timeout``.

Every workload here leaves a ``ran`` marker, so that "nothing ran" is seen, not assumed."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path

import pytest

from edgeprof.cli import main
from edgeprof.errors import ConfigError
from edgeprof.storage import read_json
from edgeprof.sweeps.request import RunRequest, plan_run
from edgeprof.sweeps.run_options import MAX_RUNS
from tests.conftest import require_module

from .conftest import make_result

WORKLOAD = ["--", "sh", "-c", "touch ran"]


def _sweep(path: Path, wall: str | None = None) -> Path:
    """A ``sweep.json`` of three runs; ``wall``: the first run's ``wall_s`` as JSON text."""
    runs = [make_result(wall_s=1.5 + 0.01 * i).to_dict() for i in range(3)]
    text = json.dumps({"schema": "edgeprof-sweep/1", "runs": runs})
    if wall is not None:
        text = text.replace('"wall_s": 1.5,', f'"wall_s": {wall},', 1)
    path.mkdir()
    (path / "sweep.json").write_text(text)
    return path


def _only(capsys: pytest.CaptureFixture[str]) -> str:
    """stderr, which must be one line."""
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err


# -- A: NaN and infinities in result files --------------------------------------------------


@pytest.mark.parametrize(
    ("wall", "name"),
    [("NaN", "NaN"), ("Infinity", "Infinity"), ("-Infinity", "-Infinity"), ("1e999", "1e999")],
)
@pytest.mark.parametrize("command", ["report", "compare", "report --out"])
def test_a_result_file_with_a_non_finite_number_is_refused_by_name(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    wall: str,
    name: str,
    command: str,
) -> None:
    """Measured before: exit 1, ``AttributeError: 'float' object has no attribute
    'numerator'`` (``statistics.stdev``) or ``ValueError: math domain error``, and
    ``report --out R`` left an empty ``R``."""
    monkeypatch.chdir(tmp_path)
    _sweep(Path("base"))
    _sweep(Path("bad"), wall)
    args = {
        "report": ["report", "bad"],
        "compare": ["compare", "base", "bad"],
        "report --out": ["report", "bad", "--out", "R"],
    }[command]
    assert main(args) == 2
    line = f"edgeprof: error: cannot read result bad/sweep.json: {name} is not a finite number\n"
    assert _only(capsys) == line
    assert sorted(os.listdir()) == ["bad", "base"]
    # Broken on purpose: not a result for the suite's schema check (-Infinity is below the
    # schema's minimum of 0 for wall_s).
    shutil.rmtree("bad")


@pytest.mark.parametrize("command", ["report", "compare"])
def test_a_result_file_with_an_absurd_time_is_refused_by_name(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
) -> None:
    """``"wall_s": 1e308`` is finite, but no run's: compare had printed it as a 309-digit
    number of seconds, and the results table's milliseconds as ``inf``."""
    monkeypatch.chdir(tmp_path)
    _sweep(Path("base"))
    _sweep(Path("bad"), "1e308")
    assert main(["report", "bad"] if command == "report" else ["compare", "base", "bad"]) == 2
    assert _only(capsys) == (
        "edgeprof: error: bad/sweep.json is not an edgeprof result (run 1 of 3): wall_s: "
        "expected seconds up to 6.5536e+13, got 1e+308\n"
    )
    # The bound itself is a time a result may hold (a CPU time on every CPU for 31 years).
    _sweep(Path("edge"), "65536000000000.0")
    assert main(["compare", "base", "edge"]) == 0
    capsys.readouterr()
    shutil.rmtree("bad")


def test_an_absurd_percentage_or_a_huge_integer_is_refused_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A security tester's ``cpu.avg_pct: 1e308`` had printed a 310-digit ``AVG CPU %``
    column, and an integer of 100 000 digits an error telling the user to call
    ``sys.set_int_max_str_digits()``."""
    monkeypatch.chdir(tmp_path)
    text = (_sweep(Path("base")) / "sweep.json").read_text()
    Path("pct").mkdir()
    pct = text.replace('"avg_pct": ', '"avg_pct": 1e308, "x": ', 1)
    (Path("pct") / "sweep.json").write_text(pct)
    assert main(["report", "pct"]) == 2
    line = _only(capsys)
    said = "edgeprof: error: pct/sweep.json is not an edgeprof result (run 1 of 3): "
    assert line.startswith(said)
    assert line.endswith(".avg_pct: expected a percentage up to 6.5536e+06, got 1e+308\n")
    Path("int").mkdir()
    huge = text.replace('"wall_s": ', f'"x": {"9" * 100_000}, "wall_s": ', 1)
    (Path("int") / "sweep.json").write_text(huge)
    assert main(["report", "int"]) == 2
    assert _only(capsys) == (
        "edgeprof: error: cannot read result int/sweep.json: an integer of 100000 digits is "
        "beyond any figure edgeprof reads (2**64)\n"
    )
    for bad in ("pct", "int"):  # broken on purpose: not for the suite's schema check
        shutil.rmtree(bad)


def test_read_json_takes_finite_numbers_only(tmp_path: Path) -> None:
    f = tmp_path / "r.json"
    f.write_text('{"a": [1.5, -2e300, 0]}')
    assert read_json(f) == {"a": [1.5, -2e300, 0]}
    f.write_text('{"a": [1.5, NaN]}')
    with pytest.raises(ConfigError, match=r"r\.json: NaN is not a finite number$"):
        read_json(f)


# -- B: absurd run counts --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "line"),
    [
        (["--repeat", "99999999999"], "--repeat 99999999999: must be at most 100000"),
        (["--warmup", "99999999999"], "--warmup 99999999999: must be at most 100000"),
        (
            ["--repeat", "auto", "--max-runs", "99999999999"],
            "--max-runs 99999999999: must be at most 100000",
        ),
    ],
)
def test_absurd_counts_are_refused_before_anything_is_made(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    options: list[str],
    line: str,
) -> None:
    """Measured before: ``--repeat 99999999999``: a MemoryError traceback making the sweep's
    rounds, and an empty ``badout`` left."""
    monkeypatch.chdir(tmp_path)
    args = ["run", "--backend", "fake", *options, "--out", "badout", *WORKLOAD]
    assert main(args) == 2
    assert _only(capsys) == f"edgeprof: error: {line}\n"
    assert os.listdir() == []


def test_fits_absurd_repeat_is_refused_before_anything_is_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """fit's own ``--repeat``: a MemoryError traceback before, and ``badout/reference``
    left."""
    monkeypatch.chdir(tmp_path)
    args = ["fit", "--backend", "fake", "--repeat", "99999999999", "--out", "badout", *WORKLOAD]
    assert main(args) == 2
    assert _only(capsys) == "edgeprof: error: --repeat 99999999999: must be at most 100000\n"
    assert os.listdir() == []


def test_a_recipe_with_absurd_shards_is_refused_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Measured before: over 60 s and 3.9 GB.  A part is a set of rounds, so the bound on
    ``--repeat`` bounds the parts."""
    monkeypatch.chdir(tmp_path)
    run = ["--cpus", "1", "--memory", "1g", "--repeat", "99999999999"]
    args = ["recipe", "slurm", "--shards", "99999999999", "--out", "r", "--", *run, *WORKLOAD]
    assert main(args) == 2
    assert _only(capsys) == "edgeprof: error: --repeat 99999999999: must be at most 100000\n"
    assert os.listdir() == []


def test_the_bound_itself_is_a_plan() -> None:
    job = plan_run(RunRequest(command=("true",), repeat=MAX_RUNS, warmup=MAX_RUNS))
    assert job.plan.repeat == job.plan.warmup == MAX_RUNS
    with pytest.raises(ConfigError, match=f"--repeat {MAX_RUNS + 1}: must be at most"):
        plan_run(RunRequest(command=("true",), repeat=MAX_RUNS + 1))


# -- D: end-of-run files checked before the run ----------------------------------------------


@pytest.mark.parametrize("option", ["--summary", "--markdown", "--junit", "--html"])
def test_an_end_of_run_file_that_cannot_be_made_is_refused_before_the_run(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    option: str,
) -> None:
    """``/proc`` takes no new file, yet root passes ``os.access`` there.  Measured before (as
    root): the workload ran, ``badout`` was written, then exit 2 with ``cannot write
    /proc/version: No such file or directory``."""
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--backend", "fake", option, "/proc/version", "--out", "badout",
                 *WORKLOAD]) == 2  # fmt: skip
    # Root is told the tree is the kernel's (outfiles.KERNEL_TREES), before any probe.
    root = "/proc holds the kernel's files, not outputs"
    why = root if os.geteuid() == 0 else "/proc is not a writable directory"
    assert _only(capsys) == f"edgeprof: error: cannot write /proc/version: {why}\n"
    assert os.listdir() == []


def test_plots_where_nothing_can_be_made_are_refused_before_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    require_module("matplotlib", "plot")  # fails in CI, where every tier runs
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--backend", "fake", "--plots", "/proc/p", *WORKLOAD]) == 2
    # The tree is the kernel's (outfiles.KERNEL_TREES), for root as for anyone: root, who
    # passes os.access there, had been told "No such file or directory" by the probe.
    why = "/proc holds the kernel's files, not outputs"
    assert _only(capsys) == f"edgeprof: error: cannot write /proc/p: {why}\n"
    assert os.listdir() == []


@pytest.mark.parametrize("out", ["badout", "a/badout"])
def test_a_file_in_the_out_directory_the_run_makes_is_accepted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, out: str
) -> None:
    """Measured before: ``--markdown badout/t.md --out badout`` was refused as "badout is not
    a writable directory" while ``badout`` was not made yet."""
    monkeypatch.chdir(tmp_path)
    md = str(Path(out).parent / "t.md") if "/" in out else f"{out}/t.md"
    assert main(["run", "--backend", "fake", "--markdown", md, "--out", out, *WORKLOAD]) == 0
    assert Path(md).read_text().startswith("## edgeprof report\n\n### Final Usage Stats\n\n|")
    assert (Path(out) / "result.json").is_file()


def test_a_file_in_a_directory_nothing_makes_says_it_does_not_exist(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    args = ["run", "--backend", "fake", "--markdown", "o/x/t.md", "--out", "o", *WORKLOAD]
    assert main(args) == 2
    assert _only(capsys) == "edgeprof: error: cannot write o/x/t.md: o/x does not exist\n"
    assert os.listdir() == []


# -- E: empty values ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "line"),
    [
        ("--out", "Invalid value for '--out': an empty name is no directory (--out . is this one)"),
        (
            "--interval",
            "--interval: invalid sampling interval '': expected seconds, e.g. 0.1, 250ms, 2m",
        ),
        ("--timeout", "--timeout: invalid timeout '': expected seconds, e.g. 0.1, 250ms, 2m"),
    ],
)
def test_an_empty_value_is_refused(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    option: str,
    line: str,
) -> None:
    """Measured before: ``--out ""`` wrote result.json and samples.csv into the current
    directory, exit 0; ``--interval ""`` ran at the default interval."""
    monkeypatch.chdir(tmp_path)
    for args in ([option, ""], [f"{option}="]):
        assert main(["run", "--backend", "fake", *args, *WORKLOAD]) == 2
        assert _only(capsys) == f"edgeprof: error: {line}\n"
        assert os.listdir() == []


@pytest.mark.parametrize(
    ("args", "line"),
    [
        # Each had said "invalid size '0': must be at least 1 byte", naming neither the option
        # nor, for a memory limit, its real minimum.
        (["run", "--memory", "0"], "--memory: memory limit '0' is below the minimum of 6m"),
        (["run", "--memory", "1k"], "--memory: memory limit '1k' is below the minimum of 6m"),
        (["run", "--memory", "1g,0"], "--memory: memory limit '0' is below the minimum of 6m"),
        (["fit", "--memory", "0"], "--memory: memory limit '0' is below the minimum of 6m"),
        # A bare number is bytes: said, with the limit it was surely meant to be (a tester's
        # `--memory 512` had read "below the minimum of 6m" alone).
        (
            ["run", "--memory", "512"],
            "--memory: memory limit '512' is below the minimum of 6m (a number without a unit "
            "is bytes); did you mean 512m?",
        ),
        (
            ["run", "--memory", "1g,64"],
            "--memory: memory limit '64' is below the minimum of 6m (a number without a unit "
            "is bytes); did you mean 64m?",
        ),
        (["run", "--memory", "5"], "--memory: memory limit '5' is below the minimum of 6m"),
        # The GPU's memory is named as such (it had been told of a "memory limit", the
        # host's, in run, bench and a catalog's gpu_memory alike).
        (["run", "--gpu-memory", "5m"], "--gpu-memory: GPU memory '5m' is below the minimum of 6m"),
        # The option named, as bench's is (a newcomer's long command line had read "invalid
        # process limit '0'" alone).
        (
            ["run", "--pids", "0"],
            "--pids: invalid process limit '0': must be between 1 and 4194304",
        ),
        (["fit", "--pids", "abc"], "--pids: invalid process limit 'abc': expected a whole number"),
        (
            ["run", "--gpu-memory", "512"],
            "--gpu-memory: GPU memory '512' is below the minimum of 6m (a number without a unit "
            "is bytes); did you mean 512m?",
        ),
        (["fit", "--resolution", "0"], "--resolution: invalid size '0': must be at least 1 byte"),
        (
            ["fit", "--max-memory-need", "0"],
            "--max-memory-need: invalid size '0': must be at least 1 byte",
        ),
        (["run", "--timeout", "0"], "--timeout: timeout '0' is below the minimum of 1ms"),
        (["fit", "--timeout", "0"], "--timeout: timeout '0' is below the minimum of 1ms"),
        # Accepted, it had never fired: `--timeout 1e-9 -- true` ended "exited".
        (["run", "--timeout", "1e-9"], "--timeout: timeout '1e-9' is below the minimum of 1ms"),
        (
            ["run", "--kill-grace", "0"],
            "--kill-grace: invalid kill grace '0': must be greater than 0",
        ),
        (
            ["fit", "--kill-grace", "2x"],
            "--kill-grace: invalid kill grace '2x': expected seconds, e.g. 0.1, 250ms, 2m",
        ),
        (
            ["run", "--interval", "0"],
            "--interval: sampling interval '0' is below the minimum of 1ms",
        ),
        (
            ["run", "--interval", "0.0001"],
            "--interval: sampling interval '0.0001' is below the minimum of 1ms",
        ),
        (
            ["run", "--name", "a" * 256],
            f"--name '{'a' * 56}...': too long (256 bytes; at most 255 between slashes, 4096 "
            "in all)",
        ),
        # A memory budget without its unit had been so many bytes, failed by every run.
        (
            ["run", "--max-peak-memory", "12"],
            "--max-peak-memory: '12' has no unit (it would be 12 bytes): write a size such as "
            "12m, or 12b for bytes",
        ),
        # fit's sizes too: `fit --resolution 4` had searched to 4 bytes ("resolution 4.0KiB:
        # 16 probes"), and a bare --max-memory-need was a budget of so many bytes.
        (
            ["fit", "--resolution", "4"],
            "--resolution: '4' has no unit (it would be 4 bytes): write a size such as 4m, or "
            "4b for bytes",
        ),
        (
            ["fit", "--max-memory-need", "300"],
            "--max-memory-need: '300' has no unit (it would be 300 bytes): write a size such "
            "as 300m, or 300b for bytes",
        ),
    ],
)
def test_a_bad_size_or_time_names_its_option(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    line: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main([args[0], "--backend", "fake", *args[1:], *WORKLOAD]) == 2
    assert _only(capsys) == f"edgeprof: error: {line}\n"
    assert os.listdir() == []


def test_bench_names_the_option_of_a_bad_size_or_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    for option, line in (
        ("--memory", "--memory: memory limit '0' is below the minimum of 6m"),
        ("--timeout", "--timeout: timeout '0' is below the minimum of 1ms"),
        ("--kill-grace", "--kill-grace: invalid kill grace '0': must be greater than 0"),
        ("--interval", "--interval: sampling interval '0' is below the minimum of 1ms"),
    ):
        assert main(["bench", option, "0", "nowhere:infer"]) == 2
        assert _only(capsys) == f"edgeprof: error: {line}\n"


@pytest.mark.parametrize("value", ["12", "1.5", "'12'"])
def test_a_memory_budget_without_its_unit_is_refused(tmp_path: Path, value: str) -> None:
    """``peak_memory: 12`` had been a 12-byte budget ("FAIL … exceeds the budget 12B");
    ``12b`` still is one, written on purpose."""
    from edgeprof.analysis.budgets import load_budget_file

    f = tmp_path / "b.yml"
    f.write_text(f"default:\n  wall: 1s\n  peak_memory: {value}\n")
    with pytest.raises(ConfigError) as info:
        load_budget_file(f)
    number = value.strip("'")
    bytes_too = "" if "." in number else f", or {number}b for bytes"
    assert str(info.value) == (
        f"{f}:3: peak_memory: {value} has no unit (it would be {number} bytes): write a size "
        f"such as {number}m{bytes_too}"
    )
    f.write_text("default:\n  peak_memory: 12b\n")
    assert load_budget_file(f).default == {"peak_memory": 12.0}


def test_a_bare_number_budgets_message_suggests_only_sizes() -> None:
    """A reviewer's: "0" had been told to write "0m, or 0b" (both refused), "." to write
    ".m", " 12 " to write " 12 m"."""
    from edgeprof.analysis.budgets import METRICS, parse_budget

    cases = {
        "0": "'0' has no unit (it would be 0 bytes)",
        " 12 ": "' 12 ' has no unit (it would be 12 bytes): write a size such as 12m, or 12b",
    }
    for value, said in cases.items():
        with pytest.raises(ConfigError) as info:
            parse_budget(METRICS["peak_memory"], value, "where")
        assert str(info.value).startswith(f"where: {said}")
    assert str(info.value).endswith("12b for bytes")
    with pytest.raises(ConfigError) as info:
        parse_budget(METRICS["peak_memory"], ".", "where")
    assert "has no unit" not in str(info.value)  # not a number: refused as any bad size
    with pytest.raises(ConfigError) as info:
        parse_budget(METRICS["peak_memory"], "0", "where")
    assert str(info.value) == "where: '0' has no unit (it would be 0 bytes)"


@pytest.mark.parametrize("field", ["interval", "timeout"])
def test_the_plan_refuses_an_empty_time_before_a_template_fills_it(
    tmp_path: Path, field: str
) -> None:
    """An env.template's SAMPLETIME stood in for ``--interval ""``: refused first."""
    template = tmp_path / "env.template"
    template.write_text("SCRIPT=infer.py\nSAMPLETIME=0.5\n")
    for request in (RunRequest(command=("true",)), RunRequest(environment=template)):
        empty = (
            dataclasses.replace(request, interval="")
            if field == "interval"
            else (dataclasses.replace(request, timeout=""))
        )
        with pytest.raises(ConfigError, match="''"):
            plan_run(empty)


def test_a_full_disk_under_a_sweep_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """sweep.json on a full disk (a 28 KiB tmpfs): an OSError traceback from the sweep's
    loop before; now one line, exit 2, and each run's result.json where it was written."""
    import errno

    from edgeprof.sweeps import sweep as sweep_module

    def full(path: Path, pieces: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(sweep_module, "write_text_atomic", full)
    monkeypatch.chdir(tmp_path)  # the workload's marker
    out = tmp_path / "o"
    assert main(["run", "--backend", "fake", "-m", "a,b", "--out", str(out), *WORKLOAD]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == (
        f"edgeprof: error: cannot write {out / 'sweep.json'}: No space left on device; the "
        "sweep stopped there, with 1 run(s) saved, each result.json in its own directory; "
        "free space, then run it again with --resume to keep them"
    )
    assert [ln for ln in err if "error" in ln or "Traceback" in ln] == err[-1:]
    assert (out / "a" / "1" / "result.json").is_file()


def test_report_out_on_a_full_disk_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``report SWEEP --out R`` on a full disk (an 8 KiB tmpfs): an OSError traceback
    before; now one line naming the file, exit 2."""
    import errno

    from edgeprof import outfiles

    monkeypatch.chdir(tmp_path)  # the workload's marker
    sweep = tmp_path / "s"
    assert main(["run", "--backend", "fake", "-m", "a,b", "--out", str(sweep), *WORKLOAD]) == 0
    capsys.readouterr()

    def full(path: Path, data: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(outfiles, "write_atomic", full)
    out = tmp_path / "r"
    assert main(["report", str(sweep), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err == f"edgeprof: error: cannot write {out / 'sweep.json'}: No space left on device\n"


def test_a_second_run_into_an_out_directory_being_written_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two runs given one --out at once had both exited 0, one's result.json beside a
    samples.csv of the other's rows, a blank line, then its own.  While a run (or a sweep)
    holds the directory, another is one line, exit 2, and writes nothing there."""
    from edgeprof.dirlock import DirLock

    monkeypatch.chdir(tmp_path)
    out = tmp_path / "same"
    out.mkdir()
    for args in (["run"], ["run", "-m", "a,b"]):
        with DirLock(out):  # what the first edgeprof holds while it writes
            assert main([*args, "--backend", "fake", "--out", str(out), *WORKLOAD]) == 2
        line = f"edgeprof: error: {out} is being written by another edgeprof run: give each "
        assert capsys.readouterr().err == line + "run its own --out\n"
        assert os.listdir(out) == [] and not Path("ran").exists()
    assert main(["run", "--backend", "fake", "--out", str(out), *WORKLOAD]) == 0  # released
    assert sorted(os.listdir(out)) == ["result.json", "samples.csv"]


def test_a_gpu_memory_limit_in_bare_bytes_stays_its_budget() -> None:
    """``--gpu-memory`` is a limit (bare bytes allowed, as ``--memory``) and, without
    ``--max-gpu-memory``, the GPU memory budget: its bytes are not a unit left out."""
    from edgeprof.analysis.budgets import budgets_from_options
    from edgeprof.cli.runargs import budget_values

    for given, budget in (("8000000000", 8_000_000_000.0), ("256m", 256.0 * 2**20)):
        values = budget_values({"gpu_memory": given})
        assert budgets_from_options(None, values).overrides == {"gpu_memory": budget}


def test_a_timeout_at_its_floor_is_taken() -> None:
    """The floor is --interval's: 1 ms is a timeout, under it is refused (above)."""
    from edgeprof.measure.inputs import DEFAULT_INTERVAL_S, MIN_TIMEOUT_S, parse_times

    assert parse_times(None, "1ms") == (DEFAULT_INTERVAL_S, MIN_TIMEOUT_S)


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["compare", "sw"],
            "missing argument CURRENT: edgeprof compare [OPTIONS] BASELINE CURRENT",
        ),
        (["report"], "missing argument PATHS...: edgeprof report [OPTIONS] PATHS..."),
    ],
)
def test_a_missing_argument_is_named_as_the_help_names_it_with_the_usage(
    capsys: pytest.CaptureFixture[str], args: list[str], line: str
) -> None:
    """click's ``Missing argument 'current'.`` had named it in lower case, without the usage
    ``run`` gives for a missing command (a newcomer's)."""
    assert main(args) == 2
    assert capsys.readouterr().err == f"edgeprof: error: {line}\n"
