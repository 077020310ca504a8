"""The CI step's logic (edgeprof.cli.ci) with the CIs' environment simulated and a recording
runner: its inputs, the commands it runs, the exit code it chooses, what it publishes.  The
host tier runs the same step for real (tests/tooling/test_ci_step.py)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from edgeprof.cli import ci
from edgeprof.report.table import markdown_text


class Recorder:
    """Records each edgeprof command line; answers with the codes given, in turn, and
    ``error`` as the error line of a command that exits 2 where its errors are wanted."""

    def __init__(self, *codes: int, error: str = "") -> None:
        self.codes = list(codes)
        self.error = error
        self.calls: list[list[str]] = []

    def __call__(self, argv: Sequence[str], errors: list[str] | None = None) -> int:
        self.calls.append(list(argv))
        code = self.codes.pop(0)
        if errors is not None and code == 2 and self.error:
            errors.append(self.error)
        return code


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "EDGEPROF_CI_OUT": str(tmp_path / "out"), **extra}


def _baseline(tmp_path: Path) -> Path:
    """A baseline directory holding one (empty) result: enough for the step to compare."""
    run_dir = tmp_path / "base" / "m" / "1"
    run_dir.mkdir(parents=True)
    (run_dir / "result.json").write_text("{}")
    return tmp_path / "base"


def _job(tmp_path: Path, base: Path, **extra: str) -> dict[str, str]:
    """A job that profiles ``true`` and compares it with the baseline directory ``base``
    (which may be missing or empty: a cache miss)."""
    return _env(
        tmp_path, EDGEPROF_CI_COMMAND="true", EDGEPROF_CI_BASELINE=str(base),
        EDGEPROF_CI_SUDO="never", **extra,
    )  # fmt: skip


def _compared(tmp_path: Path, **extra: str) -> dict[str, str]:
    """A job that profiles ``true`` and compares it with :func:`_baseline`'s directory."""
    return _job(tmp_path, _baseline(tmp_path), **extra)


def test_a_command_with_options_is_one_run_and_no_baseline_no_compare(tmp_path: Path) -> None:
    env = _env(
        tmp_path,
        EDGEPROF_CI_COMMAND="python infer.py --model 'a b.onnx'",
        EDGEPROF_CI_ARGS="--cpus 1 --memory 1g --repeat 5",
        EDGEPROF_CI_SUDO="never",
    )
    rec = Recorder(0)
    assert ci.main(env, rec) == 0
    (call,) = rec.calls
    out = tmp_path / "out"
    assert call == [
        sys.executable, "-m", "edgeprof", "run", "--cpus", "1", "--memory", "1g", "--repeat",
        "5", "--out", str(out), "--summary", str(out / "summary.md"), "--junit",
        str(out / "junit.xml"), "--", "python", "infer.py", "--model", "a b.onnx",
    ]  # fmt: skip


def test_a_template_runs_with_e(tmp_path: Path) -> None:
    rec = Recorder(0)
    env = _env(tmp_path, EDGEPROF_CI_TEMPLATE="env.template", EDGEPROF_CI_SUDO="never")
    assert ci.main(env, rec) == 0
    assert rec.calls[0][-2:] == ["-e", "env.template"]
    assert "--" not in rec.calls[0]


@pytest.mark.parametrize(
    ("run_rc", "compare_rc", "rc"),
    [(0, 0, 0), (0, 3, 3), (3, 0, 3), (1, 3, 1), (3, 3, 3), (0, 2, 2)],
)
def test_the_exit_code_is_the_runs_else_the_comparisons(
    tmp_path: Path, run_rc: int, compare_rc: int, rc: int
) -> None:
    outputs = tmp_path / "github_output"
    env = _compared(tmp_path, EDGEPROF_CI_THRESHOLD="10%", GITHUB_OUTPUT=str(outputs))
    rec = Recorder(run_rc, compare_rc)
    assert ci.main(env, rec) == rc
    compare = rec.calls[1][3:]
    out = tmp_path / "out"
    assert compare == [
        "compare", str(tmp_path / "base"), str(out), "--threshold", "10%",
        "--summary", str(out / "compare.md"), "--junit", str(out / "compare.xml"),
    ]  # fmt: skip
    compared = "false" if compare_rc == 2 else "true"  # compare's own error reached no verdict
    assert outputs.read_text() == f"results={out}\nexit-code={rc}\ncompared={compared}\n"


def test_compare_args_reach_compare(tmp_path: Path) -> None:
    """A pull request that drops a model on purpose or changes the limits: compare's notes
    name --allow-missing and --ignore-limits, which the step had no way to pass."""
    env = _compared(
        tmp_path,
        EDGEPROF_CI_COMPARE_ARGS="--allow-missing --setting 'cpus=1, memory=1g' --ignore-limits",
    )
    rec = Recorder(0, 0)
    assert ci.main(env, rec) == 0
    assert rec.calls[1][-5:] == [
        str(tmp_path / "out" / "compare.xml"), "--allow-missing", "--setting",
        "cpus=1, memory=1g", "--ignore-limits",
    ]  # fmt: skip


def test_a_refused_run_leaves_no_results_directory_and_compares_nothing(tmp_path: Path) -> None:
    """``--cpus abc``: run refused it (exit 2), and the step had left its empty results
    directory behind and compared the nothing in it."""
    (tmp_path / "base" / "m").mkdir(parents=True)
    (tmp_path / "base" / "m" / "result.json").write_text("{}")
    env = _job(tmp_path, tmp_path / "base")
    rec = Recorder(2)
    assert ci.main(env, rec) == 2
    assert len(rec.calls) == 1 and not (tmp_path / "out").exists()


def test_an_empty_baseline_directory_is_no_baseline(tmp_path: Path) -> None:
    (tmp_path / "base").mkdir()
    env = _env(tmp_path, EDGEPROF_CI_COMMAND="true", EDGEPROF_CI_BASELINE=str(tmp_path / "base"))
    rec = Recorder(0)
    assert ci.main({**env, "EDGEPROF_CI_SUDO": "never"}, rec) == 0
    assert len(rec.calls) == 1


@pytest.mark.parametrize("made", [False, True])
def test_a_baseline_with_no_results_is_said_on_the_page_and_in_the_log(
    tmp_path: Path, made: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    """A cache miss (no directory) or an empty one: the job was green, the page showed the
    run's table alone, and only ``compared=false`` in ``$GITHUB_OUTPUT`` said that no
    regression was checked."""
    base, page = tmp_path / "base", tmp_path / "step.md"
    if made:
        base.mkdir()
    env = _job(tmp_path, base, GITHUB_STEP_SUMMARY=str(page))
    assert ci.main(env, Recorder(0)) == 0
    line = (
        f"⚠️ No baseline compared: no results in {base} (a cache miss, or the first run), so "
        "no regression was checked; restore a baseline's results directory there before this "
        "step (saved under the path it is restored to)"
    )
    assert f"edgeprof ci: {line}\n" in capsys.readouterr().out
    assert page.read_text() == markdown_text(line) + "\n\n"


def _github_event(tmp_path: Path, default: str = "main") -> str:
    """The event payload GitHub gives a step (``$GITHUB_EVENT_PATH``): the repository's
    default branch is only there."""
    path = tmp_path / "event.json"
    path.write_text(json.dumps({"ref": "refs/heads/x", "repository": {"default_branch": default}}))
    return str(path)


GITLAB_MAIN = {"GITLAB_CI": "true", "CI_DEFAULT_BRANCH": "trunk", "CI_COMMIT_BRANCH": "trunk"}


@pytest.mark.parametrize("ci_env", ["github", "gitlab"])
@pytest.mark.parametrize(("run_rc", "becomes"), [
    (0, "this run's results ({out}) become the baseline"),
    (3, "a failed build's results do not become the baseline (the last passing build's stay)"),
])  # fmt: skip
def test_the_default_branchs_build_makes_the_baseline_and_is_not_warned(
    tmp_path: Path, ci_env: str, run_rc: int, becomes: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The template fetches no baseline on the default branch, and the Action's documented
    workflow restores one only for a pull request: "a cache miss … restore a baseline" had
    been on every such build's page."""
    page = tmp_path / "step.md"
    github = {
        "GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "push", "GITHUB_REF": "refs/heads/main",
        "GITHUB_EVENT_PATH": _github_event(tmp_path), "GITHUB_STEP_SUMMARY": str(page),
    }  # fmt: skip
    env = _job(tmp_path, tmp_path / "base", **(github if ci_env == "github" else GITLAB_MAIN))
    assert ci.main(env, Recorder(run_rc)) == run_rc
    branch = "main" if ci_env == "github" else "trunk"
    line = f"On the default branch ({branch}): nothing to compare with; " + becomes.format(
        out=tmp_path / "out"
    )
    out = capsys.readouterr().out
    assert f"edgeprof ci: {line}\n" in out and "⚠️" not in out and "cache miss" not in out
    if ci_env == "github":
        assert page.read_text() == markdown_text(line) + "\n\n"


@pytest.mark.parametrize(
    "extra",
    [
        # A pull request (its ref is its merge ref, never the default branch's).
        {"GITHUB_EVENT_NAME": "pull_request", "GITHUB_REF": "refs/pull/7/merge"},
        # pull_request_target runs on the base branch's ref: still a change under review.
        {"GITHUB_EVENT_NAME": "pull_request_target", "GITHUB_REF": "refs/heads/main"},
        {"GITHUB_EVENT_NAME": "push", "GITHUB_REF": "refs/heads/feature"},
        # No payload to read the default branch from: not taken for the default branch.
        {"GITHUB_EVENT_NAME": "push", "GITHUB_REF": "refs/heads/main", "GITHUB_EVENT_PATH": ""},
        {**GITLAB_MAIN, "CI_COMMIT_BRANCH": "feature"},
        {**GITLAB_MAIN, "CI_MERGE_REQUEST_IID": "7"},
    ],
)
def test_a_build_meant_to_compare_is_still_warned(
    tmp_path: Path, extra: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    github = {"GITHUB_ACTIONS": "true", "GITHUB_EVENT_PATH": _github_event(tmp_path)}
    gitlab = "GITLAB_CI" in extra
    # The GitLab cases fetch from an API that is not there: what they say of it aside.
    api = {"CI_API_V4_URL": "http://127.0.0.1:1/api/v4"} if gitlab else github
    env = _job(tmp_path, tmp_path / "base", **{**api, **extra})
    assert ci.main(env, Recorder(0)) == 0
    out = capsys.readouterr().out
    assert f"edgeprof ci: ⚠️ No baseline compared: no results in {tmp_path / 'base'}" in out
    assert "On the default branch" not in out


def test_a_compare_error_is_said_on_the_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """compare exiting 2 (no cell in both): the job was red, the page held the run's table
    alone and the reason was only in the log."""
    base, page = _baseline(tmp_path), tmp_path / "step.md"
    env = _job(tmp_path, base, GITHUB_STEP_SUMMARY=str(page))
    why = "no model/limits cell is in both (baseline: 2, 8; current: python)"
    assert ci.main(env, Recorder(0, 2, error=why)) == 2
    line = (
        f"❌ No baseline compared: edgeprof compare {base} {tmp_path / 'out'} stopped "
        f"(exit 2): {why}; the job fails until the baseline can be compared (fix or replace it)"
    )
    assert f"edgeprof ci: {line}\n" in capsys.readouterr().out
    assert page.read_text() == markdown_text(line) + "\n\n"


@pytest.mark.parametrize(("run_rc", "compare_rc"), [(0, 0), (0, 3), (3, 3), (2, None)])
def test_a_compared_or_refused_run_adds_no_line(
    tmp_path: Path, run_rc: int, compare_rc: int | None, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "step.md"
    env = _job(tmp_path, _baseline(tmp_path), GITHUB_STEP_SUMMARY=str(page))
    codes = [run_rc] if compare_rc is None else [run_rc, compare_rc]
    ci.main(env, Recorder(*codes))
    assert not page.exists() and "No baseline" not in capsys.readouterr().out


def test_the_default_runner_passes_stderr_on_and_keeps_the_error_lines(
    capfd: pytest.CaptureFixture[str],
) -> None:
    script = "import sys; print('edgeprof: note: x', file=sys.stderr); "
    script += "print('edgeprof: error: no cell in both', file=sys.stderr); sys.exit(2)"
    errors: list[str] = []
    assert ci._call([sys.executable, "-c", script], errors) == 2
    assert errors == ["no cell in both"]
    assert capfd.readouterr().err == "edgeprof: note: x\nedgeprof: error: no cell in both\n"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({}, "set EDGEPROF_CI_COMMAND (the workload) or EDGEPROF_CI_TEMPLATE"),
        ({"EDGEPROF_CI_COMMAND": "a", "EDGEPROF_CI_TEMPLATE": "t"}, "one of the two"),
        ({"EDGEPROF_CI_COMMAND": "python 'x"}, "EDGEPROF_CI_COMMAND: No closing quotation"),
        ({"EDGEPROF_CI_COMMAND": "a", "EDGEPROF_CI_ARGS": "--out=x"}, "--out=x is the CI step"),
        ({"EDGEPROF_CI_COMMAND": "a", "EDGEPROF_CI_SUDO": "maybe"}, "auto, always or never"),
        # Had been found by compare after the whole profiling run (or never, with no baseline).
        ({"EDGEPROF_CI_COMMAND": "a", "EDGEPROF_CI_THRESHOLD": "5pc"}, "THRESHOLD: --threshold"),
        (
            {"EDGEPROF_CI_COMMAND": "a", "EDGEPROF_CI_COMPARE_ARGS": "--threshold 9%"},
            "COMPARE_ARGS: '--threshold' is not one of compare's options on which cells are "
            "paired (--allow-missing, --ignore-limits, --ignore-target, --pair BASE=CUR, "
            "--setting LIMITS); "
            "the threshold goes in EDGEPROF_CI_THRESHOLD",
        ),
        (
            {"EDGEPROF_CI_COMMAND": "a", "EDGEPROF_CI_COMPARE_ARGS": "--setting"},
            "COMPARE_ARGS: --setting needs a value (LIMITS)",
        ),
        (
            {"EDGEPROF_CI_COMMAND": "a", "EDGEPROF_CI_COMPARE_ARGS": "--pair"},
            "COMPARE_ARGS: --pair needs a value (BASE=CUR)",
        ),
    ],
)
def test_bad_inputs_are_one_line_and_run_nothing(
    tmp_path: Path, extra: dict[str, str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    rec = Recorder()
    assert ci.main(_env(tmp_path, **extra), rec) == 2
    err = capsys.readouterr().err
    assert err.startswith("edgeprof ci: error: ") and message in err and err.count("\n") == 1
    assert rec.calls == []


def test_a_refused_input_names_the_actions_input_and_sets_the_outputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """In the Action's step the error names the input the workflow wrote (``compare-args``),
    not the variable the action set from it; the outputs are set, as later steps read them
    (a refused input had left ``$GITHUB_OUTPUT`` empty)."""
    outputs = tmp_path / "outputs"
    env = _env(
        tmp_path, EDGEPROF_CI_COMMAND="a", EDGEPROF_CI_COMPARE_ARGS="--threshold 9%",
        GITHUB_ACTION_PATH="/a", GITHUB_OUTPUT=str(outputs),
    )  # fmt: skip
    assert ci.main(env, Recorder()) == 2
    err = capsys.readouterr().err
    assert err.startswith("edgeprof ci: error: input 'compare-args': '--threshold' is not ")
    assert err.endswith("; the threshold goes in input 'threshold'\n")
    assert "EDGEPROF_CI_" not in err
    assert outputs.read_text() == f"results={tmp_path / 'out'}\nexit-code=2\ncompared=false\n"
    # Both unset: the default results directory.
    env = {"EDGEPROF_CI_SUDO": "x", "GITHUB_OUTPUT": str(outputs)}
    assert ci.main(env, Recorder()) == 2
    assert outputs.read_text().endswith("results=edgeprof-results\nexit-code=2\ncompared=false\n")


def test_sudo_keeps_the_path_the_workload_is_found_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    argv = ci.edgeprof_argv("always", {"PATH": "/venv/bin:/usr/bin"})
    assert argv == [
        "sudo", "-n", "-E", "env", "PATH=/venv/bin:/usr/bin", sys.executable, "-m", "edgeprof"
    ]  # fmt: skip
    assert ci.edgeprof_argv("never", {}) == [sys.executable, "-m", "edgeprof"]
    monkeypatch.setattr("os.geteuid", lambda: 0)
    assert ci.edgeprof_argv("always", {}) == [sys.executable, "-m", "edgeprof"]  # root already


def test_gitlab_prints_the_summaries_into_the_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"

    def runner(argv: Sequence[str], errors: list[str] | None = None) -> int:
        out.mkdir(exist_ok=True)
        (out / "summary.md").write_text("## edgeprof\n\n**all 2 budget checks passed**\n")
        return 0

    env = _env(tmp_path, EDGEPROF_CI_COMMAND="true", EDGEPROF_CI_SUDO="never", GITLAB_CI="true")
    env["CI_COMMIT_BRANCH"] = env["CI_DEFAULT_BRANCH"] = "main"  # the default branch: no fetch
    assert ci.main(env, runner) == 0
    assert f"--- {out / 'summary.md'}\n## edgeprof\n" in capsys.readouterr().out


REPO = Path(__file__).resolve().parents[2]


def test_the_action_passes_every_input_to_the_step_as_its_variable() -> None:
    import yaml

    action = yaml.safe_load((REPO / "action.yml").read_text())
    steps = action["runs"]["steps"]
    assert action["runs"]["using"] == "composite"
    (profile,) = [s for s in steps if s.get("id") == "profile"]
    assert profile["run"] == '"$RUNNER_TEMP/edgeprof-venv/bin/python" -m edgeprof.cli.ci'
    passed = profile["env"]
    for name in action["inputs"]:
        if name == "python":  # the install step's
            continue
        variable = f"EDGEPROF_CI_{name.upper().replace('-', '_')}"
        assert passed[variable] == "${{ inputs." + name + " }}"
    # No input is pasted into a script's text (an input could then run shell code).
    assert not [s for s in steps if "${{ inputs." in s.get("run", "")]
    assert set(action["outputs"]) == {"results", "exit-code", "compared"}


def test_the_gitlab_template_runs_the_step_and_reports_its_files() -> None:
    import yaml

    job = yaml.safe_load((REPO / "integrations" / "gitlab-ci.yml").read_text())[".edgeprof"]
    assert job["script"] == ["/tmp/edgeprof-venv/bin/python -m edgeprof.cli.ci"]
    # docs/ci.md: EDGEPROF_PIP_SPEC is one word of pip install (a URL, a path, a requirement
    # with spaces: "edgeprof @ git+https://…"), in a venv the workload does not run in.
    assert job["before_script"][-1] == (
        '/tmp/edgeprof-venv/bin/python -m pip install -q "$EDGEPROF_PIP_SPEC"'
    )
    out = "$EDGEPROF_CI_OUT"
    assert job["artifacts"]["reports"]["junit"] == [
        f"{out}/{ci.JUNIT}",
        f"{out}/{ci.COMPARE_JUNIT}",
    ]
    assert job["artifacts"]["when"] == "always"  # a failed gate still publishes its files
