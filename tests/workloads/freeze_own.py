"""Freezes what a workload running as root may: ``self`` — a forked child freezes the run's
own group (the main process with it) after writing ``<main pid> <child pid> <group>`` to
``argv[2]``, and the main process sleeps on; ``sub`` — the main process moves a forked child
into a group ``sub`` it makes under its run's, freezes that, writes ``<child pid> <sub>`` to
``argv[2]`` once the kernel reports it frozen, and exits 0.

The freezer is cgroup v1's hierarchy where the run has a group in it (hybrid hosts), else
cgroup v2's ``cgroup.freeze``.  A frozen process cannot die of SIGKILL until it is thawed."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from edgeprof.backends.cgroup_v1 import UNIFIED, discover


def freezer() -> tuple[Path, str, str]:
    """The run's freezing group, its control file's name, and the value that freezes it."""
    own = discover(Path("/proc/self/mountinfo"), Path("/proc/self/cgroup"), ("freezer",))
    if "freezer" in own:
        return own["freezer"].own, "freezer.state", "FROZEN"
    return own[UNIFIED].own, "cgroup.freeze", "1"


def is_frozen(group: Path, name: str) -> bool:
    if name == "freezer.state":
        return (group / name).read_text().strip() == "FROZEN"
    return "frozen 1" in (group / "cgroup.events").read_text().splitlines()


def publish(path: str, text: str) -> None:
    tmp = Path(f"{path}.tmp")
    tmp.write_text(text)
    tmp.rename(path)  # whole, for a test that polls for it


def main() -> None:
    mode, report = sys.argv[1], sys.argv[2]
    group, name, value = freezer()
    if mode == "self":
        main_pid = os.getpid()
        if os.fork() == 0:
            publish(report, f"{main_pid} {os.getpid()} {group}")
            (group / name).write_text(value)  # freezes this process and its parent
            os._exit(0)
        while True:
            time.sleep(0.05)
    child = os.fork()
    if child == 0:
        time.sleep(600)
        os._exit(0)
    sub = group / "sub"
    sub.mkdir()
    (sub / "cgroup.procs").write_text(str(child))
    (sub / name).write_text(value)
    while not is_frozen(sub, name):
        time.sleep(0.01)
    publish(report, f"{child} {sub}")


if __name__ == "__main__":
    main()
