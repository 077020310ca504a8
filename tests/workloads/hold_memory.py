"""Touch argv[1] MiB, then write this process's own high-water mark (``VmHWM``, bytes) to
argv[2] and exit: the exact peak of a one-process workload, as its kernel counted it."""

import sys

block = bytearray(int(sys.argv[1]) * 2**20)  # zero-filled: every page touched
with open("/proc/self/status") as f:
    hwm = next(int(ln.split()[1]) * 1024 for ln in f if ln.startswith("VmHWM:"))
with open(sys.argv[2], "w") as f:
    f.write(str(hwm))
