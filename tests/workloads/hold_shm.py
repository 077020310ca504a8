"""Map argv[2] MiB of a new file argv[1] in /dev/shm and write every page; print this
process's own ``RssShmem`` (bytes) on stdout; hold it until descriptor argv[3] reaches its
end (the test closes it once it has read the run's counters)."""

import mmap
import os
import sys

path, size, hold = sys.argv[1], int(sys.argv[2]) << 20, int(sys.argv[3])
fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
os.ftruncate(fd, size)
block = mmap.mmap(fd, size)
for i in range(0, size, mmap.PAGESIZE):
    block[i] = 1
with open("/proc/self/status") as f:
    shmem = next(int(ln.split()[1]) * 1024 for ln in f if ln.startswith("RssShmem:"))
print(shmem, flush=True)
os.read(hold, 1)
