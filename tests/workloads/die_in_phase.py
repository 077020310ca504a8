"""A workload that ends inside an open phase, for the kernel tier.

``die_in_phase.py MODE READY [GO]``: enters phase ``load``, writes READY, then

* ``oom``: holds 80 MiB until the file GO exists (the test makes it once a sample has seen
  the block), then touches memory until the kernel kills it (under ``--memory`` above
  80 MiB);
* ``hang``: sleeps until edgeprof's timeout ends it.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import edgeprof

mode, ready = sys.argv[1], Path(sys.argv[2])
with edgeprof.phase("load"):
    ready.write_text("inside\n")
    if mode == "oom":
        # 80 MiB held until a sample has seen it: phase peaks are samples where the kernel
        # keeps no window of the phase's own, and the climb to the limit can fall between
        # two.  (A fixed 0.3 s hold let a starved emulated guest take no sample in it.)
        go = Path(sys.argv[3])
        blocks = [bytearray(16 * 2**20) for _ in range(5)]
        while not go.exists():
            time.sleep(0.01)
        while True:  # 16 MiB at a time, every page touched: the limit is reached for sure
            blocks.append(bytearray(16 * 2**20))
    elif mode == "hang":
        while True:
            time.sleep(60)
