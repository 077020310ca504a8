"""What a workload run with ``--gpus`` sees: writes JSON to ``argv[1]``: the environment's
``CUDA_VISIBLE_DEVICES``, ``torch.cuda.device_count()``, and the UUID of its ``cuda:0``
(where it allocates a little, so the run's GPU is used)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import torch


def main() -> None:
    count = torch.cuda.device_count()
    x = torch.ones(2**20, device="cuda")
    torch.cuda.synchronize()
    uuid = str(torch.cuda.get_device_properties(0).uuid)
    Path(sys.argv[1]).write_text(
        json.dumps({"env": os.environ.get("CUDA_VISIBLE_DEVICES"), "count": count, "uuid": uuid})
    )
    del x


if __name__ == "__main__":
    main()
