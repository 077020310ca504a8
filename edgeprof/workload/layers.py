"""The per-layer profiling workload: runs *inside* the limited run, started by edgeprof.

    python .../edgeprof/workload/layers.py SPEC.json

Self-contained on purpose: standard library and torch only, never ``import edgeprof``, so the
measured process holds nothing but the interpreter, torch and the user's model, and any Python
with torch can run it (``--python``).  The parent (:mod:`edgeprof.layers.run`) writes SPEC.json
and reads the JSON-lines file named in it; each line is written and flushed as soon as it is
known, so an OOM kill or a timeout still leaves every layer finished before it:

    {"kind": "model", "layers": N, "names": [...], "types": [...], "torch": ..., "threads": ...}
    {"kind": "layer", "layer": i, "name": ..., "type": ..., "shape_in": ..., "shape_out": ...,
     "param_bytes": ..., "output_bytes": ..., "alloc_peak_bytes": ..., "rss_peak_bytes": ...,
     "rss_growth_bytes": ..., "times_s": [...]}
    {"kind": "stage", "stage": "check"}     (the whole model once, to check the split)
    {"kind": "check", "chain": "same" | "different" | "unchecked"}
    {"kind": "warning", "message": ...}
    {"kind": "done", "profile_s": ...} | {"kind": "error", "message": ..., "layer": i | null}

A failure in the user's code ends the worker with exit status 3 and an ``error`` record (no
traceback): the parent reports it, in one line, as the run's result.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import sys
import sysconfig
import time
import traceback
import weakref
from collections.abc import Callable
from typing import Any, TextIO

EXIT_MODEL_ERROR = 3

# Modules that only group other modules and have no forward of their own (children and
# blocks granularity replace them by their items); Sequential is expanded by "blocks" only.
_CONTAINERS = ("ModuleList", "ModuleDict")


class ModelError(Exception):
    """The user's model or factory failed: one line for the report, no traceback."""

    def __init__(self, message: str, layer: int | None = None) -> None:
        super().__init__(message)
        self.layer = layer


def load_factory(spec: str) -> Callable[..., Any]:
    """``package.module:factory`` (imported with the working directory on ``sys.path``, as
    ``python -m`` does) or ``path/to/file.py:factory`` (its directory first on ``sys.path``,
    as ``python path/to/file.py`` does)."""
    module_name, _, attr = spec.rpartition(":")
    try:
        if module_name.endswith(".py") or os.sep in module_name:
            # Its directory first on sys.path, as `python DIR/FILE.py` puts it (the modules
            # beside it had not been found).
            sys.path.insert(0, os.path.dirname(os.path.abspath(module_name)))
            loader_spec = importlib.util.spec_from_file_location("_edgeprof_model", module_name)
            if loader_spec is None or loader_spec.loader is None:
                raise ModelError(f"cannot load {module_name}")
            module = importlib.util.module_from_spec(loader_spec)
            sys.modules["_edgeprof_model"] = module
            loader_spec.loader.exec_module(module)
        else:
            module = importlib.import_module(module_name)
    except ModelError:
        raise
    except Exception as exc:
        raise ModelError(f"cannot import {module_name}: {type(exc).__name__}: {exc}") from exc
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise ModelError(f"{module_name} has no callable {attr!r}")
    return factory  # type: ignore[no-any-return]


def user_frame(exc: BaseException) -> str:
    """`` (at models.py:12)``: :func:`user_line` in parentheses; empty where there is none."""
    where = user_line(exc)
    return f" (at {where})" if where else ""


def user_line(exc: BaseException) -> str:
    """``models.py:12``: the innermost frame of the traceback that is the user's code, not
    torch's, the standard library's or this worker's (``factory(): RuntimeError: boom`` had
    named no line to look at); empty where there is none."""
    skip = [os.path.dirname(os.path.abspath(__file__))]
    skip += [sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")]
    torch_file = getattr(sys.modules.get("torch"), "__file__", None)
    if isinstance(torch_file, str):  # torch's own package, wherever it is installed
        skip.append(os.path.dirname(os.path.dirname(os.path.abspath(torch_file))))
    where = ""
    for frame in traceback.extract_tb(exc.__traceback__):
        path = os.path.abspath(frame.filename)
        if frame.filename.startswith("<") or any(
            path.startswith(d.rstrip(os.sep) + os.sep) for d in skip if d
        ):
            continue
        rel = os.path.relpath(path)
        where = f"{path if rel.startswith('..') else rel}:{frame.lineno}"
    return where


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


def state_bytes(module: Any) -> int:
    """Bytes of the module's parameters and buffers (each storage counted once)."""
    seen: set[int] = set()
    total = 0
    for t in [*module.parameters(), *module.buffers()]:
        ptr = t.untyped_storage().data_ptr()
        if ptr not in seen:
            seen.add(ptr)
            total += t.untyped_storage().nbytes()
    return total


class _Rss:
    """The process's resident set and its high-water mark (``VmHWM``), which Linux lets a
    process reset for itself by writing 5 to ``/proc/self/clear_refs`` (Linux ≥ 4.0)."""

    def __init__(self) -> None:
        self.resettable = True

    def reset_peak(self) -> None:
        if self.resettable:
            try:
                with open("/proc/self/clear_refs", "w") as f:
                    f.write("5")
            except OSError:
                self.resettable = False

    @staticmethod
    def read() -> tuple[int | None, int | None]:
        """(current, peak) in bytes."""
        cur = peak = None
        try:
            with open("/proc/self/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        cur = int(line.split()[1]) * 1024
                    elif line.startswith("VmHWM:"):
                        peak = int(line.split()[1]) * 1024
        except OSError:
            pass
        return cur, peak


def _allocation_tracker(torch: Any) -> Any:
    """A dispatch mode that counts the bytes of every tensor storage an operator creates while
    it is active, minus those freed since (a weakref finalizer per storage), and keeps the peak
    of that sum: the layer's peak tensor memory as the allocator hands it out, outputs
    included, inputs and weights excluded (they existed before)."""
    dispatch: Any = importlib.import_module("torch.utils._python_dispatch")
    tree_flatten = importlib.import_module("torch.utils._pytree").tree_flatten

    class Tracker(dispatch.TorchDispatchMode):  # type: ignore[misc]
        @classmethod
        def _should_skip_dynamo(cls) -> bool:
            # Else torch wraps __torch_dispatch__ in torch._disable_dynamo, whose first call
            # imports torch._dynamo: seconds of CPU and tens of MB inside the measured run,
            # for a compiler this worker never uses.
            return False

        def __init__(self, existing: list[Any]) -> None:
            super().__init__()
            self.known = {t.untyped_storage().data_ptr() for t in existing}
            self.live = 0
            self.peak = 0

        def _freed(self, ptr: int, n: int) -> None:
            self.live -= n
            self.known.discard(ptr)

        def __torch_dispatch__(
            self, func: Any, types: Any, args: Any = (), kwargs: Any = None
        ) -> Any:
            out = func(*args, **(kwargs or {}))
            for t in tree_flatten(out)[0]:
                if not isinstance(t, torch.Tensor):
                    continue
                storage = t.untyped_storage()
                ptr = storage.data_ptr()
                if ptr in self.known or storage.nbytes() == 0:
                    continue  # a view, an in-place result or an input: no new memory
                self.known.add(ptr)
                n = storage.nbytes()
                self.live += n
                self.peak = max(self.peak, self.live)
                weakref.finalize(storage, self._freed, ptr, n)
            return out

    return Tracker


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
        raise ModelError(f"PyTorch is not installed for {sys.executable}: pip install torch") from (
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
        raise ModelError(
            f"the model has {n} layers at granularity {spec['granularity']}, "
            f"the results file being extended declares {expected}"
        )
    if not 1 <= start <= end <= n:
        raise ModelError(f"layer range {start}-{end} is outside the model's layers 1-{n}")
    batch = int(spec["batch_size"])
    inputs: Any = tuple(torch.randn(batch, *shape).to(dtype) for shape in spec["input_shapes"])
    if len(inputs) == 1:
        inputs = inputs[0]
    iterations, warmup = int(spec["iterations"]), int(spec["warmup"])
    rss = _Rss()
    tracker_cls = _allocation_tracker(torch)
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
                    torch, i, name, layer, inputs, iterations, warmup, rss, tracker_cls, batch
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
    rss: _Rss,
    tracker_cls: Any,
    batch: int,
) -> dict[str, Any]:
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
    for _ in range(iterations):
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
        (t.is_floating_point() or t.is_complex()) and not bool(torch.isfinite(t).all())
        for t in ref
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
    with open(argv[1]) as f:
        spec = json.load(f)
    # Run as a file, Python put this directory first on sys.path: the user's modules resolve
    # from the working directory instead, as with `python -m`.
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    sys.path.insert(0, os.getcwd())
    with open(spec["out"], "a") as out:
        try:
            profile(spec, out)
        except ModelError as exc:
            # The parent prints it, as one line with the run's outcome.
            _emit(out, {"kind": "error", "message": str(exc), "layer": exc.layer})
            return EXIT_MODEL_ERROR
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
