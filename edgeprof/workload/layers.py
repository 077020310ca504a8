"""The per-layer profiling workload: runs *inside* the limited run, started by edgeprof.

    python .../edgeprof/workload/layers.py SPEC.json

Self-contained on purpose: standard library and torch only, never ``import edgeprof``, so the
measured process holds nothing but the interpreter, torch and the user's model, and any Python
with torch can run it (``--python``); its two modules beside it (the user's code:
:mod:`.user_code`; a layer's memory: :mod:`.layer_memory`) are loaded by their path.  The
parent (:mod:`edgeprof.layers.run`) writes SPEC.json and reads the JSON-lines file named in
it; each line is written and flushed as soon as it is known, so an OOM kill or a timeout
still leaves every layer finished before it:

    {"kind": "model", "layers": N, "names": [...], "types": [...], "torch": ..., "threads": ...}
    {"kind": "layer", "layer": i, "name": ..., "type": ..., "shape_in": ..., "shape_out": ...,
     "param_bytes": ..., "output_bytes": ..., "alloc_peak_bytes": ..., "rss_peak_bytes": ...,
     "rss_growth_bytes": ..., "times_s": [...]}
    {"kind": "stage", "stage": "check"}     (the whole model once, to check the split)
    {"kind": "check", "chain": "same" | "different" | "unchecked"}
    {"kind": "warning", "message": ...}
    {"kind": "done", "profile_s": ...} | {"kind": "error", "message": ..., "layer": i | null}

A failure in the user's code ends the worker with exit status 3 and an ``error`` record (no
traceback): the parent reports it, in one line, as the run's result.  A request the model
cannot serve (a layer range past its last layer) or an interpreter without torch is not the
model's failure: exit status 2 and an ``error`` record with ``"input": true``.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import json
import os
import sys
import time
from types import ModuleType
from typing import TYPE_CHECKING, Any, TextIO


def _sibling(name: str) -> ModuleType:
    """The worker's module ``name`` beside this file, loaded by its path: run as a script (the
    parent's way), this file has no package to import it from, and the script's directory is
    not on ``sys.path`` under ``python -P`` or ``PYTHONSAFEPATH``."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"_edgeprof_worker_{name}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


if TYPE_CHECKING or __package__:
    from . import instrument
    from .layer_memory import Rss, allocation_tracker, state_bytes
    from .user_code import ModelError, load_factory, user_frame, user_line
else:  # run as a script: SPEC.json's worker
    _memory, _user = _sibling("layer_memory"), _sibling("user_code")
    instrument = _sibling("instrument")  # standard library only, as this file
    Rss, allocation_tracker, state_bytes = (
        _memory.Rss,
        _memory.allocation_tracker,
        _memory.state_bytes,
    )
    ModelError, load_factory = _user.ModelError, _user.load_factory
    user_frame, user_line = _user.user_frame, _user.user_line

EXIT_MODEL_ERROR = 3
EXIT_BAD_INPUT = 2


class BadInput(Exception):
    """Not the model's failure: the request or the interpreter (a layer range past the
    model's last layer, no torch for --python), exit 2.  Both had been "the model failed
    (exit 3)", the exit status the CLI keeps for budgets and regressions."""


# Modules that only group other modules and have no forward of their own (children and
# blocks granularity replace them by their items); Sequential is expanded by "blocks" only.
_CONTAINERS = ("ModuleList", "ModuleDict")


def split_layers(torch: Any, model: Any, granularity: str) -> list[tuple[str, Any]]:
    """The model as a chain of (dotted name, module), in definition order.

    ``children``: the model's direct children; ``blocks``: the same with every
    ``nn.Sequential`` expanded too, down to modules that are not plain containers; ``leaves``:
    the modules without children.  ``ModuleList``/``ModuleDict`` are always expanded (they
    have no forward).  A model without children is one layer.
    """
    expand: tuple[type, ...] = tuple(getattr(torch.nn, c) for c in _CONTAINERS)
    if granularity == "blocks":
        expand += (torch.nn.Sequential,)

    def walk(prefix: str, module: Any, top: bool) -> list[tuple[str, Any]]:
        kids = list(module.named_children())
        if not kids:
            return [(prefix or "(model)", module)]
        if not top and granularity != "leaves" and not isinstance(module, expand):
            return [(prefix, module)]
        out: list[tuple[str, Any]] = []
        for name, child in kids:
            out.extend(walk(f"{prefix}.{name}" if prefix else name, child, False))
        return out

    return walk("", model, True)


def _tensors(value: Any, torch: Any) -> list[Any]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        out: list[Any] = []
        for v in value:
            out.extend(_tensors(v, torch))
        return out
    if isinstance(value, dict):
        return _tensors(list(value.values()), torch)
    return []


def shapes(value: Any, torch: Any, batch: int) -> list[list[int]]:
    """Shapes of the tensors in ``value`` without the batch dimension: the first of
    ``batch``'s size, dim 0 as in PipeEdge's rule where it is, else the next (an LSTM's
    output is (seq, batch, hidden) and its h and c (layers, batch, hidden): dim 0 alone had
    shown ``[1, 32]`` for a (2, 1, 32) h at batch 1); a tensor with none is shown whole."""
    out = []
    for t in _tensors(value, torch):
        dims = list(t.shape)
        if batch in dims:
            del dims[dims.index(batch)]
        out.append(dims)
    return out


def call(layer: Any, inputs: Any) -> Any:
    return layer(*inputs) if isinstance(inputs, tuple) else layer(inputs)


def _emit(out: TextIO, record: dict[str, Any]) -> None:
    out.write(json.dumps(record) + "\n")
    out.flush()


def profile(spec: dict[str, Any], out: TextIO) -> None:
    """Build the model, split it, profile each layer of the range; records go to ``out``."""
    # Imported here, not at the top: `torch` is optional for edgeprof, and mypy need not
    # analyse torch's sources for a module that only drives it.
    try:
        torch: Any = importlib.import_module("torch")
    except ImportError as exc:
        raise BadInput(f"PyTorch is not installed for {sys.executable}: pip install torch") from (
            exc
        )
    threads = os.environ.get("OMP_NUM_THREADS", "").strip()
    if threads.isdigit() and int(threads) > 0:
        torch.set_num_threads(int(threads))
    torch.manual_seed(int(spec.get("seed", 0)))
    dtype = getattr(torch, spec["dtype"])
    factory = load_factory(spec["factory"])
    t0 = time.perf_counter()
    try:
        model = factory(**spec.get("factory_kwargs", {}))
    except Exception as exc:
        raise ModelError(
            f"{spec['factory']}(): {type(exc).__name__}: {exc}{user_frame(exc)}"
        ) from exc
    if not isinstance(model, torch.nn.Module):
        raise ModelError(
            f"{spec['factory']}() returned {type(model).__name__}, not a torch.nn.Module"
        )
    model = model.to(dtype).eval()
    build_s = time.perf_counter() - t0
    layers = split_layers(torch, model, spec["granularity"])
    n = len(layers)
    start = int(spec.get("layer_start", 1))
    end = n if spec.get("layer_end") is None else int(spec["layer_end"])
    _emit(
        out,
        {
            "kind": "model",
            "layers": n,
            "names": [name for name, _ in layers],
            "types": [type(m).__name__ for _, m in layers],
            "torch": torch.__version__,
            "threads": torch.get_num_threads(),
            "build_s": build_s,
            "param_bytes": state_bytes(model),
        },
    )
    expected = spec.get("expect_layers")
    if expected is not None and expected != n:
        raise BadInput(
            f"the model has {n} layers at granularity {spec['granularity']}, "
            f"the results file being extended declares {expected}"
        )
    if not 1 <= start <= end <= n:
        raise BadInput(f"layer range {start}-{end} is outside the model's layers 1-{n}")
    batch = int(spec["batch_size"])
    inputs: Any = tuple(torch.randn(batch, *shape).to(dtype) for shape in spec["input_shapes"])
    if len(inputs) == 1:
        inputs = inputs[0]
    iterations, warmup = int(spec["iterations"]), int(spec["warmup"])
    rss = Rss()
    tracker_cls = allocation_tracker(torch)
    t_profile = time.perf_counter()
    first = inputs
    with torch.inference_mode():
        for i, (name, layer) in enumerate(layers, start=1):
            if i > end:
                break
            try:
                if i < start:
                    inputs = call(layer, inputs)  # only to reach the range's input
                    continue
                record = _profile_layer(
                    torch,
                    i,
                    name,
                    layer,
                    inputs,
                    iterations,
                    warmup,
                    rss,
                    tracker_cls,
                    batch,
                    report=bool(spec.get("report_iterations")),
                )
            except Exception as exc:
                raise ModelError(
                    f"layer {i} ({name}: {type(layer).__name__}) failed: "
                    f"{type(exc).__name__}: {exc}{user_frame(exc)}{_why(model, first, i)}",
                    layer=i,
                ) from exc
            inputs = record.pop("_output")
            _emit(out, record)
        profile_s = time.perf_counter() - t_profile
        # The whole model is checked by the run whose range reaches the last layer, or
        # completes the file being extended (the parent's ``check_whole``): a file made of
        # ranges 1-2 and 3 had never been checked, and a forward that is not a chain of
        # these modules reached the scheduler's files.
        if end == n or spec.get("check_whole"):
            # The whole forward once, after the profile (so that it disturbs none of it): the
            # chained layers must give what the model gives, else the split does not
            # describe the model (a forward that is not a chain of these modules).
            _emit(out, {"kind": "stage", "stage": "check"})
            _check_whole(torch, model, layers, first, inputs, end, spec["granularity"], out)
    _emit(out, {"kind": "done", "profile_s": profile_s})


def _why(model: Any, first: Any, i: int) -> str:
    """Why layer ``i`` may have failed: the whole model run on the same input says whether
    the model itself fails (then the split is not the cause: ``bad_forward`` had been told
    to try another --granularity) or runs (then layer ``i``'s input, the chained output of
    the layers before it, is not what the model gives it)."""
    try:
        call(model, first)
    except Exception as exc:
        return (
            f"; the whole model fails on this input too ({type(exc).__name__}"
            + (f" at {user_line(exc)}" if user_line(exc) else "")
            + "):"
            " the model itself fails, not the split (check its forward, the --input-shape and "
            "--dtype)"
        )
    if i == 1:
        return "; the whole model runs on this input, but its first layer alone does not"
    return (
        f"; the whole model runs on this input, but layer {i} fails on layer {i - 1}'s output:"
        " the model's forward is not a chain of these modules (try another --granularity)"
    )


def _check_whole(
    torch: Any,
    model: Any,
    layers: list[tuple[str, Any]],
    first: Any,
    chained: Any,
    end: int,
    granularity: str,
    out: TextIO,
) -> None:
    """Run the layers after ``end`` (unprofiled) to the model's end, then the whole model on
    the first input, and compare; a ``check`` record says the outcome."""
    try:
        for _name, layer in layers[end:]:
            chained = call(layer, chained)
        reference = call(model, first)
    except Exception as exc:
        _emit(
            out,
            {
                "kind": "warning",
                "message": f"model(input) failed, the split was not checked against "
                f"it: {type(exc).__name__}: {exc}{user_frame(exc)}",
            },
        )
        _emit(out, {"kind": "check", "chain": "unchecked"})
        return
    _check_chain(torch, reference, chained, granularity, out)


def _profile_layer(
    torch: Any,
    index: int,
    name: str,
    layer: Any,
    inputs: Any,
    iterations: int,
    warmup: int,
    rss: Rss,
    tracker_cls: Any,
    batch: int,
    report: bool = False,
) -> dict[str, Any]:
    """One layer's record; ``report``: each timed iteration goes to the runner, in the phase
    ``layer:INDEX``, so that its check of how a CPU quota's stalls fell on them, ``edgeprof
    run``'s, judges each layer's times."""
    for _ in range(warmup):
        call(layer, inputs)
    # Memory pass (not timed: the tracker's bookkeeping would count as the layer's time).
    existing = [*_tensors(inputs, torch), *layer.parameters(), *layer.buffers()]
    tracker = tracker_cls(existing)
    rss.reset_peak()
    rss_before, _ = rss.read()
    with tracker:
        output = call(layer, inputs)
    _, rss_peak = rss.read()
    alloc_peak = tracker.peak
    del output
    times: list[float] = []
    quiet = contextlib.nullcontext()
    # The events go out between the timed spans (iteration() sends on its exit).
    with instrument.phase(f"layer:{index}") if report else quiet:
        for _ in range(iterations):
            with instrument.iteration() if report else quiet:
                t = time.perf_counter()
                output = call(layer, inputs)
                times.append(time.perf_counter() - t)
    outs = _tensors(output, torch)
    if not outs:
        raise TypeError(f"returned {type(output).__name__}, not tensors")
    return {
        "kind": "layer",
        "layer": index,
        "name": name,
        "type": type(layer).__name__,
        "shape_in": shapes(inputs, torch, batch),
        "shape_out": shapes(output, torch, batch),
        "param_bytes": state_bytes(layer),
        # The outputs' own data, what the next stage receives: a view's storage is its
        # base's (x[:, -1] of a 4×10×64 tensor had counted 10 KiB for its 1 KiB).
        "output_bytes": sum(t.numel() * t.element_size() for t in outs),
        "alloc_peak_bytes": alloc_peak,
        "rss_peak_bytes": rss_peak if rss.resettable else None,
        "rss_growth_bytes": (
            None
            if rss_peak is None or rss_before is None or not rss.resettable
            else max(0, rss_peak - rss_before)
        ),
        "times_s": times,
        "_output": output,
    }


def _check_chain(torch: Any, reference: Any, chained: Any, granularity: str, out: TextIO) -> None:
    """Warn where the chained layers do not give the model's own output, and where that
    output holds NaN or infinite values.  NaN compares equal to NaN here: a Sequential
    whose output was NaN had been called "not a chain" (``allclose`` without
    ``equal_nan`` is false for any NaN)."""
    ref, got = _tensors(reference, torch), _tensors(chained, torch)
    same = len(ref) == len(got) and all(
        a.shape == b.shape
        and torch.allclose(a.float(), b.float(), rtol=1e-3, atol=1e-4, equal_nan=True)
        for a, b in zip(ref, got, strict=True)
    )
    _emit(out, {"kind": "check", "chain": "same" if same else "different"})
    if not same:
        _emit(
            out,
            {
                "kind": "warning",
                "message": (
                    f"the layers chained one after the other (granularity {granularity}) do not "
                    "give the model's own output: its forward is not a chain of these modules "
                    "(try another --granularity, or build the model as an nn.Sequential)"
                ),
            },
        )
    if any(
        (t.is_floating_point() or t.is_complex()) and not bool(torch.isfinite(t).all()) for t in ref
    ):
        _emit(
            out,
            {
                "kind": "warning",
                "message": (
                    "the model's output holds NaN or infinite values: the layers were timed "
                    "computing them (check the weights, the input and --dtype)"
                ),
            },
        )


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: layers.py SPEC.json", file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        spec = json.load(f)
    # Run as a file, Python put this directory first on sys.path: the user's modules resolve
    # from the working directory instead, as with `python -m`.
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    sys.path.insert(0, os.getcwd())
    with open(spec["out"], "a", encoding="utf-8") as out:
        try:
            profile(spec, out)
        except ModelError as exc:
            # The parent prints it, as one line with the run's outcome.
            _emit(out, {"kind": "error", "message": str(exc), "layer": exc.layer})
            return EXIT_MODEL_ERROR
        except BadInput as exc:
            _emit(out, {"kind": "error", "message": str(exc), "layer": None, "input": True})
            return EXIT_BAD_INPUT
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
