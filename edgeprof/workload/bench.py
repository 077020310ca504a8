"""The workload of ``edgeprof bench``: runs inside the limits, reports through
:mod:`edgeprof.workload.instrument`.  Standard library only (besides the user's module).

    python -m edgeprof.workload.bench TARGET --batch-size N [--loader NAME] [--warmup K]
                                   [--iterations N]

TARGET is ``MODULE:FUNC`` (MODULE importable from the working directory) or ``FILE.py:FUNC``.
``LOADER(batch_size)`` (default ``load``, in the same module) builds the model and one batch
of inputs and returns them as one object; ``FUNC(state)`` runs one inference on that batch.
Phases: ``load`` (the import of the module and the loader), ``warmup`` (K untimed calls; no
phase when K is 0), ``infer`` (N timed calls, each one iteration of ``batch_size`` items).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from .instrument import iteration, phase


def import_target(module: str) -> ModuleType:
    """``pkg.mod`` from ``sys.path``, or a ``.py`` file by path (its directory first on
    ``sys.path``, as Python runs a script)."""
    if module.endswith(".py") or "/" in module:
        path = Path(module)
        # Its directory first on sys.path, as `python DIR/FILE.py` puts it: the file's own
        # imports of the modules beside it resolve (they had failed, ModuleNotFoundError).
        sys.path.insert(0, str(path.resolve().parent))
        spec = importlib.util.spec_from_file_location(path.stem, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {module}")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = mod
        spec.loader.exec_module(mod)
        return mod
    return importlib.import_module(module)


def _function(mod: ModuleType, name: str, role: str) -> Callable[..., Any]:
    fn = getattr(mod, name, None)
    if not callable(fn):
        raise SystemExit(f"edgeprof bench: {mod.__name__} has no {role} function {name!r}")
    return fn  # type: ignore[no-any-return]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="edgeprof.workload.bench")
    ap.add_argument("target")
    ap.add_argument("--batch-size", type=int, required=True)
    ap.add_argument("--loader", default="load")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=50)
    args = ap.parse_args(argv)
    module, _, func = args.target.rpartition(":")
    with phase("load"):
        mod = import_target(module)
        infer = _function(mod, func, "inference")
        loader = _function(mod, args.loader, "loader")
        state = loader(args.batch_size)
    if args.warmup > 0:  # none asked: no phase (an empty one had shown 0.0ms at 50% CPU)
        with phase("warmup"):
            for _ in range(args.warmup):
                infer(state)
    with phase("infer"):
        for _ in range(args.iterations):
            with iteration(items=args.batch_size):
                infer(state)
    return 0


if __name__ == "__main__":
    sys.exit(main())
