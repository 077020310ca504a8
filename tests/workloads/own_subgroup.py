"""Does what a workload running as root may: makes a group of its own (``own``) under each
of its run's groups, moves a forked child there, writes the child's pid to ``argv[1]`` and
exits.  The run must still kill that child and remove the groups (it had left 16 behind).

Only groups edgeprof made (``edgeprof-…``) get one: a hierarchy the run does not use has
the workload in the test's own group, which is not ours to change."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path


def run_groups() -> set[Path]:
    mounts = []  # (fstype, options, root, mount point), as /proc/self/mountinfo lists them
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        pre, post = line.split(" - ", 1)
        fields = pre.split()
        fstype, _source, super_options = post.split()[:3]
        if fstype in ("cgroup", "cgroup2"):
            mounts.append((fstype, set(super_options.split(",")), fields[3], fields[4]))
    found = set()
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for fstype, options, root, point in mounts:
            v2 = not controllers and fstype == "cgroup2"
            if v2 or (controllers and set(controllers.split(",")) <= options):
                group = Path(point) / os.path.relpath(path, root)
                if group.name.startswith("edgeprof-"):
                    found.add(group)
                break
    return found


def main() -> None:
    child = os.fork()
    if child == 0:
        time.sleep(600)
        os._exit(0)
    for group in sorted(run_groups()):
        own = group / "own"
        own.mkdir()
        for name in ("cpuset.cpus", "cpuset.mems"):  # a v1 cpuset takes no process without
            if (own / name).exists():  # (v2 lists them only where the parent enables cpuset)
                (own / name).write_text((group / name).read_text())
        (own / "cgroup.procs").write_text(str(child))
    Path(sys.argv[1]).write_text(str(child))


if __name__ == "__main__":
    main()
