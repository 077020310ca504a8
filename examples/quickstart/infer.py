"""A stand-in inference loop (pure Python, no dependencies) for `make demo`.

It "loads a model" (allocates weights), then runs N batches of a dense layer, and prints its
own per-batch latency, as the older profiler's examples did.  The real ONNX examples live in
examples/benchmark once they land.
"""

from __future__ import annotations

import argparse
import random
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--width", type=int, default=96)
    args = ap.parse_args()

    rng = random.Random(0)
    # "Model load": a weight matrix plus an embedding table of ~40 MB.
    weights = [[rng.random() for _ in range(args.width)] for _ in range(args.width)]
    table = bytearray(40 * 1024 * 1024)
    for i in range(0, len(table), 4096):
        table[i] = 1
    # Activations grow with the batch size: ~1.2 MB per item.
    activations = [bytearray(1200 * 1024) for _ in range(args.batch)]
    for a in activations:
        for i in range(0, len(a), 4096):
            a[i] = 1

    latencies = []
    for _ in range(args.iterations):
        t = time.perf_counter()
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


if __name__ == "__main__":
    main()
