"""Build the benchmark's ONNX models locally, with random weights (no download, no PyTorch).

    python make_models.py --out DIR [--only NAME ...]

Models (NCHW float32 input ``input`` of shape [batch, 3, 224, 224], output ``logits`` of
shape [batch, 1000]; the batch dimension is symbolic):

* ``mobilenet_v2_{0.25,0.5,0.75,1.0}``: MobileNetV2 (Sandler et al. 2018) as torchvision
  builds it: stem conv 3x3 stride 2 + ReLU6, the inverted residual blocks of the standard
  table (expansion 1x1 conv + ReLU6 when t != 1, depthwise 3x3 conv + ReLU6, linear 1x1
  projection, residual add when stride 1 and in == out channels), channels rounded with
  ``_make_divisible`` (multiples of 8), last 1x1 conv to 1280 channels (kept at 1280 for
  width < 1, as the reference does), global average pool, fully connected layer.
* ``squeezenet_1.1``: SqueezeNet 1.1 (Iandola et al. 2016, the torchvision variant): stem conv
  3x3/2 with 64 channels, Fire modules (squeeze 1x1, expand 1x1 and 3x3 concatenated), max
  pools (3x3/2, ceil mode), a 1x1 conv classifier to 1000 channels, global average pool.

BatchNorm is folded: each conv that the reference follows with BatchNorm here carries a bias
instead, which is what a BN-folding export produces.  So MobileNetV2's parameter counts are
the reference's minus one value per BN channel (1.0: 3,487,816 here vs 3,504,872 in
torchvision with BN's weight and bias); SqueezeNet has no BN and matches torchvision exactly
(1,235,496).  Dropout (identity at inference) is left out.

Weights are random (He-normal, numpy ``default_rng`` seeded from the model's name), so the
same command writes byte-identical files, whether or not ``--only`` is given.  Latency and
memory do not depend on trained values; the predictions are meaningless.
"""

from __future__ import annotations

import argparse
import functools
import sys
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 13
IR_VERSION = 7  # the lowest IR version for opset 13: loads in any onnxruntime >= 1.6
NUM_CLASSES = 1000
INPUT_SIZE = 224

# MobileNetV2's inverted residual setting: expansion t, output channels c, repeats n, stride s.
MOBILENET_V2_BLOCKS = [
    (1, 16, 1, 1),
    (6, 24, 2, 2),
    (6, 32, 3, 2),
    (6, 64, 4, 2),
    (6, 96, 3, 1),
    (6, 160, 3, 2),
    (6, 320, 1, 1),
]
MOBILENET_V2_WIDTHS = (0.25, 0.5, 0.75, 1.0)


def _make_divisible(v: float, divisor: int = 8, min_value: int | None = None) -> int:
    """Round a channel count to a multiple of ``divisor`` without going below 90 % of it."""
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


class GraphBuilder:
    """Appends nodes and weight initializers; counts trainable parameters as it goes."""

    def __init__(self, name: str, seed: int) -> None:
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.params = 0
        self._ids: dict[str, int] = {}

    def _uid(self, prefix: str) -> str:
        n = self._ids.get(prefix, 0)
        self._ids[prefix] = n + 1
        return f"{prefix}_{n}"

    def _const(self, name: str, value: np.ndarray) -> str:
        self.initializers.append(numpy_helper.from_array(value, name))
        return name

    def _weight(self, name: str, value: np.ndarray) -> str:
        self.params += int(value.size)
        return self._const(name, value.astype(np.float32))

    def conv(self, x: str, cin: int, cout: int, k: int, stride: int = 1, groups: int = 1,
             prefix: str = "conv", pad: int | None = None) -> str:
        name = self._uid(prefix)
        fan_in = (cin // groups) * k * k
        w = self.rng.standard_normal((cout, cin // groups, k, k)) * np.sqrt(2.0 / fan_in)
        b = self.rng.standard_normal(cout) * 0.01
        wn = self._weight(f"{name}.weight", w)
        bn = self._weight(f"{name}.bias", b)
        y = f"{name}.out"
        if pad is None:
            pad = k // 2  # "same" for odd kernels
        self.nodes.append(helper.make_node(
            "Conv", [x, wn, bn], [y], name=name, kernel_shape=[k, k], strides=[stride, stride],
            pads=[pad, pad, pad, pad], group=groups, dilations=[1, 1]))
        return y

    def relu6(self, x: str) -> str:
        if "relu6" not in self._ids:
            # ReLU6 bounds, shared by every Clip (since opset 11 they are inputs, not attributes).
            self._const("relu6_min", np.array(0.0, dtype=np.float32))
            self._const("relu6_max", np.array(6.0, dtype=np.float32))
        name = self._uid("relu6")
        self.nodes.append(helper.make_node("Clip", [x, "relu6_min", "relu6_max"], [f"{name}.out"],
                                           name=name))
        return f"{name}.out"

    def relu(self, x: str) -> str:
        name = self._uid("relu")
        self.nodes.append(helper.make_node("Relu", [x], [f"{name}.out"], name=name))
        return f"{name}.out"

    def add(self, a: str, b: str) -> str:
        name = self._uid("add")
        self.nodes.append(helper.make_node("Add", [a, b], [f"{name}.out"], name=name))
        return f"{name}.out"

    def concat(self, xs: list[str]) -> str:
        name = self._uid("concat")
        self.nodes.append(helper.make_node("Concat", xs, [f"{name}.out"], name=name, axis=1))
        return f"{name}.out"

    def maxpool(self, x: str, k: int = 3, stride: int = 2) -> str:
        name = self._uid("maxpool")
        self.nodes.append(helper.make_node(
            "MaxPool", [x], [f"{name}.out"], name=name, kernel_shape=[k, k],
            strides=[stride, stride], pads=[0, 0, 0, 0], ceil_mode=1))
        return f"{name}.out"

    def global_avgpool_flatten(self, x: str) -> str:
        name = self._uid("gap")
        self.nodes.append(helper.make_node("GlobalAveragePool", [x], [f"{name}.out"], name=name))
        flat = self._uid("flatten")
        self.nodes.append(helper.make_node("Flatten", [f"{name}.out"], [f"{flat}.out"],
                                           name=flat, axis=1))
        return f"{flat}.out"

    def fc(self, x: str, cin: int, cout: int, out_name: str) -> str:
        name = self._uid("fc")
        w = self.rng.standard_normal((cout, cin)) * np.sqrt(1.0 / cin)
        b = np.zeros(cout)
        wn = self._weight(f"{name}.weight", w)
        bn = self._weight(f"{name}.bias", b)
        self.nodes.append(helper.make_node("Gemm", [x, wn, bn], [out_name], name=name,
                                           alpha=1.0, beta=1.0, transB=1))
        return out_name

    def model(self, input_name: str, output_name: str, doc: str) -> onnx.ModelProto:
        inp = helper.make_tensor_value_info(input_name, TensorProto.FLOAT,
                                            ["batch", 3, INPUT_SIZE, INPUT_SIZE])
        out = helper.make_tensor_value_info(output_name, TensorProto.FLOAT,
                                            ["batch", NUM_CLASSES])
        graph = helper.make_graph(self.nodes, self.name, [inp], [out],
                                  initializer=self.initializers, doc_string=doc)
        m = helper.make_model(graph, producer_name="edgeprof-examples-benchmark",
                              producer_version="1", opset_imports=[helper.make_opsetid("", OPSET)])
        m.ir_version = IR_VERSION
        m.doc_string = doc
        return m


def _seed(name: str) -> int:
    return zlib.crc32(name.encode())


def mobilenet_v2(width: float) -> tuple[onnx.ModelProto, int]:
    name = f"mobilenet_v2_{width}"
    g = GraphBuilder(name, _seed(name))
    cin = _make_divisible(32 * width)
    last = _make_divisible(1280 * max(1.0, width))
    x = g.relu6(g.conv("input", 3, cin, 3, stride=2, prefix="stem"))
    for t, c, n, s in MOBILENET_V2_BLOCKS:
        cout = _make_divisible(c * width)
        for i in range(n):
            stride = s if i == 0 else 1
            hidden = cin * t  # torchvision: round(inp * expand_ratio), all ints here
            y = x
            if t != 1:
                y = g.relu6(g.conv(y, cin, hidden, 1, prefix="expand"))
            y = g.relu6(g.conv(y, hidden, hidden, 3, stride=stride, groups=hidden, prefix="dw"))
            y = g.conv(y, hidden, cout, 1, prefix="project")
            x = g.add(x, y) if stride == 1 and cin == cout else y
            cin = cout
    x = g.relu6(g.conv(x, cin, last, 1, prefix="head"))
    x = g.global_avgpool_flatten(x)
    g.fc(x, last, NUM_CLASSES, "logits")
    doc = (f"MobileNetV2 width {width}, 224x224, 1000 classes; BatchNorm folded into conv "
           "biases; random weights (edgeprof benchmark example)")
    return g.model("input", "logits", doc), g.params


def squeezenet_1_1() -> tuple[onnx.ModelProto, int]:
    name = "squeezenet_1.1"
    g = GraphBuilder(name, _seed(name))

    def fire(x: str, cin: int, squeeze: int, e1: int, e3: int) -> str:
        s = g.relu(g.conv(x, cin, squeeze, 1, prefix="fire_squeeze"))
        a = g.relu(g.conv(s, squeeze, e1, 1, prefix="fire_expand1x1"))
        b = g.relu(g.conv(s, squeeze, e3, 3, prefix="fire_expand3x3"))
        return g.concat([a, b])

    # The stem conv has no padding, as torchvision's: 224 -> 111 -> (pool) 55.
    x = g.maxpool(g.relu(g.conv("input", 3, 64, 3, stride=2, pad=0, prefix="stem")))
    x = fire(x, 64, 16, 64, 64)
    x = fire(x, 128, 16, 64, 64)
    x = g.maxpool(x)
    x = fire(x, 128, 32, 128, 128)
    x = fire(x, 256, 32, 128, 128)
    x = g.maxpool(x)
    x = fire(x, 256, 48, 192, 192)
    x = fire(x, 384, 48, 192, 192)
    x = fire(x, 384, 64, 256, 256)
    x = fire(x, 512, 64, 256, 256)
    # Classifier: (dropout) 1x1 conv to the classes, ReLU, global average pool.
    x = g.relu(g.conv(x, 512, NUM_CLASSES, 1, prefix="classifier"))
    gap = g._uid("gap")
    g.nodes.append(helper.make_node("GlobalAveragePool", [x], [f"{gap}.out"], name=gap))
    g.nodes.append(helper.make_node("Flatten", [f"{gap}.out"], ["logits"], name="flatten",
                                    axis=1))
    doc = "SqueezeNet 1.1, 224x224, 1000 classes; random weights (edgeprof benchmark example)"
    return g.model("input", "logits", doc), g.params


MODELS: dict[str, Callable[[], tuple[onnx.ModelProto, int]]] = {
    **{f"mobilenet_v2_{w}": functools.partial(mobilenet_v2, w) for w in MOBILENET_V2_WIDTHS},
    "squeezenet_1.1": squeezenet_1_1,
}


def build(name: str, out: Path) -> tuple[Path, int]:
    """Write ``out/NAME.onnx`` after ``onnx.checker``; return its path and parameter count."""
    model, params = MODELS[name]()
    onnx.checker.check_model(model, full_check=True)
    path = out / f"{name}.onnx"
    tmp = path.with_suffix(".onnx.tmp")
    tmp.write_bytes(model.SerializeToString(deterministic=True))
    tmp.replace(path)
    return path, params


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="directory for the .onnx files")
    ap.add_argument("--only", nargs="+", metavar="NAME", choices=sorted(MODELS),
                    help=f"build only these ({', '.join(MODELS)})")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.only or list(MODELS):
        path, params = build(name, args.out)
        size = path.stat().st_size
        print(f"{path.name:26s} {params:>10,d} params  {size / 2**20:6.2f} MiB ({size:,d} bytes)",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
