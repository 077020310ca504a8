"""Two phases of known cost, for the kernel tier: ``alloc`` touches MIB MiB and holds them
0.4 s (little CPU), then frees them; ``busy`` spins on the CPU for 0.6 s (no new memory).
Then ten iterations of 20 ms sleeps.  Prints the workload's own CPU time of ``busy``
(``time.process_time``) as ``busy_cpu_s=…`` so the test compares with the kernel's."""

from __future__ import annotations

import sys
import time

import edgeprof

MIB = int(sys.argv[1]) if len(sys.argv) > 1 else 128

with edgeprof.phase("alloc"):
    block = bytearray(MIB * 2**20)  # zero-filled: every page touched
    time.sleep(0.4)
    del block
with edgeprof.phase("busy"):
    c0 = time.process_time()
    t0 = time.monotonic()
    while time.monotonic() - t0 < 0.6:
        pass
    busy = time.process_time() - c0
with edgeprof.phase("loop"):
    for _ in range(10):
        with edgeprof.iteration(items=2):
            time.sleep(0.02)
print(f"busy_cpu_s={busy:.6f}", flush=True)
