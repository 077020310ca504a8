"""Models for ``edgeprof bench``: each is a loader and an inference function, plain functions.

    edgeprof bench examples/benchmark/bench_models.py:infer -E MODEL=path.onnx \\
        --batch-size 1,8,32 --cpus 1 --memory 1g
    edgeprof bench examples/benchmark/bench_models.py:infer_mlp --loader load_mlp \\
        --batch-size 1,8,32 --cpus 1

* ``load`` / ``infer``: an ONNX model (``MODEL``, e.g. one that ``make_models.py`` wrote) in
  ONNX Runtime on the CPU, random float32 input of the model's shape with the batch size as
  its first dimension.  Threads: ``OMP_NUM_THREADS`` when set (``--cpus N`` sets it), else
  ONNX Runtime's default; inter-op 1.
* ``load_mlp`` / ``infer_mlp``: a digits-sized multilayer perceptron (64 → 512 → 512 → 10,
  random weights seeded, PyTorch CPU).  Small enough that per-call overhead dominates a
  single input, so throughput grows with the batch size, as it does for small models on
  real devices.
"""

from __future__ import annotations

import os
from typing import Any


def _threads() -> int:
    raw = os.environ.get("OMP_NUM_THREADS", "").strip()
    return int(raw) if raw.isdigit() and int(raw) > 0 else 0


def load(batch_size: int) -> Any:
    import numpy as np
    import onnxruntime as ort

    model = os.environ.get("MODEL")
    if not model:
        raise SystemExit("bench_models.load: set MODEL=path/to/model.onnx (edgeprof bench -E)")
    so = ort.SessionOptions()
    so.intra_op_num_threads = _threads()
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(model, sess_options=so, providers=["CPUExecutionProvider"])
    inp = sess.get_inputs()[0]
    shape = [d if isinstance(d, int) else (batch_size if i == 0 else 1)
             for i, d in enumerate(inp.shape)]
    x = np.random.default_rng(0).random(shape, dtype=np.float32)
    return sess, {inp.name: x}


def infer(state: Any) -> Any:
    sess, feed = state
    return sess.run(None, feed)


def load_mlp(batch_size: int) -> Any:
    import torch

    if _threads():
        torch.set_num_threads(_threads())
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 512),
        torch.nn.ReLU(),
        torch.nn.Linear(512, 512),
        torch.nn.ReLU(),
        torch.nn.Linear(512, 10),
    ).eval()
    return model, torch.rand(batch_size, 64)


def infer_mlp(state: Any) -> Any:
    import torch

    model, x = state
    with torch.inference_mode():
        return model(x)
