"""A workload that ends inside an open phase, for the kernel tier.

``die_in_phase.py MODE READY``: enters phase ``load``, writes READY, then

* ``oom``: holds 80 MiB for 0.3 s, then touches memory until the kernel kills it (under
  ``--memory`` above 80 MiB);
* ``hang``: sleeps until edgeprof's timeout ends it;
* ``quick``: leaves the phase and exits 0 (to measure how long reaching the phase takes).
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
        # 80 MiB held for 0.3 s first, long enough for a few samples even in an emulated
        # guest (where phase peaks are samples, the climb to the limit can fall between two).
        blocks = [bytearray(16 * 2**20) for _ in range(5)]
        time.sleep(0.3)
        while True:  # 16 MiB at a time, every page touched: the limit is reached for sure
            blocks.append(bytearray(16 * 2**20))
    elif mode == "hang":
        while True:
            time.sleep(60)
