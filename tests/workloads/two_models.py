"""A stand-in for a model script: ``two_models.py small|big``.

``big`` touches 64 MiB and does three times the CPU work of ``small`` (16 MiB); the work is
split over two processes, so a 2-CPU limit lets it run in parallel and a 1-CPU one does not.
"""

import os
import sys

SIZES = {"small": (16, 300_000), "big": (64, 900_000)}
mib, work = SIZES[sys.argv[1]]
buf = bytearray(b"\x01" * (mib << 20))  # written, so the pages are really used
pid = os.fork()
x = 0
for i in range(work):
    x += i * i
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
print(sys.argv[1], len(buf), x % 7)
