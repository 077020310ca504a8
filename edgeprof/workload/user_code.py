"""The user's code, as the per-layer worker (:mod:`edgeprof.workload.layers`) meets it: its
factory loaded, and a failure in it named by the user's own line.  Standard library only, as
the worker is: it runs inside the measured process."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import sysconfig
import traceback
from collections.abc import Callable
from typing import Any


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
