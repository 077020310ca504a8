"""The Auptimizer-compatible files: golden layouts, the run -e path, concurrent appends."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from edgeprof.cli import main
from edgeprof.model import CoreLease, Limits, MemoryStats, RunResult, SampleStats, Termination
from edgeprof.report.auptimizer import (
    HEADERS,
    AuptimizerFiles,
    run_log,
    sample_rows,
    summary_block,
    table,
)
from edgeprof.sweeps.envtemplate import KEPT_AS_TEXT
from tests.unit.conftest import make_result
from tests.unit.golden_files import golden

REPO = Path(__file__).resolve().parents[2]

# The seeds' own "Final Usage Stats" (001_…, TensorFlow Lite example), byte for byte.
SEED_TABLE = """\
NAME                   AVG CPU %      PEAK CPU  AVG MEM USAGE / LIMIT    PEAK MEM    NET I/O          BLOCK I/O        TOTAL TIME (ms)
---------------------  -----------  ----------  -----------------------  ----------  ---------------  -------------  -----------------
mobilenet_v1_0.75_224  225.09%          226.68  117.9 MiB / 1.9 GiB      117.9 MiB   742.0 B / 0.0 B  0.0 B / 0.0 B               6164
mobilenet_v1_1.0_224   244.258%         250.83  122.4 MiB / 1.9 GiB      126.9 MiB   766.0 B / 0.0 B  0.0 B / 0.0 B              12354"""  # noqa: E501


def test_table_reproduces_the_seeds_layout() -> None:
    rows: list[list[str | int | float]] = [
        ["mobilenet_v1_0.75_224", "225.09%", 226.68, "117.9 MiB / 1.9 GiB", "117.9 MiB",
         "742.0 B / 0.0 B", "0.0 B / 0.0 B", 6164],
        ["mobilenet_v1_1.0_224", "244.258%", 250.83, "122.4 MiB / 1.9 GiB", "126.9 MiB",
         "766.0 B / 0.0 B", "0.0 B / 0.0 B", 12354],
    ]  # fmt: skip
    assert table(HEADERS, rows) == SEED_TABLE


def test_numbers_align_on_the_decimal_point() -> None:
    assert table(["A", "B"], [[1.5, "x"], [22.25, "yy"]]).splitlines() == [
        "    A  B",
        "-----  ---",
        " 1.5   x",
        "22.25  yy",
    ]


def _samples(tmp_path: Path) -> Path:
    path = tmp_path / "samples.csv"
    path.write_text(
        "t_s,cpu_usage_s,cpu_pct,memory_bytes,working_set_bytes,io_read_bytes,io_write_bytes,"
        "net_rx_bytes,net_tx_bytes,pids\n"
        "0.0,0.0,,1048576,524288,0,0,,,1\n"
        "0.1,0.08,80.0,20971520,10485760,4096,0,,,2\n"
        "0.2,0.18,100.0,31457280,26214400,4096,12000,,,2\n"
    )
    return path


def test_model_log_golden(tmp_path: Path) -> None:
    r = make_result(
        started_at="2026-01-01T00:00:00.000+00:00",
        samples=SampleStats(count=3, interval_s=0.1, path=str(_samples(tmp_path))),
    )
    text = run_log(r, "mobilenet_v2_0.25", "infer.py", None, "mobilenet_v2_0.25.onnx")
    golden("auptimizer_model_log.txt", text)


def test_summary_golden_keeps_a_failed_model_and_says_why() -> None:
    ok = make_result(name="a")
    oom = make_result(
        termination=Termination.OOM,
        exit_code=137,
        memory=MemoryStats(
            peak_bytes=512 * 2**20, peak_source="kernel", avg_bytes=300 * 2**20,
            limit_bytes=512 * 2**20, oom_kills=1, peak_working_set_bytes=None,
            avg_working_set_bytes=None,
        ),
    )  # fmt: skip
    crashed = make_result(exit_code=1, wall_s=0.0421)
    when = dt.datetime(2026, 11, 22, 7, 0, 0, 123456)
    named = [("small", ok), ("Big.Model", oom), ("noext", crashed)]
    text = summary_block(named, host_memory=2 * 2**30, when=when)
    golden("auptimizer_summary.txt", text)


def test_a_working_set_peak_of_too_few_samples_is_na_as_its_average() -> None:
    """Read every 3 s, a run holding 60 MiB had shown a 1.7 MiB peak (its one reading, at
    the start) beside one holding 20 MiB at 2.7 MiB (a user's ``SAMPLETIME=3``): without
    an average (fewer than two readings while it ran) its highest is no peak either."""
    from edgeprof.report.auptimizer import usage_row

    base = make_result()
    few = dataclasses.replace(
        base.memory, peak_working_set_bytes=round(1.7 * 2**20), avg_working_set_bytes=None,
        avg_bytes=None,
    )  # fmt: skip
    row = usage_row("big", dataclasses.replace(base, memory=few), host_memory=None)
    assert str(row[3]).startswith("n/a / ") and row[4] == "n/a"
    enough = dataclasses.replace(few, avg_working_set_bytes=2**20)
    row = usage_row("big", dataclasses.replace(base, memory=enough), host_memory=None)
    assert row[4] == "1.7 MiB"


def test_the_summary_date_is_local_time_without_a_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    """As the older profiler's ``datetime.now()``: docs/results.md names it as the one time
    edgeprof writes in local time (a tester's ``TZ=Asia/Kathmandu`` read 11:40 beside a
    ``started_at`` of 05:55 UTC, and the docs had said every time was UTC)."""
    import time

    monkeypatch.setenv("TZ", "Asia/Kathmandu")  # UTC+05:45 all year
    time.tzset()
    try:
        line = summary_block([("m", make_result())], host_memory=None).splitlines()[0]
        utc = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
    finally:
        monkeypatch.undo()  # the caller's TZ back, and read again
        time.tzset()
    head, when = line.split(" : ")
    assert head == "Usage stats for Experiment ran on"
    written = dt.datetime.fromisoformat(when)
    assert written.tzinfo is None
    assert abs((written - utc) - dt.timedelta(hours=5, minutes=45)) < dt.timedelta(seconds=5)


TEMPLATE = """\
IMAGEREPO=python:3.11-slim
PIPREQUIREMENTS="numpy"
DIR=app
SCRIPT=main.sh
COMMAND=sh
SAMPLETIME=0.05
OUTPUTFILE=out.txt
DOCFILE=Dockerfile
DOCKCPUS=1
DOCKMEMORY=256m
DOCKER_ARGS=
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    app = tmp_path / "app"
    app.mkdir()
    # The model arrives as one argument ($1): record it, fail for one model.
    (app / "main.sh").write_text(
        'printf "%s|%s\\n" "$1" "$(pwd)" >> ../seen\nsleep 0.15\n[ "$1" != "bad" ]\n'
    )
    (tmp_path / "env.template").write_text(TEMPLATE)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_run_e_on_a_host_backend_writes_the_old_files(
    project: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    models = "Mobile.Net_0.75,bad,x y"
    code = main(["run", "--backend", "fake", "-e", "env.template", "-m", models])
    assert code == 1  # the failing model's exit status
    err = capfd.readouterr().err
    seen = (project / "seen").read_text().splitlines()
    # Each model is one argument, the script runs from DIR, nothing went through a shell.
    assert seen == [f"{m}|{project / 'app'}" for m in models.split(",")]
    assert "PIPREQUIREMENTS not applied" in err
    summary = (project / "out.txt").read_text()
    lines = summary.splitlines()
    assert lines[0].startswith("Usage stats for Experiment ran on : ")
    assert lines[1].split()[:3] == ["NAME", "AVG", "CPU"] and lines[1].endswith("STATUS")
    assert lines[3].startswith("Mobile.Net_0.75 ") and lines[3].endswith("ok")
    assert lines[4].startswith("bad ") and lines[4].endswith("exit 1")
    assert lines[5].startswith("x y ")
    assert "256.0 MiB" in lines[3]  # DOCKMEMORY is the run's limit
    log = (project / "Mobile.Net_0.75_out.txt").read_text()
    assert log.startswith("Profiling script: main.sh Mobile.Net_0.75\n")
    # SAMPLETIME 0.05 s over a 0.15 s run: a row per sample, at least the first and the
    # last (more only where the sampler's thread got its turns: not a count to hold)
    assert sum(1 for ln in log.splitlines() if ln.startswith("Mobile.Net_0.75 ")) >= 2
    assert (project / "bad_out.txt").exists() and (project / "x y_out.txt").exists()
    # A second invocation appends its summary; the per-model logs start afresh.
    assert main(["run", "--backend", "fake", "-e", "env.template", "-m", "Mobile.Net_0.75"]) == 0
    assert (project / "out.txt").read_text().count("Usage stats for Experiment") == 2
    assert (project / "Mobile.Net_0.75_out.txt").read_text().count("Profiling script") == 1


def test_run_e_without_models_logs_into_outputfile(
    project: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--backend", "fake", "-e", "env.template", "--repeat", "2"]) == 0
    text = (project / "out.txt").read_text()
    assert text.count("Profiling script: main.sh\n") == 2
    assert text.count("Usage Stats: ") == 2 and "main #1 " in text and "main #2 " in text
    assert "Usage stats for Experiment" not in text


@pytest.mark.parametrize(
    "edit, args, message",
    [
        (("DOCKMEMORY=256m", "DOCKMEMORY=abc"), [], "env.template:10: DOCKMEMORY: invalid size"),
        (("DOCKCPUS=1", "DOCKCPUS=-2"), [], "env.template:9: DOCKCPUS: invalid CPU count '-2'"),
        (("DIR=app", "DIR=nowhere"), [], "env.template:3: DIR 'nowhere': no such directory"),
        (("SCRIPT=main.sh", "SCRIPT=none.sh"), [], "env.template:4: SCRIPT 'none.sh' not found"),
        (("COMMAND=sh\n", ""), [], "env.template: required key COMMAND missing"),
        (("DIR=app", "DIR=app;x"), [], "env.template:3: unquoted ';'"),
        (("", ""), ["-m", "a", "-f", "models.txt"], "not both"),
        (("", ""), ["-f", "empty.txt"], "model file empty.txt lists no model"),
        (("", ""), ["--", "python3", "x.py"], "gives the command"),
        (("", ""), ["--base-image", "x"], "describes the environment"),
    ],
)
def test_bad_input_starts_and_writes_nothing(
    project: Path,
    edit: tuple[str, str],
    args: list[str],
    message: str,
    capfd: pytest.CaptureFixture[str],
) -> None:
    if edit[0]:
        (project / "env.template").write_text(TEMPLATE.replace(*edit))
    (project / "empty.txt").write_text("# nothing\n\n")
    (project / "models.txt").write_text("a\n")
    code = main(["run", "--backend", "fake", "-e", "env.template", *args])
    err = capfd.readouterr().err
    assert code == 2 and err.startswith("edgeprof: error:") and err.count("\n") == 1, err
    assert message in err, err
    assert not (project / "out.txt").exists() and not (project / "seen").exists()


def test_an_unknown_key_is_a_warning_naming_it(
    project: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    (project / "env.template").write_text(TEMPLATE + "DOCKCPU=2\n")
    assert main(["run", "--backend", "fake", "-e", "env.template"]) == 0
    err = capfd.readouterr().err
    assert "edgeprof: warning: env.template:12: unknown key DOCKCPU ignored" in err


def test_concurrent_runs_append_whole_summaries(project: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    launcher = REPO / "tests" / "fake_edgeprof.py"  # edgeprof's CLI with the fake registered
    cmd = [sys.executable, str(launcher), "run", "--backend", "fake", "-e", "env.template"]
    procs = [
        subprocess.Popen([*cmd, "-m", ",".join(f"p{i}m{j}" for j in range(6))], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for i in range(3)
    ]  # fmt: skip
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    blocks = (project / "out.txt").read_text().split("Usage stats for Experiment ran on : ")[1:]
    assert len(blocks) == 3
    for block in blocks:
        names = [ln.split()[0] for ln in block.splitlines()[3:] if ln.strip()]
        assert len(names) == 6 and len({n[:2] for n in names}) == 1, block


def test_run_e_json_names_no_deleted_samples_file(
    project: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Without --out the sample logs are made from a temporary samples.csv, removed at the
    end: the JSON must not point at it."""
    assert main(["run", "--backend", "fake", "-e", "env.template", "--json"]) == 0
    data = json.loads(capfd.readouterr().out)
    # At least the first and the last reading (how many between: the machine's load).
    assert data["samples"]["path"] is None and data["samples"]["count"] >= 2


def _summary_names(project: Path) -> list[str]:
    """The row names of the last summary block of out.txt (names without spaces)."""
    block = (project / "out.txt").read_text().split("Usage stats for Experiment ran on : ")[-1]
    return [ln.split()[0] for ln in block.splitlines()[3:] if ln.strip()]


@pytest.mark.parametrize(
    "models, names",
    [
        ("model.onnx,model.tflite", ["model.onnx", "model.tflite"]),
        ("m.v1,m.v2", ["m.v1", "m.v2"]),
        ("fp32/m.onnx,int8/m.onnx", ["fp32_m.onnx", "int8_m.onnx"]),
    ],
)
def test_models_with_one_stem_get_a_row_and_a_log_each(
    project: Path, models: str, names: list[str]
) -> None:
    """``-m model.onnx,model.tflite`` (the old profiler's main use: one model's two builds)
    had written one ``model_out.txt`` holding both runs and two summary rows named
    ``model``."""
    assert main(["run", "--backend", "fake", "-e", "env.template", "-m", models]) == 0
    assert _summary_names(project) == names
    for model, name in zip(models.split(","), names, strict=True):
        log = (project / f"{name}_out.txt").read_text()
        assert log.count("Profiling script") == 1, log
        assert log.startswith(f"Profiling script: main.sh {model}\n")
        rows = [ln.split()[0] for ln in log.splitlines()[3:] if ln.startswith(name)]
        assert rows, log
    stems = {"model_out.txt", "m_out.txt"}
    assert not any((project / f).exists() for f in stems)
    assert sorted(p.name for p in project.glob("*_out.txt")) == sorted(
        f"{n}_out.txt" for n in names
    )


def test_models_with_distinct_stems_keep_the_old_names(project: Path) -> None:
    assert main(["run", "--backend", "fake", "-e", "env.template", "-m", "a.onnx,b.tflite"]) == 0
    assert _summary_names(project) == ["a", "b"]
    assert (project / "a_out.txt").exists() and (project / "b_out.txt").exists()


def test_files_told_the_models_name_them_at_once(tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    files = AuptimizerFiles(out, "infer.py", None, False, models=["m.onnx", "m.tflite"])
    files.result("m", "m.onnx", make_result(), 1, 1)
    assert [p.name for p in tmp_path.iterdir()] == ["m.onnx_out.txt"]
    files.result("m", "m.tflite", make_result(), 1, 1)
    files.finish(with_models=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "m.onnx_out.txt",
        "m.tflite_out.txt",
        "out.txt",
    ]
    assert [n for n, _ in files.named] == ["m.onnx", "m.tflite"]


def test_files_refuse_a_model_the_sweep_did_not_list(tmp_path: Path) -> None:
    files = AuptimizerFiles(tmp_path / "out.txt", "infer.py", None, False, models=["m.onnx"])
    with pytest.raises(ValueError, match=r"'m\.tflite' is not one of the sweep's models"):
        files.result("m", "m.tflite", make_result(), 1, 1)


def test_a_host_run_names_docker_args_as_the_template_spells_it(
    project: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """The warning had said "DOCK_ARGS not applied" of a template that said DOCKER_ARGS."""
    text = TEMPLATE.replace("DOCKER_ARGS=", 'DOCKER_ARGS="--privileged"')
    (project / "env.template").write_text(text)
    assert main(["run", "--backend", "fake", "-e", "env.template"]) == 0
    err = capfd.readouterr().err
    assert "IMAGEREPO, PIPREQUIREMENTS, DOCKER_ARGS not applied" in err, err
    assert "DOCK_ARGS" not in err.replace("DOCKER_ARGS", "")


def test_a_host_run_needs_no_docfile(project: Path, capfd: pytest.CaptureFixture[str]) -> None:
    (project / "env.template").write_text(TEMPLATE.replace("DOCFILE=Dockerfile\n", ""))
    assert main(["run", "--backend", "fake", "-e", "env.template", "-m", "a"]) == 0
    assert "DOCFILE" not in capfd.readouterr().err
    assert (project / "a_out.txt").exists()


def test_a_dir_kept_as_text_is_refused_with_the_reason(
    project: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    (project / "env.template").write_text(TEMPLATE.replace("DIR=app", "DIR=$HOME"))
    assert main(["run", "--backend", "fake", "-e", "env.template"]) == 2
    (line,) = capfd.readouterr().err.splitlines()
    assert line == (
        "edgeprof: error: env.template:3: DIR '$HOME': no such directory "
        f"({KEPT_AS_TEXT}: the file is read as data, not sourced)"
    )


def test_a_command_not_found_names_the_template_line(
    project: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """``COMMAND=$PY`` had said only "command not found: $PY": no file, no line, and not the
    warning that ``$PY`` was never expanded."""
    (project / "env.template").write_text(TEMPLATE.replace("COMMAND=sh", "COMMAND=$PY"))
    assert main(["run", "--backend", "fake", "-e", "env.template"]) == 2
    (line,) = capfd.readouterr().err.splitlines()
    assert line == (
        "edgeprof: error: env.template:5: COMMAND: command not found: $PY "
        f"({KEPT_AS_TEXT}: the file is read as data, not sourced)"
    )


def test_a_sample_log_reads_samples_csv_as_report_does(tmp_path: Path) -> None:
    """One reader of samples.csv (:func:`edgeprof.samplefiles.read_samples`): a field that
    is not a number is refused naming its line, as ``report --plots`` refuses it (this log's
    own reader had raised float()'s bare ValueError), and ``inf`` is no value."""
    path = _samples(tmp_path)
    r = make_result(
        started_at="2026-01-01T00:00:00.000+00:00",
        samples=SampleStats(count=3, interval_s=0.1, path=str(path)),
    )
    path.write_text(path.read_text().replace("80.0", "inf"))
    assert [row[1] for row in sample_rows(r, "m", None)] == ["--", "--", "100.00%"]
    path.write_text(path.read_text().replace("inf", "fast"))
    with pytest.raises(ValueError) as exc:
        sample_rows(r, "m", None)
    assert str(exc.value) == "line 3: a field is not a number (a sample is numbers)"


def test_an_empty_or_cut_samples_csv_is_refused(tmp_path: Path) -> None:
    """A user's empty file had been drawn as an empty timeline, and one cut in its last row
    (``0.109463,0.052298,46.052845,17547264,17``) as a 17-byte working set, in silence."""
    from edgeprof.samplefiles import read_samples

    path = tmp_path / "samples.csv"
    path.write_text("")
    with pytest.raises(ValueError, match=r"^empty: no header$"):
        read_samples(path)
    path.write_text("t_s,cpu_s,cpu_pct,memory_bytes\n0.1,0.0,1.0,100\n0.2,0.01\n")
    cut = r"^line 3: fewer fields than the header \(cut short\?\)$"
    with pytest.raises(ValueError, match=cut):
        read_samples(path)
    path.write_text("t_s,cpu_s,cpu_pct,memory_bytes\n0.1,0.0,,100\n")  # an empty cell: no value
    assert read_samples(path)["cpu_pct"] == [None]


def test_a_rows_setting_is_its_cells_without_the_leased_core(tmp_path: Path) -> None:
    """Two rounds of ``--cpus 1`` on cores 0 and 1 had been named as two settings,
    ``m [cpus=1, cpuset=0] #1`` and ``m [cpus=1, cpuset=1] #2``."""
    files = AuptimizerFiles(tmp_path / "out.txt", "infer.py", None, True)

    def on(core: int, chosen: bool = True) -> RunResult:
        lease = CoreLease((core,), 0.0, chosen=chosen)
        return make_result(limits=Limits(cpus=1, cpuset=str(core)), lease=lease)

    assert [files.row_name("m", on(c), n, 2) for n, c in ((1, 0), (2, 1))] == [
        "m [cpus=1] #1",
        "m [cpus=1] #2",
    ]
    assert files.row_name("m", on(1, chosen=False), 1, 1) == "m [cpus=1, cpuset=1]"
