"""Another job on the same GPU, started by a gpu-tier test outside the measured run.

    python cuda_neighbour.py --mib N --ready FILE [--grow-mib M --trigger FILE --ack FILE]

Allocates N MiB on ``cuda:0``, writes ``--ready``; with ``--trigger``, waits for it, then
allocates M MiB more and writes ``--ack`` (its memory grows while the run holds its own).
Then holds everything until its stdin closes (or the test kills it by its pid).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

MiB = 2**20


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, required=True)
    ap.add_argument("--ready", type=Path, required=True)
    ap.add_argument("--grow-mib", type=int, default=0)
    ap.add_argument("--trigger", type=Path)
    ap.add_argument("--ack", type=Path)
    args = ap.parse_args()

    held = [torch.ones(args.mib * MiB, dtype=torch.uint8, device="cuda")]
    torch.cuda.synchronize()
    args.ready.write_text("ready\n")
    if args.trigger is not None and args.ack is not None:
        while not args.trigger.exists():  # the test bounds this wait: it kills us
            time.sleep(0.01)
        held.append(torch.ones(args.grow_mib * MiB, dtype=torch.uint8, device="cuda"))
        torch.cuda.synchronize()
        args.ack.write_text("grown\n")
    sys.stdin.read()  # until the test closes our stdin
    del held


if __name__ == "__main__":
    main()
