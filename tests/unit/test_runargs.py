"""``run``'s own parser (``edgeprof.cli.runargs``) against the typer command it stands in
for: the same options, kinds and defaults, the same parameters for every command line it
reads, and typer's own help and errors for every one it gives up on; and shell completion,
which only the typer app gives."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from edgeprof.cli import app as cli_app
from edgeprof.cli import main, runargs
from edgeprof.cli.runargs import DEFAULTS, OPTIONS, parse, to_words

from .fuzz_strategies import fuzz

REPO = Path(__file__).resolve().parents[2]


def _kind(p: Any) -> str:
    if getattr(p, "multiple", False):
        return "list"
    if getattr(p, "is_flag", False):
        return "flag"
    if getattr(getattr(p.type, "func", None), "__name__", "") == "_directory":
        return "path"  # --out: read as a path by edgeprof.cli.run._directory, "" refused
    return {"IntParamType": "int", "TyperPath": "path"}.get(type(p.type).__name__, "str")


def test_the_table_is_the_typer_commands_options() -> None:
    command = cli_app._load("run")
    table: dict[str, tuple[str, str]] = {}
    defaults: dict[str, Any] = {}
    for p in command.params:
        defaults[p.name] = p.default
        if p.param_type_name == "argument":
            assert p.name == "command" and p.nargs == -1
            continue
        kind = _kind(p)
        table.update({opt: (p.name, kind) for opt in p.opts})
        table.update({opt: (p.name, "no-flag") for opt in p.secondary_opts})
    assert table == OPTIONS
    assert defaults == DEFAULTS
    # Everything after COMMAND is the command's own, in both parsers.
    assert command.context_settings["allow_interspersed_args"] is False


def _typer_params(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any] | int:
    """The parameters the typer command hands on for ``run ARGV`` (or its exit code)."""
    got: dict[str, Any] = {}

    def capture(params: dict[str, Any]) -> int:
        got.update(params)
        return 0

    monkeypatch.setattr(runargs, "execute", capture)
    rc = cli_app.main(["run", *argv])
    return got if got else rc


def _normal(params: dict[str, Any]) -> dict[str, Any]:
    """None and an empty list mean the same to execute() (``tuple(x or ())``)."""
    out = {**DEFAULTS, **params}
    return {k: (v or None) if isinstance(v, list) or v is None else v for k, v in out.items()}


_VALUE = st.text(alphabet="ab1-=. /", max_size=6)


@st.composite
def _command_lines(draw: st.DrawFn) -> list[str]:
    words: list[str] = []
    for name in draw(st.lists(st.sampled_from(sorted(OPTIONS)), max_size=6)):
        kind = OPTIONS[name][1]
        if kind in ("flag", "no-flag"):
            words.append(name)
            continue
        value = str(draw(st.integers(-3, 30))) if kind == "int" else draw(_VALUE)
        if name.startswith("--") and draw(st.booleans()):
            words.append(f"{name}={value}")
        else:
            words += [name, value]
    if draw(st.booleans()):
        words.append("--")
    return words + draw(st.lists(st.sampled_from(["python", "-c", "--cpus", "x.py", "--"])))


@fuzz(150)
@given(_command_lines())
def test_both_parsers_read_a_command_line_alike(argv: list[str]) -> None:
    mp = pytest.MonkeyPatch()
    try:
        ours = parse(argv)
        theirs = _typer_params(argv, mp)
    finally:
        mp.undo()
    if ours is None:  # given up: typer's to read, and it is the only one that did
        return
    assert isinstance(theirs, dict), (argv, theirs)
    assert _normal(ours) == _normal(theirs), argv


def test_the_plain_forms_and_the_command_after_them() -> None:
    argv = ["--cpus", "1", "--cpus=2", "-E", "A=1", "--json", "--out", "o", "-m", "a,b"]
    argv += ["--repeat=3", "--no-as-root", "--no-as-root", "python", "x.py", "--cpus", "9"]
    assert parse(argv) == {
        "cpus": ["1", "2"],
        "env": ["A=1"],
        "json_out": True,
        "out": Path("o"),
        "model_list": "a,b",
        "repeat": "3",
        "as_root": False,
        "command": ["python", "x.py", "--cpus", "9"],
    }
    assert parse(["--name", "--", "--", "true"]) == {"name": "--", "command": ["true"]}
    assert parse([]) == {}


@pytest.mark.parametrize(
    ("argv", "want"),
    [
        (["--modellist", "a,b"], {"model_list": "a,b"}),
        (["--modelfile=m.txt"], {"model_file": Path("m.txt")}),
    ],
)
def test_auptimizers_long_model_options_are_edgeprofs(
    argv: list[str], want: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Auptimizer's Profiler spelled -m and -f --modellist and --modelfile: an old command
    line (``-e env.template --modellist a,b``) reads as edgeprof's own, in both parsers."""
    line = ["--environment", "env.template", *argv]
    ours, theirs = parse(line), _typer_params(line, monkeypatch)
    assert ours == {"environment": Path("env.template"), **want}
    assert isinstance(theirs, dict) and _normal(theirs) == _normal(ours)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--warmup", "x"], "'x' is not a valid int"),
        (["--no-such", "true"], "No such option: --no-such"),
        (["--cpus"], "Option '--cpus' requires an argument"),
        (["--json=1", "true"], "Option '--json' does not take a value"),
    ],
)
def test_what_it_gives_up_on_typer_refuses_as_before(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert parse(argv) is None
    assert main(["run", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("edgeprof: error: ") and message in err and err.count("\n") == 1


def test_help_is_typers(capsys: pytest.CaptureFixture[str]) -> None:
    assert parse(["--help"]) is None
    assert main(["run", "--help"]) == 0
    assert "--max-memory-need" in capsys.readouterr().out


def _complete(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "edgeprof"],
        env={**os.environ, "PYTHONPATH": str(REPO), **env},
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_shell_completion_scripts_and_words() -> None:
    """What README's completion lines rely on: the script, and words completed by it."""
    for shell, mark in (("bash", "complete -o default -F"), ("zsh", "#compdef edgeprof")):
        p = _complete({"_EDGEPROF_COMPLETE": f"source_{shell}"})
        assert p.returncode == 0 and mark in p.stdout, p.stderr
    words = {"_EDGEPROF_COMPLETE": "complete_bash", "COMP_CWORD": "1"}
    p = _complete({**words, "COMP_WORDS": "edgeprof ru"})
    assert p.returncode == 0 and p.stdout.split() == ["run"], p.stderr
    p = _complete({**words, "COMP_WORDS": "edgeprof run --max-p", "COMP_CWORD": "2"})
    assert p.stdout.split() == ["--max-peak-memory"], p.stderr


@pytest.mark.parametrize(
    ("line", "want"),
    [
        # The shipped catalog's names (edgeprof/devices.yml), those starting with what was typed.
        ("edgeprof run --device rpi5", ["rpi5-4gb", "rpi5-8gb"]),
        ("edgeprof fit --device j", ["jetson-nano"]),
        ("edgeprof run --backend ", ["auto", "cgroup", "docker", "process"]),
        ("edgeprof bench --backend ", ["auto", "cgroup", "process"]),
        ("edgeprof run --cores-busy ", ["wait", "fail"]),
        ("edgeprof run --report-to stde", ["stderr"]),
        ("edgeprof run --gpus ", ["all", "none"]),
        ("edgeprof calibrate --form ", ["auto", "origin", "line", "power"]),
        ("edgeprof layers profile --granularity b", ["blocks"]),
        ("edgeprof layers profile --dtype float1", ["float16"]),
        # A repeated option is the command's to refuse when it runs: completing the line, its
        # error line had been offered as the completions.
        ("edgeprof fit --memory 1g --memory 2g --max-m", ["--max-memory-need"]),
    ],
)
def test_shell_completion_offers_an_options_values(line: str, want: list[str]) -> None:
    """``run --device <TAB>`` had offered nothing (a CLI tester's)."""
    cword = str(len(line.split()) - (0 if line.endswith(" ") else 1))
    p = _complete({"_EDGEPROF_COMPLETE": "complete_bash", "COMP_WORDS": line, "COMP_CWORD": cword})
    assert p.returncode == 0 and p.stdout.split() == want, p.stderr


def test_completion_reads_the_devices_catalog_given_before(tmp_path: Path) -> None:
    """``--devices FILE --device <TAB>``: FILE's names too; an unreadable one offers none, no
    traceback into the shell."""
    catalog = tmp_path / "c.yml"
    catalog.write_text("devices:\n  my-board:\n    cores: 1\n    memory: 512m\n")
    words = {"_EDGEPROF_COMPLETE": "complete_bash", "COMP_CWORD": "5"}
    p = _complete({**words, "COMP_WORDS": f"edgeprof run --devices {catalog} --device my"})
    assert p.returncode == 0 and p.stdout.split() == ["my-board"], p.stderr
    p = _complete({**words, "COMP_WORDS": f"edgeprof run --devices {tmp_path}/no --device "})
    assert (p.returncode, p.stdout.split(), p.stderr) == (0, [], "")


@given(_command_lines())
def test_to_words_writes_the_command_line_parse_reads_back(argv: list[str]) -> None:
    """What the Ray executor hands each part: the same parameters, whatever the form."""
    params = parse(argv)
    assume(params is not None)  # typer's to read: nothing for to_words to write back
    assert params is not None
    params.setdefault("command", ["python3", "-c", "pass"])
    again = parse(to_words(params))
    assert again is not None and _normal(again) == _normal(params)


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (
            ["run", "--device", "board-512m", "--device", "board-1g", "--", "true"],
            "--device given 2 times (board-512m, board-1g)",
        ),
        (
            ["fit", "--memory", "512m", "--memory=1g", "--", "true"],
            "--memory given 2 times (512m, 1g)",
        ),
        (["fit", "--cpuset", "0", "--cpuset", "1", "true"], "--cpuset given 2 times (0, 1)"),
        (
            ["run", "--name", "a", "--timeout", "5", "--name=b", "true"],
            "--name given 2 times (a, b)",
        ),
        # A group's commands too (layers profile had run batch 2 alone: a CLI tester's).
        (
            ["layers", "profile", "--batch-size", "1", "--batch-size", "2", "m:f"],
            "--batch-size given 2 times (1, 2)",
        ),
        (
            ["layers", "export", "models", "-o", "a.yml", "-o", "b.yml"],
            "--output given 2 times (a.yml, b.yml)",
        ),
    ],
)
def test_a_single_value_option_given_twice_is_one_error_line(
    argv: list[str], line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``run --device a --device b`` had run ``b`` only, and ``fit --memory 512m --memory 1g``
    fitted 1 GiB, without a word (a tester's); run's own parser hands such a line on."""
    if argv[0] == "run":
        assert parse(argv[1:]) is None
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err == (
        f"edgeprof: error: {line}: it takes one value, and all but the last would be ignored; "
        "give it once\n"
    )


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["run", "--as-root", "--json", "--no-as-root", "true"], "--as-root and --no-as-root"),
        (["gc", "--images", "--no-images"], "--images and --no-images"),
        (["gc", "--no-images", "--images", "--images"], "--no-images and --images"),
        (
            ["compare", "--no-ignore-limits", "a", "b", "--ignore-limits"],
            "--no-ignore-limits and --ignore-limits",
        ),
    ],
)
def test_a_boolean_pair_given_both_ways_is_one_error_line(
    argv: list[str], line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``gc --images --no-images`` had removed no image without a word, as click keeps the
    last (a CLI tester's); run's own parser hands such a line on, as a repeated option."""
    if argv[0] == "run":
        assert parse(argv[1:]) is None
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err == f"edgeprof: error: {line} both given: they contradict; give one\n"


def test_lists_flags_and_the_workloads_words_may_repeat(monkeypatch: pytest.MonkeyPatch) -> None:
    """A list option sweeps its values, a flag given twice the same way is given, and the
    command's own words are not edgeprof's options: both parsers take the line."""
    argv = ["--memory", "6m", "--memory", "8m", "--no-as-root", "--no-as-root", "-E", "A=1",
            "-E", "B=2", "python", "x.py", "--device", "a", "--device", "b"]  # fmt: skip
    want = {
        "memory": ["6m", "8m"], "as_root": False, "env": ["A=1", "B=2"],
        "command": ["python", "x.py", "--device", "a", "--device", "b"],
    }  # fmt: skip
    assert parse(argv) == want
    theirs = _typer_params(argv, monkeypatch)
    assert isinstance(theirs, dict) and _normal(theirs) == _normal(want)
