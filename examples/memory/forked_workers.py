"""Load a "model" of MIB MiB, then fork WORKERS workers that only read it: the serving-pool
and DataLoader pattern, whose pages the workers share copy-on-write with their parent.  The
example of docs/memory.md, "Forked workers under the process backend".

    python3 forked_workers.py [MIB] [WORKERS]      # 300 MiB, 4 workers by default

A cgroup counts the model's pages once, whoever maps them; the process backend sums each
process's resident set and counts them once per process.  Standard library only.
"""

from __future__ import annotations

import multiprocessing as mp
import sys
import time

MIB = int(sys.argv[1]) if len(sys.argv) > 1 else 300
WORKERS = int(sys.argv[2]) if len(sys.argv) > 2 else 4
PAGE = 4096

model = bytearray(MIB << 20)
for i in range(0, len(model), PAGE):  # written: resident, and shared by every fork after this
    model[i] = 1


def work(_: int) -> int:
    """Read the model (no write: its pages stay shared) and hold it while the others do."""
    total = sum(model[i] for i in range(0, len(model), PAGE * 64))
    time.sleep(0.6)
    return total


if __name__ == "__main__":
    with mp.get_context("fork").Pool(WORKERS) as pool:
        pool.map(work, range(WORKERS))
    print(f"{MIB} MiB model shared copy-on-write by {WORKERS} forked workers", flush=True)
