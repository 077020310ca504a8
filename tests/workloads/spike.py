"""Allocate MiB (argv[1], default 200), hold argv[2] s, free, sleep argv[3] s.

The pages are written by one memset in C (``b"\\x01" * n``), so the allocation is quick even
under emulation.  With argv[4], the monotonic times at which the block was complete and at
which it was freed are written there, so a test knows how long the memory was really held.
With ``SPIKE_HWM=FILE`` in the environment, the workload reads its own memory group's
high-water mark just before it exits (cgroup v1 ``memory.max_usage_in_bytes``, v2
``memory.peak``) and writes it there: a reference taken without edgeprof's code.
"""

import os
import sys
import time
from pathlib import Path


def own_high_water_mark() -> int:
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        hid, ctrls, path = line.split(":", 2)
        if "memory" in ctrls.split(","):
            return int(Path(f"/sys/fs/cgroup/memory{path}/memory.max_usage_in_bytes").read_text())
        if hid == "0" and Path(f"/sys/fs/cgroup{path}/memory.peak").exists():
            return int(Path(f"/sys/fs/cgroup{path}/memory.peak").read_text())
    raise SystemExit("spike.py: no memory group with a high-water mark")


mib = int(sys.argv[1]) if len(sys.argv) > 1 else 200
hold = float(sys.argv[2]) if len(sys.argv) > 2 else 0.02
after = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
block = b"\x01" * (mib * 1024 * 1024)
held_from = time.monotonic()
time.sleep(hold)
held_until = time.monotonic()
del block
if len(sys.argv) > 4:
    with open(sys.argv[4], "w") as f:
        f.write(f"{held_from} {held_until}")
time.sleep(after)
if os.environ.get("SPIKE_HWM"):
    Path(os.environ["SPIKE_HWM"]).write_text(str(own_high_water_mark()))
