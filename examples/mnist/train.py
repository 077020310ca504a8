"""Train a small CNN on scikit-learn's 8×8 handwritten digits with PyTorch on the CPU.

The MNIST-style training example, without a download: the digits data set ships inside
scikit-learn (1,797 grey-scale 8×8 images, 10 classes, pixel values 0..16). Images are fed at
their native 1×8×8 size (no upsampling). The train/test split (80/20, stratified) and the
weight initialisation are fixed by --seed.

    python train.py [--epochs 3] [--batch-size 64] [--seed 0] [--lr 0.01]

Threads: torch.set_num_threads(OMP_NUM_THREADS) when that variable is set (edgeprof run
--cpus N with an integer N sets it to N), else PyTorch's default (one per visible core).
"""

from __future__ import annotations

import argparse
import os
import time

T0 = time.perf_counter()

import torch  # noqa: E402  (imported once; its import time is reported)
from torch import nn  # noqa: E402


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--lr", type=float, default=0.01, help="Adam learning rate")
    args = p.parse_args()
    if args.epochs < 1 or args.batch_size < 1:
        p.error("--epochs and --batch-size must be at least 1")
    return args


def set_threads() -> str:
    env = os.environ.get("OMP_NUM_THREADS", "").strip()
    if env:
        torch.set_num_threads(int(env))
        return f"{torch.get_num_threads()} (OMP_NUM_THREADS={env})"
    return f"{torch.get_num_threads()} (torch default, {os.cpu_count()} CPUs visible)"


def load_data(seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Digits as float32 [N, 1, 8, 8] scaled to 0..1; a stratified 80/20 split fixed by seed."""
    from sklearn.datasets import load_digits  # no download: the data ships with scikit-learn

    digits = load_digits()
    x = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
    y = torch.tensor(digits.target, dtype=torch.long)
    g = torch.Generator().manual_seed(seed)
    train_idx, test_idx = [], []
    for c in range(10):  # stratified: 20 % of every class goes to the test set
        idx = (y == c).nonzero().squeeze(1)
        idx = idx[torch.randperm(len(idx), generator=g)]
        n_test = round(0.2 * len(idx))
        test_idx.append(idx[:n_test])
        train_idx.append(idx[n_test:])
    tr, te = torch.cat(train_idx), torch.cat(test_idx)
    return x[tr], y[tr], x[te], y[te]


class SmallCNN(nn.Module):
    """conv 3×3 (16) → ReLU → conv 3×3 (32) → ReLU → max pool 2 → FC 512→64 → ReLU → FC 64→10."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
            nn.MaxPool2d(2),  # 32 × 4 × 4
        )
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Linear(32 * 4 * 4, 64), nn.ReLU(), nn.Linear(64, 10),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))


@torch.no_grad()
def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    model.eval()
    return (model(x).argmax(1) == y).float().mean().item()


def main() -> None:
    args = parse_args()
    threads = set_threads()
    t_import = time.perf_counter() - T0

    t = time.perf_counter()
    x_tr, y_tr, x_te, y_te = load_data(args.seed)
    t_data = time.perf_counter() - t

    t = time.perf_counter()
    torch.manual_seed(args.seed)
    model = SmallCNN()
    n_params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)  # the first one imports torch._dynamo
    t_setup = time.perf_counter() - t
    loss_fn = nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(args.seed)

    print(f"torch {torch.__version__}, threads: {threads}")
    print(f"digits: {len(x_tr)} train / {len(x_te)} test images, 1x8x8, 10 classes")
    print(f"start-up: torch import {t_import:.2f} s; data {t_data:.2f} s (scikit-learn import "
          f"+ load_digits + split); model + Adam {t_setup:.2f} s (imports torch._dynamo)")
    print(f"model: SmallCNN, {n_params:,} parameters; epochs {args.epochs}, "
          f"batch {args.batch_size}, Adam lr {args.lr}, seed {args.seed}")

    total = 0.0
    for epoch in range(1, args.epochs + 1):
        t = time.perf_counter()
        model.train()
        perm = torch.randperm(len(x_tr), generator=g)
        loss_sum = 0.0
        for i in range(0, len(perm), args.batch_size):
            b = perm[i:i + args.batch_size]
            opt.zero_grad()
            loss = loss_fn(model(x_tr[b]), y_tr[b])
            loss.backward()
            opt.step()
            loss_sum += loss.item() * len(b)
        acc = accuracy(model, x_te, y_te)
        dt = time.perf_counter() - t
        total += dt
        print(f"epoch {epoch}/{args.epochs}: loss {loss_sum / len(x_tr):.4f}  "
              f"test accuracy {acc:.4f}  time {dt:.3f} s", flush=True)
    print(f"total training time {total:.3f} s ({args.epochs} epochs); "
          f"final test accuracy {acc:.4f}")


if __name__ == "__main__":
    main()
