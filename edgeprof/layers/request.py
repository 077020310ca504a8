"""What ``edgeprof layers`` is asked: the request, validated before anything starts (the
factory, its input, its arguments, whether PyTorch and the module can be found), and whether
it may extend an existing results file."""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import json
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..model import Limits
from ..pysource import module_file, unbound
from .results import (
    DTYPES,
    GRANULARITIES,
    SCHEMA,
    LayerResults,
    check_same_limits,
    layer_ranges,
)

_FACTORY_RE = re.compile(r"^[^:]+:[A-Za-z_][A-Za-z0-9_]*$")
_IDENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_MODEL_FILES = {
    ".onnx": "an ONNX",
    ".tflite": "a TensorFlow Lite",
    ".pt": "a saved PyTorch",
    ".pth": "a saved PyTorch",
    ".pb": "a TensorFlow",
}
"""Model files a user may name as the MODULE (``mlp.onnx:x`` had been "no module named
'mlp'": the dotted name's first part)."""


@dataclass(frozen=True)
class LayersRequest:
    """What to profile.  Built by :func:`make_request`, which validates every field."""

    factory: str
    input_shapes: tuple[tuple[int, ...], ...]
    batch_size: int
    dtype: str = "float32"
    iterations: int = 10
    warmup: int = 2
    granularity: str = "children"
    layer_start: int = 1
    layer_end: int | None = None
    model_name: str | None = None
    factory_kwargs: Mapping[str, Any] = field(default_factory=dict)
    seed: int = 0

    @property
    def name(self) -> str:
        return self.model_name or self.factory

    @property
    def torch_dtype(self) -> str:
        return f"torch.{self.dtype}"


def parse_shape(text: str) -> tuple[int, ...]:
    """``"3,224,224"`` → ``(3, 224, 224)`` (per sample, without the batch dimension)."""
    parts = [p.strip() for p in text.split(",")]
    if not parts or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise ConfigError(
            f"--input-shape {text!r}: expected positive integers separated by commas, "
            "e.g. 3,224,224 (one sample, without the batch dimension)"
        )
    return tuple(int(p) for p in parts)


def parse_factory_args(items: Sequence[str]) -> dict[str, Any]:
    """``KEY=VALUE`` items; a VALUE is a Python literal (``4``, ``0.5``, ``"x"``, ``(1, 2)``)
    or else taken as a string."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not _IDENT_RE.match(key):
            raise ConfigError(f"--factory-arg {item!r}: expected NAME=VALUE, e.g. blocks=4")
        try:
            out[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            out[key] = value
        try:
            json.dumps(out[key])
        except TypeError:
            raise ConfigError(f"--factory-arg {item!r}: the value must be plain data") from None
    return out


def make_request(
    factory: str,
    input_shapes: Sequence[str],
    batch_size: int,
    *,
    dtype: str = "float32",
    iterations: int = 10,
    warmup: int = 2,
    granularity: str = "children",
    layer_start: int = 1,
    layer_end: int | None = None,
    model_name: str | None = None,
    factory_args: Sequence[str] = (),
    seed: int = 0,
) -> LayersRequest:
    if not _FACTORY_RE.match(factory):
        raise ConfigError(
            f"{factory!r}: expected MODULE:FACTORY, e.g. mypkg.models:build or models.py:build"
        )
    module, _, attr = factory.rpartition(":")
    kind = _MODEL_FILES.get(Path(module).suffix.lower())
    if kind is not None:
        raise ConfigError(
            f"{factory!r}: edgeprof layers profiles the layers of a PyTorch module that a Python "
            f"factory builds (MODULE:FACTORY, e.g. models.py:build); {module} is {kind} file, "
            "not one: time the whole model with `edgeprof run -- python infer.py "
            f"{module}` or `edgeprof bench infer.py:FUNC` (a script or function that loads it)"
        )
    if (module.endswith(".py") or "/" in module) and not Path(module).is_file():
        raise ConfigError(f"{factory!r}: no such file {module}")
    source = module_file(module, Path.cwd())  # the worker imports from the working directory
    if source is not None and unbound(source, (attr,)):
        raise ConfigError(f"{factory!r}: {source} defines no {attr!r}")
    if not input_shapes:
        raise ConfigError("--input-shape is required, e.g. --input-shape 3,224,224")
    shapes = tuple(parse_shape(s) for s in input_shapes)
    if batch_size < 1:
        raise ConfigError(f"--batch-size {batch_size}: must be at least 1")
    dt = dtype.removeprefix("torch.")
    if dt not in DTYPES:
        raise ConfigError(f"--dtype {dtype!r}: expected one of {', '.join(DTYPES)}")
    if iterations < 1:
        raise ConfigError(f"--iterations {iterations}: must be at least 1")
    if warmup < 0:
        raise ConfigError(f"--warmup {warmup}: must be 0 or more")
    if granularity not in GRANULARITIES:
        raise ConfigError(
            f"--granularity {granularity!r}: expected one of {', '.join(GRANULARITIES)}"
        )
    if layer_start < 1:
        raise ConfigError(f"--layer-start {layer_start}: layers are numbered from 1")
    if layer_end is not None and layer_end < layer_start:
        raise ConfigError(f"--layer-end {layer_end} is before --layer-start {layer_start}")
    return LayersRequest(
        factory=factory,
        input_shapes=shapes,
        batch_size=batch_size,
        dtype=dt,
        iterations=iterations,
        warmup=warmup,
        granularity=granularity,
        layer_start=layer_start,
        layer_end=layer_end,
        model_name=model_name,
        factory_kwargs=parse_factory_args(factory_args),
        seed=seed,
    )


def limits_dict(limits: Limits) -> dict[str, Any]:
    return {
        "cpus": limits.cpus,
        "cpuset": None if limits.cpuset is None else list(limits.cpuset),
        "memory_bytes": limits.memory,
        "describe": limits.describe(),
    }


def describe_request(request: LayersRequest, limits: Limits) -> dict[str, Any]:
    """The ``edgeprof`` block's fields that a file being extended must share with a run."""
    return {
        "schema": SCHEMA,
        "factory": request.factory,
        # As the file holds them after a YAML round trip (tuples become lists).
        "factory_kwargs": json.loads(json.dumps(dict(request.factory_kwargs))),
        "granularity": request.granularity,
        "input_shape": [list(s) for s in request.input_shapes],
        "limits": limits_dict(limits),
    }


def check_extendable(
    existing: LayerResults, request: LayersRequest, limits: Limits, where: str = "the results file"
) -> None:
    """Refuse, before anything runs, to extend a results file (named ``where``: "the results
    file has batch size 4" had named none) made of another model, dtype, batch size, split,
    input or device, or one that already holds the requested layers."""
    src = where
    if existing.model_name != request.name:
        raise ConfigError(
            f"{src} is for model {existing.model_name!r}, not {request.name!r} (--model-name)"
        )
    if existing.dtype != request.torch_dtype:
        raise ConfigError(f"{src} has dtype {existing.dtype}, not {request.torch_dtype}")
    if existing.batch_size != request.batch_size:
        raise ConfigError(f"{src} has batch size {existing.batch_size}, not {request.batch_size}")
    if existing.meta is None:
        raise ConfigError(
            f"{src} was not written by edgeprof: its split, input and limits are unknown"
        )
    want = describe_request(request, limits)
    labels = {
        "factory": "factory",
        "factory_kwargs": "factory arguments",
        "granularity": "granularity",
        "input_shape": "input shape",
    }
    for key, label in labels.items():
        if existing.meta.get(key) != want[key]:
            raise ConfigError(f"{src} has {label} {existing.meta.get(key)!r}, not {want[key]!r}")
    check_same_limits((existing.meta.get("limits") or {}).get("describe"), limits.describe(), src)
    end = request.layer_end if request.layer_end is not None else existing.layers
    if request.layer_start > existing.layers or end > existing.layers:
        raise ConfigError(
            f"layers {request.layer_start}-{end}: {src} declares {existing.layers} layers"
        )
    overlap = [i for i in existing.covered if request.layer_start <= i <= end]
    if overlap:
        missing = existing.missing_text() or "none"
        raise ConfigError(
            f"{src} already holds layers {layer_ranges(overlap)} "
            f"(missing: {missing}); choose --layer-start/--layer-end or another -o"
        )


def completes(existing: LayerResults, request: LayersRequest) -> bool:
    """Whether the request's range fills the last gap of ``existing`` (then the run checks the
    whole model: a file of ranges none of which reached both ends had never been checked)."""
    end = request.layer_end if request.layer_end is not None else existing.layers
    have = {*existing.covered, *range(request.layer_start, end + 1)}
    return have == set(range(1, existing.layers + 1))


def check_torch(python: str | None) -> None:
    """PyTorch is an optional extra: without it nothing starts, and the message says how to
    install it (only checkable for this interpreter)."""
    if python is None and importlib.util.find_spec("torch") is None:
        raise ConfigError(
            "edgeprof layers needs PyTorch: pip install 'edgeprof[torch]' "
            "(or pip install torch; on our machines torch==2.13.0 is the CPU wheel on disk)"
        )
    if python is not None:
        _check_other_torch(python)


_FIND_TORCH = "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('torch') else 3)"


def _check_other_torch(python: str) -> None:
    """Another interpreter (``--python``) is asked whether it finds torch, without importing
    it (tens of milliseconds): without torch the worker had started under the limits and
    ended "the model failed (exit 3): PyTorch is not installed for /usr/bin/python3"."""
    import subprocess

    try:
        done = subprocess.run(
            [python, "-c", _FIND_TORCH], capture_output=True, timeout=60, check=False
        )
    except OSError as exc:
        raise ConfigError(f"--python {python}: cannot run it: {exc.strerror}") from None
    except subprocess.TimeoutExpired:
        return  # slow, not absent: the worker finds out and says so
    if done.returncode == 3:
        raise ConfigError(f"--python {python}: PyTorch is not installed for it: pip install torch")
    if done.returncode != 0:
        raise ConfigError(
            f"--python {python}: not a Python 3 interpreter (asked whether it finds torch, it "
            f"exited {done.returncode})"
        )


def check_importable(
    factory: str, python: str | None, cwd: Path, env: Mapping[str, str] | None
) -> None:
    """A dotted module that neither the working directory, ``PYTHONPATH`` nor this Python
    can find is refused before the run, which would import torch (seconds) first.  Only
    for this interpreter, and only the top-level package: finding a submodule imports its
    parents, the user's code."""
    module = factory.rpartition(":")[0]
    if python is not None or module.endswith(".py") or "/" in module:
        return
    import importlib.machinery
    import os

    top = module.partition(".")[0]
    pythonpath = (env or {}).get("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
    where = [str(cwd), *(p for p in pythonpath.split(os.pathsep) if p)]
    if importlib.machinery.PathFinder.find_spec(top, where) is not None:
        return
    with contextlib.suppress(ImportError, ValueError):
        if importlib.util.find_spec(top) is not None:
            return
    raise ConfigError(
        f"{factory!r}: no module named {top!r} in {cwd}, PYTHONPATH or {sys.executable}'s path"
    )
