"""cli.main in-process with the fake backend: output streams, exit codes, one-line errors."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import edgeprof
from edgeprof.cli import main
from edgeprof.measure.limits import THREAD_VARS
from edgeprof.model import RunResult
from edgeprof.resultfiles import load_runs

from .conftest import SEED_COLUMNS

RUN = ["run", "--backend", "fake", "--interval", "0.01"]


@pytest.fixture(autouse=True)
def _no_inherited_thread_vars(monkeypatch: pytest.MonkeyPatch) -> None:
    for v in THREAD_VARS:
        monkeypatch.delenv(v, raising=False)


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    out, err = capsys.readouterr()
    assert out == f"edgeprof {edgeprof.__version__}\n"
    assert err == ""


def test_no_arguments_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "run" in err and "doctor" in err


def test_run_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*RUN, "--", "true"]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[0] == "Final Usage Stats"
    assert re.split(r"\s{2,}", lines[1])[:8] == SEED_COLUMNS
    assert lines[3].startswith("true ")
    assert lines[3].rstrip().endswith("exited")
    assert "warning: fake backend" in out
    assert err == ""


def test_json_only_json_on_stdout(capfd: pytest.CaptureFixture[str]) -> None:
    # capfd: the workload writes to real file descriptors.  It prints 42 via arithmetic so
    # the printed text does not also appear in the command line inside the JSON.
    script = "echo out-$((6*7)); echo err-$((6*7)) >&2"
    assert main([*RUN, "--json", "--", "sh", "-c", script]) == 0
    out, err = capfd.readouterr()
    data = json.loads(out)  # the whole of stdout
    assert data["command"] == ["sh", "-c", script]
    assert data["backend"] == "fake" and data["termination"] == "exited"
    assert RunResult.from_dict(data).exit_code == 0
    assert "out-42" not in out
    assert "out-42\n" in err and "err-42\n" in err


def test_workload_stdout_stays_on_stdout_without_json(capfd: pytest.CaptureFixture[str]) -> None:
    assert main([*RUN, "--", "sh", "-c", "echo hello"]) == 0
    out, err = capfd.readouterr()
    assert out.startswith("hello\nFinal Usage Stats\n")
    assert err == ""


def test_report_to_stderr_leaves_stdout_the_workloads(
    capfd: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``run -- cat data.bin > copy.bin`` had the table appended to the copy (725 bytes, a
    tester's); with ``--report-to stderr`` stdout is byte for byte the workload's."""
    data = tmp_path / "data.bin"
    data.write_text("".join(f"row {i}\n" for i in range(1000)) + "no newline at the end")
    assert main([*RUN, "--report-to", "stderr", "--", "cat", str(data)]) == 0
    out, err = capfd.readouterr()
    assert out == data.read_text()
    assert err.startswith("Final Usage Stats\n") and "cat " in err
    # Refused before anything runs: a value it does not know, and the JSON that owns stdout.
    assert main([*RUN, "--report-to", "file", "--", "cat", str(data)]) == 2
    refused = "edgeprof: error: --report-to 'file': give stdout or stderr\n"
    assert capfd.readouterr() == ("", refused)
    assert main([*RUN, "--report-to", "stderr", "--json", "--", "cat", str(data)]) == 2
    out, err = capfd.readouterr()
    assert out == "" and err.count("\n") == 1 and "give one of them" in err


@pytest.mark.parametrize(
    ("script", "code"),
    [("exit 7", 7), ("exit 0", 0), ("kill -KILL $$", 137), ("kill -TERM $$", 143)],
)
def test_exit_code_is_the_workloads(
    capsys: pytest.CaptureFixture[str], script: str, code: int
) -> None:
    assert main([*RUN, "--", "sh", "-c", script]) == code
    capsys.readouterr()


def test_timeout_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*RUN, "--timeout", "0.2", "--", "sleep", "5"]) == 143
    out, _ = capsys.readouterr()
    assert "timeout (143)" in out


def test_kill_grace_is_the_time_from_sigterm_to_sigkill(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """usage.md named --kill-grace, which run did not have ("No such option")."""
    ignores_term = ["sh", "-c", "trap '' TERM; sleep 5"]  # sleep inherits the ignored TERM
    argv = [*RUN, "--timeout", "0.2", "--kill-grace", "0.3", "--out", str(tmp_path / "r")]
    assert main([*argv, "--", *ignores_term]) == 137
    capsys.readouterr()
    [r] = load_runs([tmp_path / "r" / "result.json"])
    assert r.termination.value == "timeout"
    # 0.2 s to the SIGTERM, 0.3 s to the SIGKILL: the default grace had taken 2.2 s.  The
    # timeout's clock starts at the spawn, the wall time once the child has joined its group
    # (a few ms later: 0.4995 s seen), so the floor is the grace's, not the sum's.
    assert 0.45 <= r.wall_s < 1.5


def test_options_reach_the_run(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    out_dir = tmp_path / "out"
    md = tmp_path / "table.md"
    rc = main(
        [
            *RUN,
            "--cpus", "1",
            "--memory", "64m",
            "--env", "FOO=a=b",
            "-E", "BAR=",
            "--cwd", str(tmp_path),
            "--out", str(out_dir),
            "--markdown", str(md),
            "--name", "model-x",
            "--json",
            "--",
            "sh", "-c", 'echo "$FOO|$BAR|$OMP_NUM_THREADS|$(pwd)"',
        ]
    )  # fmt: skip
    assert rc == 0
    out, err = capfd.readouterr()
    assert f"a=b||1|{tmp_path}\n" in err
    data = json.loads(out)
    assert data["name"] == "model-x"
    assert data["limits"] == {
        "cpus": 1.0,
        "cpuset": [0],
        "memory_bytes": 64 * 2**20,
        "pids": None,
        "cpu_period_us": None,
        "read_bps": None,
        "write_bps": None,
        "read_iops": None,
        "write_iops": None,
    }
    # An integer share pinned to as many cores cannot stall: Docker's period stays.
    assert data["cpu"]["period_s"] == 0.1
    # --json names the samples from where edgeprof ran; result.json from beside it.
    assert data["samples"]["path"] == str(out_dir / "samples.csv")
    saved = {**data, "samples": {**data["samples"], "path": "samples.csv"}}
    assert json.loads((out_dir / "result.json").read_text()) == saved
    # Read back, the samples are found where they are now.
    [back] = load_runs([out_dir / "result.json"])
    assert back.samples.path == str(out_dir / "samples.csv")
    assert (out_dir / "samples.csv").exists()
    assert md.read_text().startswith(
        "## edgeprof report\n\n### Final Usage Stats\n\n| NAME | AVG CPU % |"
    )
    assert "| model-x |" in md.read_text()


@pytest.mark.parametrize(
    "args",
    [
        ["--memory", "12x", "--", "true"],
        ["--memory", "5m", "--", "true"],
        ["--cpus", "-1", "--", "true"],
        ["--cpus", "0", "--", "true"],
        ["--cpus", "abc", "--", "true"],
        ["--cpus", "3", "--", "true"],
        ["--cpuset", "7", "--", "true"],
        ["--cpuset", "3-1", "--", "true"],
        ["--", ""],
        ["--"],
        [],
        ["--", "edgeprof-no-such-command-xyz"],
        ["--out", "{file}/out", "--", "true"],
        ["--env", "FOO", "--", "true"],
        ["--env", "=x", "--", "true"],
        ["--bogus", "--", "true"],
        ["--interval", "0", "--", "true"],
        ["--interval", "0.0001", "--", "true"],
        ["--timeout", "0", "--", "true"],
        ["--cwd", "/nonexistent/dir", "--", "true"],
        ["--markdown", "/nonexistent/dir/t.md", "--", "true"],
        ["--markdown", "{dir}", "--", "true"],
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], args: list[str]
) -> None:
    (tmp_path / "file").write_text("")
    marker = tmp_path / "ran"
    args = [
        a.replace("{file}", str(tmp_path / "file")).replace("{dir}", str(tmp_path)) for a in args
    ]
    if args and args[-1] == "true":  # a workload that leaves a trace if it ever starts
        args = [*args[:-1], "sh", "-c", f"touch {marker}"]
    assert main([*RUN, *args]) == 2
    out, err = capfd.readouterr()
    assert out == ""
    assert len(err.splitlines()) == 1, err
    assert err.startswith("edgeprof: error: ")
    assert not marker.exists(), "the workload ran despite the bad input"


@pytest.mark.parametrize("what", ["missing", "plain file"])
def test_doctor_refuses_a_python_that_cannot_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, what: str
) -> None:
    """A wrong ``--python`` path is a usage error (one line, exit 2), as ``run -- /nonexistent``
    is, before any of the host's checks; an interpreter that runs but lacks edgeprof is a
    finding of the report (exit 0, tests/unit/test_instrumentation.py)."""
    python = tmp_path / "python"
    if what == "plain file":
        python.write_text("")
    assert main(["doctor", "--python", str(python)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    why = "not found" if what == "missing" else "is not executable"
    assert err == f"edgeprof: error: --python: command {why}: {python}\n"


@pytest.mark.usefixtures("no_fake_backend")
def test_unknown_backend(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--backend", "nope", "--", "true"]) == 2
    _, err = capsys.readouterr()
    assert err == (
        "edgeprof: error: unknown backend 'nope': choose one of auto, cgroup, docker, process\n"
    )


@pytest.mark.usefixtures("no_fake_backend")
def test_help_offers_only_the_built_in_backends(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["run", "--help"], ["bench", "--help"], ["layers", "profile", "--help"]):
        assert main(argv) == 0
        out = capsys.readouterr().out
        assert "auto | cgroup" in out and "fake" not in out, argv


def test_dash_h_is_help_everywhere_but_in_the_workloads_words(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``-h`` had been "No such option: -h" (a user's); after ``--`` it is the workload's."""
    from edgeprof.cli import COMMANDS

    commands: list[list[str]] = [[], *([c] for c in COMMANDS)]
    commands += [["layers", "profile"], ["layers", "export"]]
    for argv in commands:
        assert main([*argv, "-h"]) == 0, argv
        out = capsys.readouterr().out
        assert out.startswith(f"Usage: edgeprof {' '.join(argv)}".rstrip()), argv
        assert "  -h, --help " in out, argv
    argv = ["run", "--backend", "fake", "--", "sh", "-c", 'echo "got $1"', "sh", "-h"]
    assert main(argv) == 0
    assert "Usage:" not in capsys.readouterr().out


def test_help_shows_no_internal_names(capsys: pytest.CaptureFixture[str]) -> None:
    """``run --help`` had shown ``--out <_directory>``, its parser function's name."""
    from edgeprof.cli import COMMANDS

    commands = [[c] for c in COMMANDS if c != "layers"] + [["layers", "profile"]]
    for argv in commands:
        assert main([*argv, "--help"]) == 0
        out = capsys.readouterr().out
        assert "<_" not in out, argv
        assert "--out " not in out or "--out DIR" in out or "--out FILE" in out, argv


def _options(command: Any, words: str) -> Iterator[tuple[str, Any]]:
    """Each option of ``command`` (at any depth of a group), with its command's words."""
    for name, sub in getattr(command, "commands", {}).items():
        yield from _options(sub, f"{words} {name}")
    for p in getattr(command, "params", ()):
        if p.param_type_name == "option":
            yield words, p


def test_help_names_what_each_option_takes(capsys: pytest.CaptureFixture[str]) -> None:
    """typer had named values by their Python type (``--memory <str>``, ``--repeat <int>``,
    ``--out <path>``: a CLI tester's); each says what it takes, an option of one name the
    same in every command unless :data:`~edgeprof.cli.metavars.BY_COMMAND` says otherwise."""
    from edgeprof.cli import COMMANDS
    from edgeprof.cli.app import _load
    from edgeprof.cli.metavars import BY_COMMAND

    said: dict[str, set[str]] = {}
    for name in COMMANDS:
        for words, p in _options(_load(name), name):
            if p.is_flag:
                continue
            assert p.metavar and not p.metavar.startswith("<"), (words, p.opts)
            long = next(o for o in p.opts if o.startswith("--"))
            if (words, long) not in BY_COMMAND:
                said.setdefault(long, set()).add(p.metavar)
    assert {k: v for k, v in said.items() if len(v) > 1} == {}
    assert main(["run", "--help"]) == 0
    out = capsys.readouterr().out
    for shown in ("--memory SIZE", "--repeat N|auto", "--shard I/N", "--devices FILE"):
        assert shown in out
    assert main(["bench", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--repeat N " in out and "--batch-size SIZES" in out and "<str>" not in out


def test_error_messages_name_the_problem(capsys: pytest.CaptureFixture[str]) -> None:
    main([*RUN, "--memory", "12x", "--", "true"])
    assert "'12x'" in capsys.readouterr().err
    main([*RUN, "--cpuset", "7", "--", "true"])
    assert "CPU 7 is not available" in capsys.readouterr().err
    main([*RUN, "--", "edgeprof-no-such-command-xyz"])
    assert "command not found: edgeprof-no-such-command-xyz" in capsys.readouterr().err
    main([*RUN, "--bogus", "--", "true"])
    assert "--bogus" in capsys.readouterr().err


def test_a_relative_command_under_cwd_says_where_it_was_looked_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--cwd sub -- ./only_top.sh`` (the script beside edgeprof) had said only "command
    not found: ./only_top.sh"."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    script = tmp_path / "only_top.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    assert main([*RUN, "--cwd", "sub", "--", "./only_top.sh"]) == 2
    assert capsys.readouterr().err == (
        "edgeprof: error: command not found: ./only_top.sh (looked up from --cwd sub: "
        f"sub/only_top.sh; ./only_top.sh from here is {script}: give that path)\n"
    )
    assert main([*RUN, "--cwd", "sub", "--", "./none.sh"]) == 2
    assert capsys.readouterr().err == (
        "edgeprof: error: command not found: ./none.sh (looked up from --cwd sub: sub/none.sh)\n"
    )
    assert main([*RUN, "--", "./none.sh"]) == 2  # no --cwd: as before
    assert capsys.readouterr().err == "edgeprof: error: command not found: ./none.sh\n"


def test_a_mistyped_command_is_given_the_ones_it_may_mean(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """typer looked among the commands loaded so far (none: they load lazily), and
    ``edgeprof repor`` had said only "No such command 'repor'." (a CLI tester's)."""
    assert main(["repor"]) == 2
    assert capsys.readouterr().err == (
        "edgeprof: error: No such command 'repor'. Did you mean 'report'?\n"
    )
    assert main(["xyzzy"]) == 2
    assert capsys.readouterr().err == "edgeprof: error: No such command 'xyzzy'.\n"


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        # A tester's: "No such option: --html (Possible options: --help)".
        (
            ["bench", "m.py:f", "--html", "p.html"],
            "No such option: --html (bench has no --html; run, compare, report and merge have "
            "it: `edgeprof report DIR --html FILE` makes it from bench's --out)",
        ),
        # Not click's nearest spelling here (--margin), and the command path of a group's.
        (
            ["fit", "--markdown", "m.md", "--", "true"],
            "No such option: --markdown (fit has no --markdown; run and report have it: "
            "`edgeprof report DIR --markdown FILE` makes it from fit's --out)",
        ),
        (
            ["layers", "profile", "--html", "p.html"],
            "No such option: --html (layers profile has no --html; run, compare, report and "
            "merge have it)",
        ),
        (
            ["report", "d", "--cpus", "1"],
            "No such option: --cpus (report has no --cpus; run, fit, bench and layers profile "
            "have it)",
        ),
        # The command's own option for it (a verifier's: pointed at run and report).
        (
            ["compare", "a", "b", "--markdown", "m.md"],
            "No such option: --markdown (compare --summary FILE writes its verdicts as "
            "Markdown)",
        ),
        # Nobody's option: click's message, without a lone "--help" offered as its fix.
        (["doctor", "--foo"], "No such option: --foo"),
        (
            ["fit", "--marginn", "1", "--", "true"],
            "No such option: --marginn (Possible options: --image, --margin)",
        ),
    ],
)
def test_an_unknown_option_names_the_commands_that_have_it(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert capsys.readouterr().err == f"edgeprof: error: {said}\n"


def test_a_file_it_cannot_read_is_said_in_words_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Python's texts had named the file a second time (``cannot read budget file nope.yml:
    [Errno 2] No such file or directory: 'nope.yml'``) or said nothing of JSON (``Expecting
    value: line 1 column 1 (char 0)``): a CLI tester's."""
    nope = tmp_path / "nope.yml"
    assert main([*RUN, "--budgets", str(nope), "--", "true"]) == 2
    assert capsys.readouterr().err == (
        f"edgeprof: error: cannot read budget file {nope}: No such file or directory\n"
    )
    script = tmp_path / "tiny.py"
    script.write_text("x = 1\n")
    assert main(["report", str(script)]) == 2
    assert capsys.readouterr().err == (
        f"edgeprof: error: cannot read result {script}: not JSON (Expecting value at line 1, "
        "column 1)\n"
    )
    models = tmp_path / "models.txt"
    models.write_bytes(b"\xff\xfe")
    assert main([*RUN, "-f", str(models), "--", "true"]) == 2
    assert capsys.readouterr().err == (
        f"edgeprof: error: cannot read model file {models}: not UTF-8 text (byte 0)\n"
    )


def test_run_json_is_an_object_for_a_run_and_a_list_for_any_sweep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """``--warmup 1`` with one measured round had printed an object, as a plain run does, so
    a reader could not tell the shape from the command; warm-ups are never in the list, and
    the list is in runs.csv's order (grouped by cell), not sweep.json's run order."""
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--backend", "fake", "--json", "--", "true"]) == 0
    assert isinstance(json.loads(capfd.readouterr().out), dict)
    assert main(["run", "--backend", "fake", "--json", "--warmup", "1", "--", "true"]) == 0
    (one,) = json.loads(capfd.readouterr().out)
    assert one["command"] == ["true"]
    argv = ["run", "--backend", "fake", "--json", "--repeat", "2", "-m", "10,20", "--out", "s"]
    assert main([*argv, "--", "true"]) == 0
    listed = json.loads(capfd.readouterr().out)
    assert [r["name"] for r in listed] == ["10", "10", "20", "20"]
    ran = json.loads((tmp_path / "s" / "sweep.json").read_text())["runs"]
    assert [r["name"] for r in ran] == ["10", "20", "10", "20"]
