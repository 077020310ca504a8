"""The CI step: the one script behind the GitHub Action (``action.yml``) and the GitLab CI
template (``integrations/gitlab-ci.yml``), run as ``python -m edgeprof.cli.ci``.

It profiles a command (or an Auptimizer ``env.template``) under the limits and budgets the
job gives, compares the results with a baseline when the job has one, and leaves the
Markdown summaries and JUnit files where the CI publishes them.  Inputs are environment
variables, as both CIs pass them (an action's inputs, a job's ``variables``):

- ``EDGEPROF_CI_COMMAND``: the workload, split as a shell would split it (no shell runs it);
  or ``EDGEPROF_CI_TEMPLATE``: an ``env.template``.  One of the two.
- ``EDGEPROF_CI_ARGS``: options of ``edgeprof run`` (``--cpus 1 --memory 1g --repeat 5
  --budgets budgets.yml``), split the same way.
- ``EDGEPROF_CI_OUT``: the results directory (``edgeprof-results``).
- ``EDGEPROF_CI_BASELINE``: a baseline's results directory; compared when it holds results.
  On GitLab, in a pipeline that is not the default branch's, the step first fetches it: the
  results directory of the last successful job of the same name on the default branch
  (``EDGEPROF_CI_BASELINE_JOB`` names another), through the job-artifacts API with the job's
  own token.  On GitHub a step before this one restores it (``actions/cache``,
  ``actions/download-artifact``).
- ``EDGEPROF_CI_THRESHOLD``: ``compare``'s threshold (``5%``).
- ``EDGEPROF_CI_COMPARE_ARGS``: options of ``edgeprof compare`` that decide what is paired
  (``--allow-missing``, ``--ignore-limits``, ``--ignore-target``, ``--setting LIMITS``,
  ``--pair BASE=CUR``),
  split the same way: a pull request that drops a model on purpose, or changes the limits,
  had no way to say so, though compare's notes told the reviewer to pass them.
- ``EDGEPROF_CI_SUDO``: ``auto`` (through ``sudo -n`` when not root and sudo asks no
  password: the cgroup backend needs root, which hosted runners give that way), ``always``
  or ``never``.

In the results directory: ``summary.md`` and ``junit.xml`` (the run and its budgets),
``compare.md`` and ``compare.xml`` (against the baseline).  On GitHub, edgeprof appends both
summaries to ``$GITHUB_STEP_SUMMARY`` itself, this step adds a line there (and in the log)
where the baseline it names was not compared (it holds no results; compare's error; on the
default branch's own build, which makes the baseline, a note that says so, no warning), and
it writes ``results``, ``exit-code``, ``compared`` to ``$GITHUB_OUTPUT``; on GitLab it
prints the summaries into the job's log (the template declares the files as artifacts and
JUnit reports).  The exit code:
the run's when it failed (the workload's, 3 for a breached budget), else the comparison's
(3 for a regression), else 0; 2 for a bad input here, with one line.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..errors import ConfigError
from . import EXIT_BUDGET, EXIT_ERROR

ERROR_PREFIX = "edgeprof: error: "


class Runner(Protocol):
    """Runs an edgeprof command line, its output passed through to the log; its exit code.
    ``errors``, where given, receives the command's error lines (without their prefix)."""

    def __call__(self, argv: Sequence[str], errors: list[str] | None = None) -> int: ...

SUMMARY, JUNIT = "summary.md", "junit.xml"
COMPARE_SUMMARY, COMPARE_JUNIT = "compare.md", "compare.xml"


@dataclass(frozen=True)
class Step:
    """What the job asked for (:meth:`from_env`)."""

    command: tuple[str, ...]
    template: Path | None
    args: tuple[str, ...]
    out: Path
    baseline: Path | None
    threshold: str
    sudo: str
    compare_args: tuple[str, ...] = ()

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Step:
        def get(name: str) -> str:
            return env.get(f"EDGEPROF_CI_{name}", "").strip()

        command, template = _split(get("COMMAND"), "COMMAND"), get("TEMPLATE")
        if bool(command) == bool(template):
            raise ConfigError(
                "set EDGEPROF_CI_COMMAND (the workload) or EDGEPROF_CI_TEMPLATE (an "
                "env.template), one of the two"
            )
        sudo = get("SUDO") or "auto"
        if sudo not in ("auto", "always", "never"):
            raise ConfigError(f"EDGEPROF_CI_SUDO={sudo!r}: auto, always or never")
        args = _split(get("ARGS"), "ARGS")
        taken = {"--out", "--summary", "--junit", "-e", "--environment", "--"}
        clash = [a for a in args if a.split("=", 1)[0] in taken]
        if clash:
            raise ConfigError(
                f"EDGEPROF_CI_ARGS: {clash[0]} is the CI step's own (EDGEPROF_CI_OUT, "
                "EDGEPROF_CI_TEMPLATE, EDGEPROF_CI_COMMAND)"
            )
        return cls(
            command=command,
            template=Path(template) if template else None,
            args=args,
            out=Path(get("OUT") or "edgeprof-results"),
            baseline=Path(get("BASELINE")) if get("BASELINE") else None,
            threshold=_threshold(get("THRESHOLD") or "5%"),
            sudo=sudo,
            compare_args=_compare_args(_split(get("COMPARE_ARGS"), "COMPARE_ARGS")),
        )

    def run_argv(self) -> list[str]:
        argv = ["run", *self.args, "--out", str(self.out)]
        argv += ["--summary", str(self.out / SUMMARY), "--junit", str(self.out / JUNIT)]
        if self.template is not None:
            return [*argv, "-e", str(self.template)]
        return [*argv, "--", *self.command]

    def compare_argv(self) -> list[str] | None:
        """``compare BASELINE OUT …``, or ``None`` when there is no baseline to compare."""
        if self.baseline is None or not _has_results(self.baseline):
            return None
        return [
            "compare", str(self.baseline), str(self.out), "--threshold", self.threshold,
            "--summary", str(self.out / COMPARE_SUMMARY),
            "--junit", str(self.out / COMPARE_JUNIT), *self.compare_args,
        ]  # fmt: skip


COMPARE_FLAGS = frozenset({"--allow-missing", "--ignore-limits", "--ignore-target"})
COMPARE_VALUED = {"--setting": "LIMITS", "--pair": "BASE=CUR"}
"""What ``EDGEPROF_CI_COMPARE_ARGS`` may hold: compare's options on which cells are paired.
The rest are the step's own (its threshold, summary and JUnit files)."""


def _compare_args(args: tuple[str, ...]) -> tuple[str, ...]:
    """Checked before the profiling, as the threshold is: an option compare would refuse
    had failed the step only after the whole run."""
    known = ", ".join(sorted(COMPARE_FLAGS | {f"{k} {v}" for k, v in COMPARE_VALUED.items()}))
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        name = arg.split("=", 1)[0]
        if name in COMPARE_VALUED:
            if "=" not in arg and (not rest or rest.pop(0).startswith("-")):
                raise ConfigError(
                    f"EDGEPROF_CI_COMPARE_ARGS: {name} needs a value ({COMPARE_VALUED[name]})"
                )
        elif arg not in COMPARE_FLAGS:
            raise ConfigError(
                f"EDGEPROF_CI_COMPARE_ARGS: {arg!r} is not one of compare's options on which "
                f"cells are paired ({known}); the threshold goes in EDGEPROF_CI_THRESHOLD"
            )
    return args


def _threshold(text: str) -> str:
    """Checked before the profiling: a bad one had failed compare after the whole run (and
    passed unnoticed without a baseline)."""
    from ..units import parse_threshold

    try:
        parse_threshold(text)
    except ConfigError as exc:
        raise ConfigError(f"EDGEPROF_CI_THRESHOLD: {exc}") from None
    return text


def _split(text: str, name: str) -> tuple[str, ...]:
    try:
        return tuple(shlex.split(text))
    except ValueError as exc:  # an unclosed quote
        raise ConfigError(f"EDGEPROF_CI_{name}: {exc}") from exc


def _has_results(directory: Path) -> bool:
    """Whether ``report``/``compare`` would find results in ``directory`` (to their depth)."""
    from ..resultdirs import result_files

    return directory.is_dir() and bool(result_files(directory))


def edgeprof_argv(sudo: str, env: Mapping[str, str]) -> list[str]:
    """This interpreter's edgeprof, through ``sudo -n`` where ``sudo`` asks for it (the
    workload's ``PATH`` kept: sudo resets it)."""
    me = [sys.executable, "-m", "edgeprof"]
    if sudo == "never" or os.geteuid() == 0:
        return me
    through = ["sudo", "-n", "-E", "env", f"PATH={env.get('PATH', os.defpath)}", *me]
    if sudo == "always":
        return through
    if shutil.which("sudo") is None:
        return me
    ok = subprocess.run(["sudo", "-n", "true"], capture_output=True, check=False).returncode == 0
    return through if ok else me


PULL_REQUEST_EVENTS = frozenset({"pull_request", "pull_request_target", "merge_group"})
"""GitHub's events of a change under review: where a comparison with the baseline is meant."""


def baseline_build(env: Mapping[str, str]) -> str | None:
    """The default branch's name where this build is that branch's own, which makes the
    baseline and compares with none; ``None`` elsewhere, or where the CI does not say.

    GitLab names both branches (``CI_COMMIT_BRANCH``, unset in a merge request's pipeline,
    and ``CI_DEFAULT_BRANCH``).  GitHub sets no variable for the default branch: its name is
    in the event's payload (``$GITHUB_EVENT_PATH``, ``repository.default_branch``), and a
    pull request's build, whose ref is its merge ref, is never the default branch's."""
    if env.get("GITLAB_CI") == "true":
        branch, default = env.get("CI_COMMIT_BRANCH"), env.get("CI_DEFAULT_BRANCH")
        mine = bool(default) and branch == default and not env.get("CI_MERGE_REQUEST_IID")
        return default if mine else None
    if env.get("GITHUB_ACTIONS") != "true" or env.get("GITHUB_EVENT_NAME") in PULL_REQUEST_EVENTS:
        return None
    default = _github_default_branch(env.get("GITHUB_EVENT_PATH"))
    return default if default and env.get("GITHUB_REF") == f"refs/heads/{default}" else None


def _github_default_branch(event_path: str | None) -> str | None:
    """``repository.default_branch`` of GitHub's event payload; ``None`` where it is not
    there (an event without the repository, an unreadable file: then no build is taken for
    the default branch's, and a missing baseline is warned of as before)."""
    import json

    if not event_path:
        return None
    try:
        payload = json.loads(Path(event_path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    repository = payload.get("repository") if isinstance(payload, dict) else None
    default = repository.get("default_branch") if isinstance(repository, dict) else None
    return default if isinstance(default, str) and default else None


def fetch_gitlab_baseline(step: Step, env: Mapping[str, str]) -> str | None:
    """On GitLab, off the default branch: the default branch's last results (the artifacts
    of the job of this name, their ``EDGEPROF_CI_OUT`` directory) into the baseline
    directory.  What it did, in a line for the log; ``None`` where it does not apply."""
    default = env.get("CI_DEFAULT_BRANCH")
    if env.get("GITLAB_CI") != "true" or step.baseline is None or _has_results(step.baseline):
        return None
    if default is None or baseline_build(env) is not None:
        return None  # the default branch makes the baseline; it compares with none
    import io
    import urllib.error
    import urllib.parse
    import urllib.request
    import zipfile

    job = env.get("EDGEPROF_CI_BASELINE_JOB") or env.get("CI_JOB_NAME", "")
    url = (
        f"{env.get('CI_API_V4_URL', '')}/projects/{env.get('CI_PROJECT_ID', '')}/jobs/artifacts/"
        f"{urllib.parse.quote(default, safe='')}/download?job={urllib.parse.quote(job)}"
    )
    request = urllib.request.Request(url, headers={"JOB-TOKEN": env.get("CI_JOB_TOKEN", "")})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            archive = zipfile.ZipFile(io.BytesIO(response.read()))
    except (urllib.error.URLError, OSError, zipfile.BadZipFile) as exc:
        return f"no baseline from {default} (job {job}): {exc}"
    prefix = step.out.as_posix().strip("/") + "/"
    members = [m for m in archive.infolist() if m.filename.startswith(prefix)]
    for m in members:
        relative = Path(m.filename[len(prefix) :])
        if m.is_dir() or ".." in relative.parts or relative.is_absolute():
            continue  # nothing outside the baseline directory
        target = step.baseline / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(archive.read(m))
    return f"baseline: {len(members)} file(s) of {default}'s job {job} in {step.baseline}"


def run_step(step: Step, env: Mapping[str, str], runner: Runner) -> int:
    """The step: profile, compare, publish; its exit code (see the module's docstring)."""
    fetched = fetch_gitlab_baseline(step, env)
    if fetched is not None:
        print(f"edgeprof ci: {fetched}", flush=True)
    edgeprof = edgeprof_argv(step.sudo, env)
    made = not step.out.exists()
    step.out.mkdir(parents=True, exist_ok=True)  # the summaries go in it: it must exist first
    run_rc = runner([*edgeprof, *step.run_argv()])
    if run_rc == EXIT_ERROR and made and not any(step.out.iterdir()):
        step.out.rmdir()  # input run refused: nothing created, as run itself promises
    # Refused input ran nothing: no comparison of results that are not there.
    compare = None if run_rc == EXIT_ERROR else step.compare_argv()
    errors: list[str] = []
    compare_rc = None if compare is None else runner([*edgeprof, *compare], errors)
    rc = run_rc or compare_rc or 0
    said = _comparison_note(step, run_rc, compare_rc, errors, baseline_build(env))
    if said is not None:
        _note(said, env)
    # compared: a verdict was reached (0 or 3); an error of compare's own (2) reached none.
    _publish(step, env, rc, compare_rc in (0, EXIT_BUDGET))
    return rc


def _comparison_note(
    step: Step,
    run_rc: int,
    compare_rc: int | None,
    errors: Sequence[str],
    default_branch: str | None = None,
) -> str | None:
    """Why no baseline was compared, where the job named one: the page had shown only the
    run's table, its only trace ``compared=false`` in ``$GITHUB_OUTPUT`` (a cache miss, the
    path-key trap of docs/ci.md) or, for compare's own error, the log.  The default branch's
    own build (``default_branch``, :func:`baseline_build`) makes the baseline and has none
    by design: the template fetches none there, and the Action's documented workflow
    restores one only for a pull request; the cache-miss warning had been on every such
    build's page."""
    if step.baseline is None or run_rc == EXIT_ERROR:
        return None  # no baseline asked for; a refused run, which says why itself
    if compare_rc is None and default_branch is not None:
        # A failed job's artifacts are not GitLab's "last successful", and the documented
        # workflow's save steps run only after a passing step: the last passing build's stay.
        becomes = (
            f"this run's results ({step.out}) become the baseline"
            if run_rc == 0
            else "a failed build's results do not become the baseline (the last passing "
            "build's stay)"
        )
        return f"On the default branch ({default_branch}): nothing to compare with; {becomes}"
    if compare_rc is None:
        return (
            f"⚠️ No baseline compared: no results in {step.baseline} (a cache miss, or the first "
            "run), so no regression was checked; restore a baseline's results directory "
            "there before this step (saved under the path it is restored to)"
        )
    if compare_rc == EXIT_ERROR:
        why = errors[-1] if errors else "its error is in the step's log"
        return (
            f"❌ No baseline compared: edgeprof compare {step.baseline} {step.out} stopped "
            f"(exit {EXIT_ERROR}): {why}; the job fails until the baseline can be compared "
            "(fix or replace it)"
        )
    return None


def _note(text: str, env: Mapping[str, str]) -> None:
    """One line for the log and, on GitHub, for the step summary, where a reviewer looks."""
    print(f"edgeprof ci: {text}", flush=True)
    summary = env.get("GITHUB_STEP_SUMMARY")
    if summary:
        from ..report.table import markdown_text
        from ..storage import append_locked

        try:
            append_locked(Path(summary), f"{markdown_text(text)}\n\n")
        except ConfigError as exc:
            print(f"edgeprof ci: warning: {exc}", file=sys.stderr, flush=True)


def _call(argv: Sequence[str], errors: list[str] | None = None) -> int:
    """The command, its stderr passed on line by line where its error lines are wanted."""
    if errors is None:
        return subprocess.call(list(argv))
    with subprocess.Popen(list(argv), stderr=subprocess.PIPE) as proc:
        assert proc.stderr is not None  # stderr=PIPE
        for raw in proc.stderr:
            line = raw.decode(errors="replace")
            sys.stderr.write(line)
            sys.stderr.flush()
            if line.startswith(ERROR_PREFIX):
                errors.append(line[len(ERROR_PREFIX) :].rstrip("\n"))
        return proc.wait()


def _outputs(env: Mapping[str, str], out: Path | str, rc: int, compared: bool) -> None:
    outputs = env.get("GITHUB_OUTPUT")
    if outputs:  # the step's outputs, for the job's later steps
        with open(outputs, "a", encoding="utf-8") as f:
            f.write(f"results={out}\nexit-code={rc}\ncompared={str(compared).lower()}\n")


def _publish(step: Step, env: Mapping[str, str], rc: int, compared: bool) -> None:
    _outputs(env, step.out, rc, compared)
    if env.get("GITLAB_CI") == "true":  # no step summary there: the job's log shows them
        for name in (SUMMARY, COMPARE_SUMMARY):
            path = step.out / name
            if path.is_file():
                print(f"\n--- {path}\n{path.read_text(encoding='utf-8')}", flush=True)


def main(env: Mapping[str, str] | None = None, runner: Runner | None = None) -> int:
    env = os.environ if env is None else env
    try:
        step = Step.from_env(env)
    except ConfigError as exc:
        print(f"edgeprof ci: error: {_as_inputs(str(exc), env)}", file=sys.stderr)
        # The job's later steps read the outputs: a refused input had left them unset.
        out = env.get("EDGEPROF_CI_OUT", "").strip() or "edgeprof-results"
        _outputs(env, out, EXIT_ERROR, False)
        return EXIT_ERROR
    return run_step(step, env, runner or _call)


def _as_inputs(text: str, env: Mapping[str, str]) -> str:
    """The GitHub Action's input names (``compare-args``) for the variables it sets from
    them (``EDGEPROF_CI_COMPARE_ARGS``), which a workflow's author never wrote: in the
    action's steps (GitHub sets ``GITHUB_ACTION_PATH`` in a composite action's)."""
    if not env.get("GITHUB_ACTION_PATH"):
        return text
    import re

    return re.sub(
        r"EDGEPROF_CI_([A-Z_]+)", lambda m: f"input '{m[1].lower().replace('_', '-')}'", text
    )


if __name__ == "__main__":
    raise SystemExit(main())
