"""Writes its own run group's memory limit, as a workload running as root may: ``raise``
lifts it (``-1`` on cgroup v1, memory and memory + swap; ``max`` on v2), ``lower`` sets
``argv[2]`` bytes; then allocates and touches ``argv[3]`` MiB and holds it for a moment.

The memory group is cgroup v1's where the run has one (hybrid hosts), else cgroup v2's."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from edgeprof.backends.cgroup_v1 import UNIFIED, discover

MIB = 1 << 20


def write_limit(value: str) -> None:
    own = discover(Path("/proc/self/mountinfo"), Path("/proc/self/cgroup"), ("memory",))
    if "memory" in own:
        group = own["memory"].own
        files = ["memory.limit_in_bytes", "memory.memsw.limit_in_bytes"]
        if value == "-1":  # raised: memsw first, the memory limit may not be above it
            files = files[::-1]
    else:
        group, files = own[UNIFIED].own, ["memory.max"]
        value = "max" if value == "-1" else value
    for name in files:
        if (group / name).exists():
            (group / name).write_text(value)


def main() -> None:
    mode, size, mib = sys.argv[1], sys.argv[2], int(sys.argv[3])
    write_limit("-1" if mode == "raise" else size)
    block = bytearray(mib * MIB)
    for i in range(0, len(block), 4096):
        block[i] = 1
    time.sleep(0.1)


if __name__ == "__main__":
    main()
