"""Result files: the output directory, atomic JSON writes, reading results back."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .model import RunResult


def prepare_out_dir(path: Path) -> Path:
    """Create ``path`` if needed and prove it is writable, before anything is started."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=path, prefix=".edgeprof-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise ConfigError(f"cannot write to output directory {path}: {exc.strerror}") from exc
    return path


def check_writable(path: Path) -> None:
    """A file written at the end (a report, a calibration) can be: refused before the work."""
    if path.is_dir():
        raise ConfigError(f"cannot write {path}: it is a directory")
    if not path.parent.is_dir() or not os.access(path.parent, os.W_OK):
        raise ConfigError(f"cannot write {path}: {path.parent} is not a writable directory")


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON through a temporary file and a rename: readers never see half a file."""
    write_text_atomic(path, json.dumps(data, indent=2) + "\n")


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` through a temporary file and a rename: readers never see half a file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_result(path: Path, result: RunResult) -> None:
    write_json_atomic(path, result.to_dict())


def read_result(path: Path) -> RunResult:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read result {path}: {exc}") from exc
    try:
        return RunResult.from_dict(data)
    except (KeyError, TypeError) as exc:
        raise ConfigError(f"{path} is not an edgeprof result: missing {exc}") from exc


#: ``sweep.json``: every run of a sweep (each a full result dict) plus the per-cell statistics.
SWEEP_SCHEMA = "edgeprof-sweep/1"


def load_runs(paths: list[Path]) -> list[RunResult]:
    """Every run in ``paths``: a ``result.json``, a ``sweep.json`` (key ``runs``), a JSON list
    of results (``run --json`` with several runs), or a directory searched recursively (a
    directory holding a ``sweep.json`` is read through it, not through its run files).
    Order is kept: file order as given, sorted paths inside a directory."""
    runs: list[RunResult] = []
    for path in paths:
        if path.is_dir():
            sweep = path / "sweep.json"
            files = [sweep] if sweep.exists() else sorted(path.rglob("result.json"))
            if not files:
                raise ConfigError(f"{path}: no result.json or sweep.json in it")
            runs.extend(load_runs(files))
            continue
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot read result {path}: {exc}") from exc
        if isinstance(data, dict) and data.get("schema") == SWEEP_SCHEMA:
            items = data.get("runs")
        elif isinstance(data, list):
            items = data
        else:
            items = [data]
        if not isinstance(items, list):
            raise ConfigError(f"{path} is not an edgeprof result or sweep")
        for item in items:
            if not isinstance(item, dict):
                raise ConfigError(f"{path} is not an edgeprof result or sweep")
            try:
                runs.append(RunResult.from_dict(item))
            except (KeyError, TypeError, ValueError) as exc:
                msg = f"{path} is not an edgeprof result: bad or missing {exc}"
                raise ConfigError(msg) from exc
    return runs


def load_fits(path: Path) -> list[dict[str, Any]] | None:
    """The fits of an ``edgeprof fit`` ``fit.json`` (or of ``fit --out``'s directory, which
    holds one beside its runs); ``None`` when ``path`` is neither."""
    file = path / "fit.json" if path.is_dir() else path
    if not file.is_file():
        return None
    try:
        data = json.loads(file.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read {file}: {exc}") from exc
    docs = data.get("fits") if isinstance(data, dict) and "fits" in data else [data]
    if not isinstance(docs, list) or not all(
        isinstance(d, dict) and "min_memory_bytes" in d and "name" in d for d in docs
    ):
        return None
    return docs


def append_locked(path: Path, text: str) -> None:
    """Append ``text`` to ``path`` under an exclusive ``flock``, in one write: concurrent runs
    appending to one summary file never interleave their lines."""
    import fcntl

    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror}") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        data = text.encode()
        while data:
            data = data[os.write(fd, data) :]
    finally:
        os.close(fd)  # closing releases the lock
