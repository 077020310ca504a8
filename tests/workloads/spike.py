"""Allocate MiB (argv[1], default 200), touch every page, hold argv[2] s, free, sleep argv[3] s."""

import sys
import time

mib = int(sys.argv[1]) if len(sys.argv) > 1 else 200
hold = float(sys.argv[2]) if len(sys.argv) > 2 else 0.02
after = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
block = bytearray(mib * 1024 * 1024)
for i in range(0, len(block), 4096):
    block[i] = 1
time.sleep(hold)
del block
time.sleep(after)
