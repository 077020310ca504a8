"""Two phases of known cost, for the kernel tier.

``alloc`` touches MIB MiB and holds them 0.6 s, and at least four times as long as touching
them took (so the phase's average memory is mostly the block's, even in the slow emulated
guest), then frees them.  ``busy`` spins until it has used 0.5 s of CPU (its own
``process_time``, so a core shared with other work stretches its wall time, not its CPU).
Then ten iterations of 20 ms sleeps.  Prints the workload's own CPU time of the first two
(``time.process_time``) as ``alloc_cpu_s=…`` and ``busy_cpu_s=…``, so the test compares
them with the kernel's, and the sixth shortest of the iterations as the workload timed them
around ``edgeprof.iteration`` (``loop_sixth_s=…``), which no median of ten can exceed."""

from __future__ import annotations

import sys
import time

import edgeprof

MIB = int(sys.argv[1]) if len(sys.argv) > 1 else 128

with edgeprof.phase("alloc"):
    c0, t0 = time.process_time(), time.monotonic()
    block = bytearray(MIB * 2**20)  # zero-filled: every page touched
    time.sleep(max(0.6, 4 * (time.monotonic() - t0)))
    del block
    alloc = time.process_time() - c0
with edgeprof.phase("busy"):
    c0 = time.process_time()
    while time.process_time() - c0 < 0.5:
        pass
    busy = time.process_time() - c0
own = []
with edgeprof.phase("loop"):
    for _ in range(10):
        t0 = time.monotonic()
        with edgeprof.iteration(items=2):
            time.sleep(0.02)
        own.append(time.monotonic() - t0)
sixth = sorted(own)[5]
print(f"alloc_cpu_s={alloc:.6f} busy_cpu_s={busy:.6f} loop_sixth_s={sixth:.9f}", flush=True)
