"""A stand-in inference loop (pure Python, no dependencies): the tutorial's workload.

It "loads a model" (allocates weights), then runs N batches of a dense layer, and prints its
own per-batch latency, as the older profiler's examples did.  Under ``edgeprof run`` the load
and the batches are phases (``load``, ``infer``) and each batch is an ``edgeprof.iteration``
of ``--batch`` items, so the report gives the latency percentiles and throughput; without
edgeprof installed the script runs the same.  The ONNX examples are in examples/benchmark.
"""

from __future__ import annotations

import argparse
import random
import time

try:
    from edgeprof import iteration, phase
except ImportError:  # edgeprof not installed here: the same script, nothing reported
    from contextlib import nullcontext as iteration
    from contextlib import nullcontext as phase


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--width", type=int, default=96)
    args = ap.parse_args()

    rng = random.Random(0)
    with phase("load"):
        weights, activations = load(rng, args.width, args.batch)
    latencies = []
    with phase("infer"):
        for _ in range(args.iterations):
            t = time.perf_counter()
            with iteration(args.batch):
                for _ in range(args.batch):
                    x = [rng.random() for _ in range(args.width)]
                    _ = [sum(w * v for w, v in zip(row, x, strict=True)) for row in weights]
            latencies.append(time.perf_counter() - t)
    latencies.sort()
    print(
        f"batch {args.batch}: {args.iterations} iterations, "
        f"median {latencies[len(latencies) // 2] * 1000:.1f} ms, "
        f"max {latencies[-1] * 1000:.1f} ms"
    )
    del activations


def load(rng: random.Random, width: int, batch: int) -> tuple[list[list[float]], list[bytearray]]:
    """The "model": a weight matrix and an embedding table of ~40 MB, and the activations,
    ~1.2 MB an item (what grows with the batch size)."""
    weights = [[rng.random() for _ in range(width)] for _ in range(width)]
    table = bytearray(40 * 1024 * 1024)
    for i in range(0, len(table), 4096):
        table[i] = 1
    activations = [bytearray(1200 * 1024) for _ in range(batch)]
    for a in activations:
        for i in range(0, len(a), 4096):
            a[i] = 1
    return weights, [table, *activations]


if __name__ == "__main__":
    main()
