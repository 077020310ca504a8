"""Under ``--gpu-memory 256m``: initialise CUDA inside a phase, then try to allocate 1 GiB.
Capped (the client set PyTorch's per-process fraction at the phase's end), the allocation
fails as it would on a device with 256 MiB: exit 0 having seen the failure, 1 otherwise."""

import sys

import torch

import edgeprof

with edgeprof.phase("load"):
    torch.zeros(1, device="cuda")  # CUDA in use: the cap follows at the phase's end
try:
    big = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
except torch.cuda.OutOfMemoryError:
    print("capped: 1 GiB refused under the 256 MiB cap")
    sys.exit(0)
print(f"not capped: {big.numel()} bytes allocated")
sys.exit(1)
