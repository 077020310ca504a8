"""Batched inference of a small PyTorch CNN, on the GPU where there is one, else on the CPU.

    python infer.py [--batch B] [--iterations N] [--warmup K] [--device auto|cpu|cuda]
    edgeprof bench examples/cuda/infer.py:infer --batch-size 1,8,32   # load() and infer()

The model is built in code with random weights (nothing to download): three 3×3 convolutions
with ReLU (3→32→64→128 channels, the last two with stride 2), global average pooling and a
linear layer to 1000 classes, on float32 ``[B, 3, 128, 128]`` input: 222,248 parameters,
about 0.33 GFLOP an image.  The weights' values do not change the work done, so the timings
are those of a real network of this shape; the predictions are meaningless.

``--device auto`` uses CUDA when PyTorch sees a GPU (``torch.cuda.is_available()``), the CPU
otherwise.  Under ``edgeprof run`` the parts are phases (``load``: building the model and
moving it and the input to the device; ``warmup``; ``infer``) and each timed batch is one
``edgeprof.iteration(items=B)``, so the report gives the latency percentiles and items/s,
and with ``--gpus`` the GPU's memory and energy per phase and per inference.  Elsewhere the
calls do nothing, and without edgeprof installed the script runs the same.

On CUDA a batch's time includes ``torch.cuda.synchronize()``: kernels are queued
asynchronously, and without it an iteration would time the launch, not the work.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from contextlib import AbstractContextManager, nullcontext

import torch
from torch import nn

try:
    from edgeprof import iteration, phase
except ImportError:  # edgeprof not installed here: the same script, nothing reported

    def phase(name: str) -> AbstractContextManager[None]:  # type: ignore[no-redef]
        return nullcontext()

    def iteration(items: int | None = None) -> AbstractContextManager[None]:  # type: ignore[no-redef]
        return nullcontext()


SIZE = 128
CLASSES = 1000


def build_model() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(32, 64, 3, stride=2, padding=1),
        nn.ReLU(),
        nn.Conv2d(64, 128, 3, stride=2, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(128, CLASSES),
    )


def pick_device(name: str) -> torch.device:
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        sys.exit("infer.py: --device cuda, but PyTorch sees no CUDA GPU here")
    return torch.device(name)


def sync(device: torch.device) -> None:
    """Wait for the device's queued work (a no-op on the CPU, where calls return when done)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def load(batch_size: int) -> tuple[nn.Module, torch.Tensor, torch.device]:
    """``edgeprof bench``'s loader: the model and one batch on the device ``auto`` picks."""
    device = pick_device("auto")
    torch.manual_seed(0)
    model = build_model().to(device).eval()
    return model, torch.randn(batch_size, 3, SIZE, SIZE, device=device), device


def infer(state: tuple[nn.Module, torch.Tensor, torch.device]) -> None:
    """``edgeprof bench``'s function: one batch, waited for (see :func:`sync`)."""
    model, x, device = state
    with torch.inference_mode():
        model(x)
    sync(device)


def main() -> int:
    ap = argparse.ArgumentParser(description="small CNN inference latency, CUDA or CPU")
    ap.add_argument("--batch", type=int, default=8, help="batch size (default 8)")
    ap.add_argument("--iterations", type=int, default=20, help="timed batches (default 20)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed batches first (default 3)")
    ap.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                    help="auto: CUDA when available, else the CPU (default)")  # fmt: skip
    args = ap.parse_args()
    if args.batch < 1 or args.iterations < 1 or args.warmup < 0:
        ap.error("--batch and --iterations must be >= 1, --warmup >= 0")

    device = pick_device(args.device)
    torch.manual_seed(0)
    with phase("load"):
        t0 = time.perf_counter()
        model = build_model().to(device).eval()
        x = torch.randn(args.batch, 3, SIZE, SIZE, device=device)
        sync(device)
        load_s = time.perf_counter() - t0
    with torch.inference_mode():
        with phase("warmup"):  # first calls pick kernels and fill the allocator's cache
            for _ in range(args.warmup):
                model(x)
            sync(device)
        latencies = []
        with phase("infer"):
            for _ in range(args.iterations):
                with iteration(items=args.batch):
                    t = time.perf_counter()
                    out = model(x)
                    sync(device)
                    latencies.append(time.perf_counter() - t)

    where = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    params = sum(p.numel() for p in model.parameters())
    print(
        f"device: {device.type} ({where}), {params} parameters, "
        f"output {list(out.shape)}, load {load_s * 1000:.0f} ms"
    )
    print(f"{args.warmup} warm-up + {args.iterations} timed batches of {args.batch}")
    ms = sorted(t * 1000 for t in latencies)
    print(
        f"latency ms: mean {statistics.fmean(ms):.2f}  p50 {statistics.median(ms):.2f}  "
        f"max {ms[-1]:.2f}  ({args.batch * len(ms) / sum(latencies):.0f} items/s)",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
