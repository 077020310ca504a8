"""The GitHub Actions recipe: one workflow, the parts as a matrix, a merge job that gates.

Each matrix entry runs its part on its own runner and uploads the part's directory as an
artifact; the merge job (``needs`` every part, and runs even when one failed, because a
failed workload is a result and ``merge`` refuses what is missing) downloads them, merges
them with the sweep's budgets (exit 3 on a breach fails the job; its report files go into
``sweep/``, the one directory it uploads) and, given a baseline, compares.  The part index
reaches the script through ``env``, never pasted into its text, as action.yml passes its
inputs.  Hosted runners give root through ``sudo`` without a
password, which the cgroup backend needs; edgeprof runs the workload as the runner's user,
with edgeprof's venv first on ``PATH`` (where the workload's own set-up steps install).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping

from ...errors import ConfigError
from ...names import printable
from ...units import format_binary
from ...version import __version__
from . import Files, Sweep, dump_yaml

WORKFLOW = "edgeprof-sweep.yml"
ARTIFACT = "edgeprof-part-"
VENV_DIR = "$RUNNER_TEMP/edgeprof"
VENV = f'"{VENV_DIR}"'

OPTIONS = {
    "runs_on": "ubuntu-24.04",
    "install": f"edgeprof=={__version__}",
    "python": "python3",
    "baseline": "",
}
"""``edgeprof recipe github``'s options and their defaults."""

SIZES_PARTS = False
"""A part gets a whole runner of its label's size: the workflow asks for no CPUs or memory
(``--part-cpus``/``--part-memory`` are refused, and no part needs them)."""

GB = 1000**3
HOSTED = {
    label: (4, 16 * GB)
    for label in (
        "ubuntu-latest", "ubuntu-24.04", "ubuntu-22.04", "ubuntu-24.04-arm", "ubuntu-22.04-arm"
    )
}  # fmt: skip
"""GitHub's standard hosted Linux runners by label → their CPUs and memory, for public
repositories ("About GitHub-hosted runners", "Standard GitHub-hosted runners for public
repositories": 4 CPUs, 16 GB; a private repository's Linux runner has 2 CPUs, 7 GB).  A
part whose largest setting exceeds its runner is refused by ``run`` there (``--cpus 8
exceeds the 4 CPU(s) available``), so it is refused here, before the workflow is written."""


def check_expressions(sweep: Sweep, options: Mapping[str, str]) -> None:
    """Refuse ``${{`` in what the workflow's steps are made of, in one line: Actions
    evaluates an expression anywhere in a ``run:`` (before the shell sees it, so no quoting
    keeps it text) or ``runs-on:``, and has no escape for one; an argument
    ``'${{ secrets.GITHUB_TOKEN }}'`` had been pasted into ``run:`` as it was (a security
    review's)."""
    given = [*sweep.options, *sweep.command, *sweep.gate, *options.values()]
    for word in given:
        if "${{" in word:
            raise ConfigError(
                f"{printable(word)}: GitHub Actions would evaluate its ${{{{ … }}}} in the "
                "workflow, which has no way to keep it text: pass it through an environment "
                "variable, or use another engine"
            )


def check_runner(sweep: Sweep, label: str) -> None:
    """Refuse a sweep whose largest setting a hosted runner of ``label`` cannot hold
    (:data:`HOSTED`); a label of its own (self-hosted, a larger runner) is the user's."""
    if label not in HOSTED:
        return
    cpus, memory = HOSTED[label]
    most_cpus, most_memory = sweep.largest
    for flag, most, has, shown in (
        ("--cpus", most_cpus, cpus, f"{cpus} CPUs"),
        ("--memory", most_memory, memory, f"{memory // GB} GB"),
    ):
        if most is not None and most > has:
            given = most if flag == "--cpus" else format_binary(most)
            raise ConfigError(
                f"{flag} {given}: GitHub's hosted runner {label} has {shown} (for a public "
                "repository; a private one's has 2 CPUs, 7 GB): give --runs-on the label of a "
                "larger or self-hosted runner, or a smaller setting"
            )


def render(sweep: Sweep, options: Mapping[str, str]) -> tuple[Files, list[str]]:
    """``options`` (:data:`OPTIONS`): ``runs_on``, ``install`` (pip's requirement for
    edgeprof), ``python``, ``baseline`` (a results directory in the repository, or empty)."""
    check_expressions(sweep, options)
    check_runner(sweep, options["runs_on"])
    n = sweep.parts
    edgeprof = f"{VENV}/bin/edgeprof"
    requirement = options["install"]
    if sweep.gpus:
        # Each part's --gpus N must find N GPUs and NVML on its runner: a hosted one has
        # neither, and the recipe had written a workflow whose every part was refused.
        if options["runs_on"] == OPTIONS["runs_on"]:
            raise ConfigError(
                f"--gpus {sweep.gpus}: GitHub's hosted runner {OPTIONS['runs_on']} has no "
                "GPU; give --runs-on the label of a runner with GPUs"
            )
        if requirement == OPTIONS["install"]:
            requirement = f"edgeprof[gpu]=={__version__}"
    install = {
        "name": "Install edgeprof",
        "run": f"{shlex.join([options['python']])} -m venv {VENV} && "
        f"{VENV}/bin/python -m pip install -q {shlex.join([requirement])}",
    }
    setup = [{"uses": "actions/checkout@v4"}, install]
    # The matrix value reaches the script as $PART: quoted by the shell, never by us.  sudo
    # resets PATH (secure_path): env puts the venv first again, so edgeprof and a workload's
    # `python` are the venv's, where the workload's own set-up steps install its packages.
    part_line = sweep.part_line(
        "PART", "part-", executable=f'env "PATH={VENV_DIR}/bin:$PATH" edgeprof'
    )
    part_job = {
        "name": f"part ${{{{ matrix.part }}}} of {n}",
        "runs-on": options["runs_on"],
        "strategy": {"fail-fast": False, "matrix": {"part": list(range(1, n + 1))}},
        "steps": [
            *setup,
            {
                "name": "Run the part (root for the cgroup backend; the workload runs as you)",
                "env": {"PART": "${{ matrix.part }}"},
                "run": f"sudo {part_line}",
            },
            {
                "uses": "actions/upload-artifact@v4",
                "if": "always()",
                "with": {
                    "name": f"{ARTIFACT}${{{{ matrix.part }}}}",
                    "path": "part-${{ matrix.part }}",
                },
            },
        ],
    }
    parts = [f"parts/{ARTIFACT}{i}" for i in range(1, n + 1)]
    # The report files go into sweep/, the one directory the job uploads.
    merge = shlex.join(sweep.merge_command(parts, "sweep", files_in_out=True)[1:])
    merge_steps = [
        *setup,
        {
            "uses": "actions/download-artifact@v4",
            "with": {"pattern": f"{ARTIFACT}*", "path": "parts"},
        },
        {
            "name": "Merge the parts; check the budgets",
            "run": f"{edgeprof} {merge}",
        },
    ]
    if options.get("baseline"):
        merge_steps.append(
            {
                "name": "Compare with the baseline",
                "if": "!cancelled()",
                "env": {"BASELINE": options["baseline"]},
                "run": f'{edgeprof} compare "$BASELINE" sweep',
            }
        )
    merge_steps.append(
        {
            "uses": "actions/upload-artifact@v4",
            "if": "!cancelled()",
            "with": {"name": "edgeprof-sweep", "path": "sweep"},
        }
    )
    workflow = {
        "name": "edgeprof sweep",
        "on": {"workflow_dispatch": {}, "pull_request": {}},
        "permissions": {"contents": "read"},
        "jobs": {
            "part": part_job,
            "merge": {
                "needs": "part",
                "if": "!cancelled()",
                "runs-on": options["runs_on"],
                "steps": merge_steps,
            },
        },
    }
    # The workflow asks GitHub for no CPUs or memory: a part gets its runner, whole.
    runner = options["runs_on"]
    header = (
        f"# {sweep.origin}\n# {n} parts, one runner each (runs-on: {runner}), merged by the "
        "last job.\n"
    )
    text = header + dump_yaml(workflow)
    return {WORKFLOW: text}, [
        f"copy {{out}}/{WORKFLOW} into .github/workflows/ of the workload's repository",
    ]
