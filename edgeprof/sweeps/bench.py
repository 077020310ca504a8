"""``edgeprof bench``: latency and throughput of a Python model per batch size, under limits.

Each batch size is one profiled run of :mod:`edgeprof.workload.bench` (a fresh process, so the
peak memory of one batch size is not the high-water mark of another), named
``FUNC bs=N`` (its target, file or module, function and loader, is in
:attr:`~edgeprof.model.RunResult.target`); its phases are ``load``, ``warmup`` and
``infer``, and its latency is that of the ``infer`` iterations.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from ..backends import Backend
from ..errors import ConfigError
from ..measure.runner import DEFAULT_KILL_GRACE_S, profile
from ..model import Limits, RunResult, Termination
from ..names import check_name
from ..pysource import module_file, unbound
from ..resultdirs import walk_dirs
from .run_options import check_count

DEFAULT_WARMUP = 5
DEFAULT_ITERATIONS = 50

# The worker must be this edgeprof, whatever the workload's sys.path holds; the working
# directory stays first on the path (python -c puts it there), so MODULE is found from it.
# The directory that holds the package, not the package's own: given that, a worker had
# imported whichever edgeprof its interpreter had installed (a tester's second clone's
# bench ran /work/main's worker).
PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])
ON_PATH = f"import sys; sys.path.insert(1, {PACKAGE_PARENT!r}); "
_BOOT = ON_PATH + "from edgeprof.workload.bench import main; sys.exit(main())"


def parse_batch_sizes(text: str) -> tuple[int, ...]:
    """``1,8,32`` → ``(1, 8, 32)``; a :class:`ConfigError` naming ``--batch-size`` otherwise."""
    sizes = []
    for part in text.split(","):
        try:
            n = int(part.strip())
        except ValueError:
            raise ConfigError(
                f"--batch-size {text!r}: {part.strip()!r} is not an integer"
            ) from None
        if n < 1:
            raise ConfigError(f"--batch-size {text!r}: batch sizes must be at least 1")
        sizes.append(n)
    return tuple(dict.fromkeys(sizes))


def check_target(target: str, cwd: Path | None, loader: str = "load") -> tuple[str, str]:
    """``MODULE:FUNC`` or ``FILE.py:FUNC`` → (module, func), found without importing it; a
    FUNC or ``loader`` its source surely lacks (:func:`edgeprof.pysource.unbound`) is
    refused."""
    module, sep, func = target.rpartition(":")
    if not sep or not module or not func.isidentifier():
        raise ConfigError(f"bench target {target!r}: expected MODULE:FUNC or FILE.py:FUNC")
    if module.endswith(".py") or "/" in module:
        path = module_file(module, cwd or Path("."))
        if path is None:
            raise ConfigError(f"bench target {target!r}: no file {(cwd or Path('.')) / module}")
        _check_names(target, path, func, loader)
        return module, func
    top = module.split(".")[0]
    base = str(cwd) if cwd is not None else "."
    sys.path.insert(0, base)
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        spec = None
    finally:
        sys.path.remove(base)
    if spec is None:
        raise ConfigError(
            f"bench target {target!r}: module {top!r} is not importable from {base}"
        )
    source = module_file(module, Path(base))
    if source is None and module == top and spec.origin and spec.origin.endswith(".py"):
        # An installed or standard module's own source (found without importing it): a
        # misspelt function of one had run every batch size to exit 1 (a user's).
        source = Path(spec.origin)
    if source is not None:
        _check_names(target, source, func, loader)
    return module, func


def target_identity(module: str, func: str, loader: str, cwd: Path | None = None) -> str:
    """What :attr:`RunResult.target` records: ``models/a.py:infer, loader load``, or
    ``pkg.mod:infer, loader load``.  A file's path is taken from the root of the git
    checkout that holds it, wherever the bench ran from and however the path was typed
    (``bench models/a.py:infer`` in CI and ``cd models; bench a.py:infer`` at a desk had
    recorded two targets, and ``compare`` refused the same code: a reviewer's reading);
    outside a checkout, as given, normalised (``./a.py`` is ``a.py``)."""
    if module.endswith(".py") or "/" in module:
        path = Path(os.path.abspath((cwd or Path(".")) / module))
        root = next((d for d in path.parents if (d / ".git").exists()), None)
        module = path.relative_to(root).as_posix() if root else os.path.normpath(module)
    return f"{module}:{func}, loader {loader}"


def _check_names(target: str, path: Path, func: str, loader: str) -> None:
    """A misspelt FUNC or loader had every batch size's run load the model, then fail in
    the workload (exit 1, one message a batch size): refused before any run."""
    missing = unbound(path, (func, loader))
    for name, role in ((func, "inference function"), (loader, "loader (--loader)")):
        if name in missing:
            raise ConfigError(f"bench target {target!r}: {path} defines no {role} {name!r}")


def run_dir(batch_size: int, k: int, repeat: int) -> Path:
    """Where run ``k`` of a batch size writes in a bench's ``--out``: ``bs<N>/``, or
    ``bs<N>/<k>/`` with ``--repeat``."""
    return Path(f"bs{batch_size}") if repeat == 1 else Path(f"bs{batch_size}") / str(k)


def refuse_other_runs(out: Path, planned: Sequence[Path]) -> None:
    """Refuse an ``--out`` holding runs this bench will not write (an earlier bench's other
    batch sizes, or its ``bs1/`` beside ``--repeat``'s ``bs1/<k>/``).  A bench writes no
    manifest: ``report`` and ``compare`` read every ``result.json`` under its directory, so
    an earlier one-run ``bs1/result.json`` was read as a fourth run of ``--repeat 3``.  (A
    sweep only warns: its ``sweep.json`` names its runs.)"""
    if not out.is_dir():
        return
    want = {out / p for p in planned}
    # The runs a report of `out` reads (to its depth): not the whole tree below.
    found = {d for d, mark in walk_dirs(out, ("result.json",)) if mark}
    other = sorted(found - want, key=str)
    if other:
        shown = ", ".join(str((p / "result.json").relative_to(out)) for p in other[:4])
        more = f" and {len(other) - 4} more" if len(other) > 4 else ""
        raise ConfigError(
            f"--out {out} holds {len(other)} run(s) this bench does not write ({shown}{more}): "
            "report and compare would read them as this bench's; give another --out, or "
            "remove them"
        )


def bench(
    target: str,
    batch_sizes: Sequence[int] = (1,),
    limits: Limits | None = None,
    *,
    loader: str = "load",
    name: str | None = None,
    warmup: int = DEFAULT_WARMUP,
    iterations: int = DEFAULT_ITERATIONS,
    repeat: int = 1,
    backend: str | Backend = "auto",
    interval: float | str = 0.1,
    timeout: float | str | None = None,
    kill_grace: float | str = DEFAULT_KILL_GRACE_S,
    cores_busy: str = "wait",
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    out_dir: str | Path | None = None,
    stdout: int | None = None,
    python: str = sys.executable,
    device: str | None = None,
    device_cores: int | None = None,
    allow_over_host: bool = False,
    gpus: str | None = None,
    gpu_memory: str | None = None,
    unified_memory: bool = False,
    on_result: Callable[[RunResult, int, int], None] | None = None,
) -> list[RunResult]:
    """``repeat`` runs per batch size (in ``out_dir``'s ``bs<N>/``, or ``bs<N>/<k>/`` with
    several); stops early when a run is interrupted.  ``name``: the label's stem in place of
    FUNC (``NAME bs=8``), as ``run --name`` labels a run: two variants benched with one
    name are paired by ``compare``.  One run a batch size cannot be judged
    by ``compare``, which needs the noise of two or more (a tester's 2× slower function
    passed as "not enough repeats").  ``kill_grace``, ``cores_busy``, ``device_cores``,
    ``allow_over_host``, ``gpus``, ``gpu_memory`` and ``unified_memory``: as
    :func:`~edgeprof.measure.runner.profile`'s.
    ``on_result(result, k, n)``: after the k-th run of n (the library stays quiet; the CLI
    says each run's end on stderr with it)."""
    work_dir = None if cwd is None else Path(cwd)
    if not loader.isidentifier():
        raise ConfigError(f"--loader {loader!r}: not a Python name")
    if name is not None:
        check_name(name, "--name")
    module, func = check_target(target, work_dir, loader)
    identity = target_identity(module, func, loader, work_dir)
    if iterations < 1 or warmup < 0:
        raise ConfigError("--iterations must be at least 1 and --warmup at least 0")
    if repeat < 1:
        raise ConfigError(f"--repeat {repeat}: must be at least 1")
    check_count(repeat, "--repeat")  # run's and fit's bound: 100001 had started the sweep
    if not batch_sizes:
        raise ConfigError("--batch-size: no batch size given")
    if backend == "docker":
        raise ConfigError(
            "edgeprof bench runs the model on this host (--backend cgroup): the phases and "
            "iterations cannot leave a container"
        )
    runs = [(bs, k) for bs in batch_sizes for k in range(1, repeat + 1)]
    if out_dir is not None:
        refuse_other_runs(Path(out_dir), [run_dir(bs, k, repeat) for bs, k in runs])
    results: list[RunResult] = []
    for bs, k in runs:
        where = run_dir(bs, k, repeat)
        command = [
            python,
            "-c",
            _BOOT,
            target,
            "--batch-size",
            str(bs),
            "--loader",
            loader,
            "--warmup",
            str(warmup),
            "--iterations",
            str(iterations),
        ]
        result = profile(
            command,
            limits,
            backend=backend,
            interval=interval,
            timeout=timeout,
            kill_grace=kill_grace,
            cores_busy=cores_busy,
            env=env,
            cwd=work_dir,
            out_dir=None if out_dir is None else Path(out_dir) / where,
            name=f"{name or func} bs={bs}",
            target=identity,
            stdout=stdout,
            device=device,
            device_cores=device_cores,
            allow_over_host=allow_over_host,
            gpus=gpus,
            gpu_memory=gpu_memory,
            unified_memory=unified_memory,
        )
        results.append(result)
        if on_result is not None:
            on_result(result, len(results), len(runs))
        if result.termination is Termination.INTERRUPTED:
            break
    return results
