"""Time ONNX Runtime CPU inference of one model, as the older profiler's test_perf.py did.

    python infer.py MODEL.onnx [--iterations N] [--warmup K] [--batch B]

Loads the model once, feeds random float32 input of the model's input shape (symbolic
dimensions: the batch size for the first, 1 otherwise), runs K warm-up inferences and then N
timed ones, and prints one short block: load time, thread count, and the per-inference
latency (mean, p50, p95, min) in milliseconds.

Under ``edgeprof run`` the three parts are phases (``load``, ``warmup``, ``infer``, each timed
inference one ``edgeprof.iteration``), so the report splits CPU time and memory between
loading and inference and gives the latency percentiles; elsewhere the calls do nothing, and
without edgeprof installed the script runs the same.

Threads: intra-op = ``OMP_NUM_THREADS`` when set (``edgeprof run --cpus N`` sets it to the
core count), else ONNX Runtime's default (one per physical core); inter-op = 1.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import onnxruntime as ort

try:
    from edgeprof import iteration, phase
except ImportError:  # edgeprof not installed here: the same script, nothing reported
    from contextlib import nullcontext as iteration
    from contextlib import nullcontext as phase


def intra_op_threads() -> int | None:
    """Threads from ``OMP_NUM_THREADS``; None when unset (ONNX Runtime then picks)."""
    raw = os.environ.get("OMP_NUM_THREADS", "").strip()
    if not raw:
        return None
    try:
        n = int(raw)
    except ValueError:
        sys.exit(f"infer.py: OMP_NUM_THREADS={raw!r} is not an integer")
    if n < 1:
        sys.exit(f"infer.py: OMP_NUM_THREADS={raw!r} must be >= 1")
    return n


def main() -> int:
    ap = argparse.ArgumentParser(description="ONNX Runtime CPU latency of one model")
    ap.add_argument("model", help="path to a .onnx file")
    ap.add_argument("--iterations", type=int, default=50, help="timed runs (default 50)")
    ap.add_argument("--warmup", type=int, default=5, help="untimed runs first (default 5)")
    ap.add_argument("--batch", type=int, default=1, help="batch size (default 1)")
    args = ap.parse_args()
    if args.iterations < 1 or args.warmup < 0 or args.batch < 1:
        ap.error("--iterations and --batch must be >= 1, --warmup >= 0")

    threads = intra_op_threads()
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads or 0  # 0: ONNX Runtime's default
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL

    with phase("load"):
        t0 = time.perf_counter()
        sess = ort.InferenceSession(
            args.model, sess_options=so, providers=["CPUExecutionProvider"]
        )
        load_s = time.perf_counter() - t0
        inp = sess.get_inputs()[0]
        shape = [d if isinstance(d, int) else (args.batch if i == 0 else 1)
                 for i, d in enumerate(inp.shape)]
        x = np.random.default_rng(0).random(shape, dtype=np.float32)
        feed = {inp.name: x}

    with phase("warmup"):
        for _ in range(args.warmup):
            sess.run(None, feed)
    lat = np.empty(args.iterations)
    with phase("infer"):
        for i in range(args.iterations):
            with iteration(args.batch):
                t = time.perf_counter()
                out = sess.run(None, feed)
                lat[i] = time.perf_counter() - t
    lat *= 1000.0

    if threads is None:
        used = f"onnxruntime default ({os.cpu_count()} CPUs visible)"
    else:
        used = f"{threads} (OMP_NUM_THREADS)"
    print(f"model {os.path.basename(args.model)}: input {inp.name} {shape}, "
          f"output {list(out[0].shape)}, load {load_s * 1000:.0f} ms")
    print(f"threads: intra-op {used}, inter-op 1")
    print(f"{args.warmup} warm-up + {args.iterations} timed runs, batch {args.batch}")
    print(f"latency ms: mean {lat.mean():.2f}  p50 {np.percentile(lat, 50):.2f}  "
          f"p95 {np.percentile(lat, 95):.2f}  min {lat.min():.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
