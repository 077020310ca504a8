"""Two phases of known cost, for the kernel tier: ``alloc`` touches MIB MiB and holds them
0.6 s (little CPU), then frees them; ``busy`` spins until it has used 0.5 s of CPU (its own
``process_time``, so a core shared with other work stretches its wall time, not its CPU).
Then ten iterations of 20 ms sleeps.  Prints the workload's own CPU time of ``busy``
(``time.process_time``) as ``busy_cpu_s=…`` so the test compares with the kernel's."""

from __future__ import annotations

import sys
import time

import edgeprof

MIB = int(sys.argv[1]) if len(sys.argv) > 1 else 128

with edgeprof.phase("alloc"):
    block = bytearray(MIB * 2**20)  # zero-filled: every page touched
    time.sleep(0.6)
    del block
with edgeprof.phase("busy"):
    c0 = time.process_time()
    while time.process_time() - c0 < 0.5:
        pass
    busy = time.process_time() - c0
with edgeprof.phase("loop"):
    for _ in range(10):
        with edgeprof.iteration(items=2):
            time.sleep(0.02)
print(f"busy_cpu_s={busy:.6f}", flush=True)
