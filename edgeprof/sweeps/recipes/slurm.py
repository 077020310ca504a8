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

import shlex
from collections.abc import Mapping

from . import Files, Sweep

PART_FILE, MERGE_FILE, SUBMIT_FILE = "part.sbatch", "merge.sbatch", "submit.sh"

OPTIONS = {"results": "edgeprof-parts", "partition": "", "time": ""}
"""``edgeprof recipe slurm``'s options and their defaults."""


def render(sweep: Sweep, options: Mapping[str, str]) -> tuple[Files, list[str]]:
    """``options`` (:data:`OPTIONS`): ``results`` (the parts' and the merged sweep's
    directory, relative to where the jobs are submitted), ``partition`` and ``time``."""
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
