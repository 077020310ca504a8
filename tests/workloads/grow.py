"""Grow one kind of memory by a MiB a step, for argv[2] steps of argv[3] seconds each:
``read PATH``: read the file PATH a MiB a step, cold (its cache dropped first, no
readahead: page cache, which a limit drops); ``leak``: keep a MiB of touched anonymous
memory a step."""

import os
import sys
import time

mode, steps, pace = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
MIB = 1 << 20
kept = []
fd = -1
if mode == "read":
    fd = os.open(sys.argv[4], os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    # No readahead: the cache grows by the MiB read, not in the kernel's windows ahead of it.
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
for _ in range(steps):
    if fd >= 0:
        assert len(os.read(fd, MIB)) == MIB
    else:
        kept.append(bytearray(b"\1" * MIB))
    time.sleep(pace)  # the workload's pace: its growth spread over the run
print(sum(map(len, kept)), flush=True)
