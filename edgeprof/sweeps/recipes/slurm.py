"""The Slurm recipe: a job array runs the parts, a job that depends on it merges them.

``part.sbatch`` is an array of N tasks, ``--cpus-per-task`` whole CPUs and ``--mem`` each
(with ``task/cgroup``'s ``ConstrainCores`` the task's cores are its own, and edgeprof pins
runs within them); ``merge.sbatch`` runs after the array whatever its tasks' exit codes
(``afterany``: a failed workload is a result, and ``merge`` says what is missing);
``submit.sh`` submits both from the directory the workload's paths are relative to.
edgeprof needs root to create the run groups that enforce a setting's limits; as the job's
user it measures with the process backend, within the cores and memory Slurm gives the task.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping

from ...errors import ConfigError
from ...names import has_control, printable
from . import Files, Sweep

PART_FILE, MERGE_FILE, SUBMIT_FILE = "part.sbatch", "merge.sbatch", "submit.sh"

OPTIONS = {"results": "edgeprof-parts", "partition": "", "time": ""}
"""``edgeprof recipe slurm``'s options and their defaults."""


_TIME = re.compile(r"(\d{1,9}-)?\d{1,9}(:\d{1,9}){0,2}|UNLIMITED|INFINITE", re.IGNORECASE)
"""sbatch's ``--time``: minutes, minutes:seconds, hours:minutes:seconds, days-hours,
days-hours:minutes, days-hours:minutes:seconds, or no limit."""
_PARTITION = re.compile(r"[A-Za-z0-9_.-]+(,[A-Za-z0-9_.-]+)*")
"""A partition's name, or a comma-separated list of them, as ``#SBATCH`` takes it."""


def check_options(options: Mapping[str, str]) -> None:
    """Refuse what a ``#SBATCH`` line cannot hold, in one line: each is pasted into one,
    where a newline in ``--time $'1:00\\ntouch PWN2'`` had put a command among the
    directives (sbatch stops reading them at the first command), and a space ends the
    option's value."""
    for key, pattern, what in (
        ("time", _TIME, "minutes, M:S, H:M:S, D-H, D-H:M or D-H:M:S, or UNLIMITED"),
        ("partition", _PARTITION, "a partition's name (letters, digits, _ . -), or a list"),
    ):
        value = options.get(key) or ""
        if value and not pattern.fullmatch(value):
            raise ConfigError(f"--{key} {printable(value)}: expected {what}")
    results = options.get("results") or ""
    if has_control(results) or any(c.isspace() for c in results):
        raise ConfigError(
            f"--results {printable(results)}: a directory an #SBATCH --output line can name "
            "holds no space or control character"
        )


def render(sweep: Sweep, options: Mapping[str, str]) -> tuple[Files, list[str]]:
    """``options`` (:data:`OPTIONS`): ``results`` (the parts' and the merged sweep's
    directory, relative to where the jobs are submitted), ``partition`` and ``time``
    (:func:`check_options`)."""
    check_options(options)
    results = options["results"].rstrip("/") or "."
    extra = [f"#SBATCH --partition={options['partition']}"] if options.get("partition") else []
    if options.get("time"):
        extra.append(f"#SBATCH --time={options['time']}")
    head = f"#!/bin/bash\n# {sweep.origin}\n"
    part = (
        head
        + f"# {sweep.describe()}\n"
        + "#SBATCH --job-name=edgeprof-part\n"
        + f"#SBATCH --array=1-{sweep.parts}\n"
        + "#SBATCH --ntasks=1\n"
        + f"#SBATCH --cpus-per-task={sweep.cpus}\n"
        + f"#SBATCH --mem={sweep.memory_mib}M\n"
        + (f"#SBATCH --gres=gpu:{sweep.gpus}\n" if sweep.gpus else "")
        + f"#SBATCH --output={results}/part-%a.log\n"
        + "".join(line + "\n" for line in extra)
        + f"exec {sweep.part_line('SLURM_ARRAY_TASK_ID', f'{results}/part-')}\n"
    )
    parts = [f"{results}/part-{i}" for i in range(1, sweep.parts + 1)]
    merge = (
        head
        + "#SBATCH --job-name=edgeprof-merge\n"
        + "#SBATCH --ntasks=1\n"
        + "#SBATCH --cpus-per-task=1\n"
        + f"#SBATCH --output={results}/merge.log\n"
        + "".join(line + "\n" for line in extra)
        + f"exec {shlex.join(sweep.merge_command(parts, f'{results}/sweep'))}\n"
    )
    submit = (
        "#!/bin/sh\n"
        f"# {sweep.origin}\n"
        "# Run it where the workload's paths start: the jobs run in this directory.\n"
        "set -eu\n"
        'here=$(dirname "$0")\n'
        f"mkdir -p {shlex.quote(results)}\n"
        f'parts=$(sbatch --parsable "$here/{PART_FILE}")\n'
        "parts=${parts%%;*}  # --parsable prints ID;CLUSTER on a federation\n"
        'echo "$parts"  # the job ids, one a line: the parts\' array, then the merge\n'
        f'sbatch --parsable --dependency=afterany:"$parts" "$here/{MERGE_FILE}"\n'
    )
    return {PART_FILE: part, MERGE_FILE: merge, SUBMIT_FILE: submit}, [
        f"sh {{out}}/{SUBMIT_FILE}   # from the directory the workload's paths are relative to",
    ]
