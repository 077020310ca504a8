"""The Kubernetes recipe: an indexed Job runs the parts, a second Job merges them.

- ``completionMode: Indexed``: part ``JOB_COMPLETION_INDEX + 1`` of N, each pod once.
- Guaranteed QoS, whole CPUs (requests equal to limits): the kubelet's static CPU manager
  then gives the pod exclusive cores, so no other pod's work lands on a measured core; the
  part's pinned runs take their cores from that set (edgeprof honours its affinity).
- The pod is privileged, so that edgeprof creates the run groups that enforce each
  setting's limits, below the pod's own group (never outside it).  On cgroup v2 the
  container's group is its namespace's root, which holds the container's processes; the
  no-internal-process rule forbids giving controllers to its children until they leave it,
  so the part's shell first moves itself into a leaf (``/sys/fs/cgroup/edgeprof-self``,
  still inside the pod's group), then becomes edgeprof.  It writes ``0``: the kernel moves
  the writing process for a pid of 0 (``cgroup_procs_write_start`` in
  kernel/cgroup/cgroup.c: ``if (pid) … else tsk = current``), and ``echo`` is the shell's
  builtin, so the writer is the shell itself, with no ``$$`` to escape.  An unprivileged
  pod cannot create groups: edgeprof would measure in the process backend, under the pod's
  own limits.
- ``podFailurePolicy``: a pod disrupted (a node drained or lost) runs its part again and
  is not counted; a part that exits non-zero (a failed workload is a result, bad input an
  error) is not retried: its results are already in the volume, and ``merge`` says what
  is missing.
- Results go to a ``ReadWriteMany`` volume claim every pod mounts at :data:`RESULTS`, the
  merge's report files too (the container's own directory is gone with it), each sweep's
  under its Job's name (:func:`results_dir`), so two sweeps on one claim stay apart.
- Kubernetes expands ``command`` before the container starts: ``$(VAR)`` becomes the
  container's variable ``VAR`` and ``$$`` a single ``$`` (``V1Container.command``: "Double
  $$ are reduced to a single $"; kubernetes/third_party/forked/golang/expansion).  The
  part's script had said ``echo $$ > …/cgroup.procs``, which reached the shell as
  ``echo $ >`` (an I/O error, and the shell never left the namespace's root): every ``$``
  of a command is written as ``$$`` (:func:`literal`), so the shell gets the text as it is.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from typing import Any

from ...errors import ConfigError
from ...names import printable
from . import Files, Sweep, dump_yaml

RESULTS = "/results"
PARTS_FILE, MERGE_FILE = "parts.yaml", "merge.yaml"

OPTIONS = {"image": "", "name": "edgeprof-sweep", "claim": "edgeprof-results", "namespace": ""}
"""``edgeprof recipe k8s``'s options and their defaults (``image`` has none: it is needed)."""

_LEAF = (
    # cgroup v2 only (a v1 node has no cgroup.controllers there): see the module docstring.
    "if [ -f /sys/fs/cgroup/cgroup.controllers ]; then "
    "mkdir -p /sys/fs/cgroup/edgeprof-self && echo 0 > /sys/fs/cgroup/edgeprof-self/cgroup.procs; "
    "fi"
)


_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
NAME_MAX = 63 - len("-merge")
"""A Job's name is a label value (the pods' ``job-name``): at most 63 characters, and the
merge Job's adds ``-merge``."""


def check_name(name: str) -> None:
    """Refuse a ``--name`` Kubernetes would refuse, in one line: it names the Jobs and the
    sweep's directory on the claim."""
    if not _NAME.fullmatch(name) or len(name) > NAME_MAX:
        raise ConfigError(
            f"--name {printable(name)}: a Job's name is lower-case letters, digits and '-', "
            f"starting and ending with a letter or digit, at most {NAME_MAX} characters"
        )


def literal(word: str) -> str:
    """``word`` as a ``command`` item Kubernetes hands on unchanged: each ``$`` doubled, the
    escape its expansion of ``$(VAR)`` reduces back to one (module docstring)."""
    return word.replace("$", "$$")


def results_dir(name: str) -> str:
    """The sweep's directory on the claim: its parts and its merge, under the Job's name
    (two sweeps on one claim had written the same ``/results/part-1``)."""
    return f"{RESULTS}/{name}"


def render(sweep: Sweep, options: Mapping[str, str]) -> tuple[Files, list[str]]:
    """``options`` (:data:`OPTIONS`): ``image`` (with edgeprof, the workload and its
    models), ``name`` (the Job's), ``claim`` (the results' volume claim), ``namespace``."""
    name, image, claim = options["name"], options["image"], options["claim"]
    check_name(name)
    if not image:
        raise ConfigError(
            "the k8s recipe needs --image: one with edgeprof, the workload and its models"
        )
    metadata: dict[str, Any] = {"name": name, "labels": {"app.kubernetes.io/name": "edgeprof"}}
    if options.get("namespace"):
        metadata["namespace"] = options["namespace"]
    volume = {"name": "results", "persistentVolumeClaim": {"claimName": claim}}
    mount = {"name": "results", "mountPath": RESULTS}
    size = {"cpu": str(sweep.cpus), "memory": f"{sweep.memory_mib}Mi"}
    if sweep.gpus:  # the NVIDIA device plugin's resource: the part's GPUs, its own
        size["nvidia.com/gpu"] = str(sweep.gpus)
    where = results_dir(name)
    script = (
        f"{_LEAF}; part=$((JOB_COMPLETION_INDEX + 1)); "
        f"exec {sweep.part_line('part', f'{where}/part-')}"
    )
    parts = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata,
        "spec": {
            "completionMode": "Indexed",
            "completions": sweep.parts,
            "parallelism": sweep.parts,
            "backoffLimitPerIndex": 0,
            "podFailurePolicy": {
                "rules": [
                    {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
                    {"action": "FailIndex", "onExitCodes": {"operator": "NotIn", "values": [0]}},
                ]
            },
            "template": {
                "metadata": {"labels": {"app.kubernetes.io/name": "edgeprof"}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "part",
                            "image": image,
                            "command": ["sh", "-c", literal(script)],
                            "resources": {"requests": size, "limits": size},
                            "securityContext": {"privileged": True},
                            "volumeMounts": [mount],
                        }
                    ],
                    "volumes": [volume],
                },
            },
        },
    }
    part_dirs = [f"{where}/part-{i}" for i in range(1, sweep.parts + 1)]
    merge_meta = {**metadata, "name": f"{name}-merge"}
    merge = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": merge_meta,
        "spec": {
            "backoffLimit": 0,
            "template": {
                "metadata": {"labels": {"app.kubernetes.io/name": "edgeprof"}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "merge",
                            "image": image,
                            "command": [
                                literal(w)
                                for w in sweep.merge_command(
                                    part_dirs, f"{where}/sweep", files_in_out=True
                                )
                            ],
                            "volumeMounts": [mount],
                        }
                    ],
                    "volumes": [volume],
                },
            },
        },
    }
    head = f"# {sweep.origin}\n"
    files = {
        PARTS_FILE: head + f"# {sweep.describe()}\n" + dump_yaml(parts),
        MERGE_FILE: head
        + "# after every part has ended: merge, check the budgets\n"
        + dump_yaml(merge),
    }
    ns = f" -n {shlex.join([options['namespace']])}" if options.get("namespace") else ""
    return files, [
        f"kubectl{ns} apply -f {{out}}/{PARTS_FILE}   # needs the claim {claim} (ReadWriteMany)",
        _wait_line(f"kubectl{ns}", name),
        f"kubectl{ns} apply -f {{out}}/{MERGE_FILE} && kubectl{ns} logs -f job/{name}-merge",
    ]


ENDED = "{.status.conditions[?(@.status==\"True\")].type}"
"""The Job's conditions that hold, by type (``Complete``, ``Failed``; since Kubernetes 1.31
also ``SuccessCriteriaMet`` and ``FailureTarget`` before them)."""


def _wait_line(kubectl: str, name: str) -> str:
    """Until the parts' Job has ended, either way.  ``kubectl wait --for=condition=Complete``
    had waited out its whole ``--timeout`` (24 h) when a part failed: the Job then becomes
    Failed, never Complete, and ``kubectl wait`` takes one condition (no "or").
    A poll of the conditions is plain ``sh`` and needs no job control; it stops too when
    the Job cannot be read (deleted, or no access), rather than polling for ever, and then
    fails (a subshell's exit: a ``while`` whose condition fails ends with status 0, and the
    merge after it had started while the parts still ran, a reviewer's reading)."""
    ended = ENDED.replace("{", "{{").replace("}", "}}")  # the steps are format strings
    return (
        f"(while :; do s=$({kubectl} get job/{name} -o jsonpath='{ended}') || exit 1; "
        "echo \"$s\" | grep -qwE 'Complete|Failed' && exit 0; sleep 30; done)   "
        "# until Complete or Failed (kubectl wait takes one condition, and a failed part "
        "makes the Job Failed, never Complete); Failed is a result too: merge anyway"
    )
