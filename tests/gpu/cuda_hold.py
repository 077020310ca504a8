"""A CUDA workload for the gpu tier: holds a known allocation, runs timed iterations, and
records what ``nvidia-smi`` says it holds; then holds on until edgeprof has sampled it.

    python cuda_hold.py --mib N --iterations K --batch B --record FILE --gpu-csv PATH
                        [--trigger FILE --ack FILE]

Phases ``load`` (the allocation) and ``infer`` (the iterations, each an
``edgeprof.iteration(items=B)`` of matrix products that keep the GPU busy for
``--iteration-s``).  Its footprint only grows (PyTorch's caching allocator returns nothing to
the driver without ``empty_cache``), so the figure recorded after the iterations is its peak.

``--record``: JSON written once the footprint is final: its pids (``os.getpid()`` and
``/proc/self/status``'s ``NSpid``), ``nvidia-smi``'s compute apps (pid, MiB) and every GPU's
used memory (uuid → MiB).  It then waits until ``--gpu-csv`` (the run's ``gpu.csv``) holds
:data:`SAMPLES_AFTER` more samples than when the record was written, so edgeprof's sampler
read the footprint while it was held; a deadline only bounds that wait.  ``--trigger`` /
``--ack``: before recording, write the trigger and wait for the ack (a neighbour process
grows its own memory meanwhile: tests/gpu/cuda_neighbour.py).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time
from pathlib import Path

import torch

import edgeprof

MiB = 2**20
SAMPLES_AFTER = 5
"""More than the samples edgeprof may hold unflushed (it writes at most every 0.1 s, the
tier samples every 0.05 s): several of these were read after the record."""
DEADLINE_S = 60.0


def smi(*query: str) -> list[list[str]]:
    out = subprocess.run(
        ["nvidia-smi", *query, "--format=csv,noheader,nounits"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    return [[f.strip() for f in line.split(",")] for line in out.splitlines() if line.strip()]


def own_pids() -> list[int]:
    pids = {os.getpid()}
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("NSpid:"):
            pids.update(int(p) for p in line.split()[1:])
    return sorted(pids)


def samples(csv: Path) -> int:
    """Samples in ``gpu.csv``: its rows for the first GPU listed (each sample writes one row
    per GPU, each with the time of its own read)."""
    try:
        rows = [row.split(",", 2) for row in csv.read_text().splitlines()[1:] if row]
    except FileNotFoundError:
        return 0
    return sum(1 for row in rows if row[1] == rows[0][1])


def wait_for(path: Path) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not path.exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"cuda_hold.py: {path} did not appear within {DEADLINE_S:g}s")
        time.sleep(0.01)


def busy(a: torch.Tensor, b: torch.Tensor, seconds: float) -> None:
    """Matrix products until the GPU has worked ``seconds`` (to a target, not a count)."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(8):
            torch.mm(a, b)
        torch.cuda.synchronize()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, required=True)
    ap.add_argument("--iterations", type=int, default=8)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--iteration-s", type=float, default=0.1)
    ap.add_argument("--record", type=Path, required=True)
    ap.add_argument("--gpu-csv", type=Path, required=True)
    ap.add_argument("--trigger", type=Path)
    ap.add_argument("--ack", type=Path)
    args = ap.parse_args()

    with edgeprof.phase("load"):
        held = torch.ones(args.mib * MiB, dtype=torch.uint8, device="cuda")
        a = torch.randn(2048, 2048, device="cuda")
        b = torch.randn(2048, 2048, device="cuda")
        torch.cuda.synchronize()
    with edgeprof.phase("infer"):
        for _ in range(args.iterations):
            with edgeprof.iteration(items=args.batch):
                busy(a, b, args.iteration_s)
    if args.trigger is not None and args.ack is not None:
        args.trigger.write_text("grow\n")
        wait_for(args.ack)
    record = {
        "pids": own_pids(),
        "apps": [[int(pid), int(mib)] for pid, mib in smi("--query-compute-apps=pid,used_memory")],
        "device_used_mib": {u: int(m) for u, m in smi("--query-gpu=uuid,memory.used")},
        "torch_reserved": torch.cuda.memory_reserved(),
        "held": held.numel(),
    }
    seen = samples(args.gpu_csv)
    tmp = args.record.with_suffix(".tmp")
    tmp.write_text(json.dumps(record))
    tmp.rename(args.record)
    deadline = time.monotonic() + DEADLINE_S
    while samples(args.gpu_csv) < seen + SAMPLES_AFTER and time.monotonic() < deadline:
        time.sleep(0.01)
    del held


if __name__ == "__main__":
    main()
