"""Profiling a model's layers: the run under the limits, the results.

The worker (:mod:`edgeprof.workload.layers`) is the workload of an ordinary
:func:`edgeprof.profile` run, so the whole-run report, the limits, OOM and timeout handling
are the runner's.  The request is validated before anything starts (:mod:`.request`); this
module writes the worker's spec, reads the JSON lines it left (all of them, even after an
OOM kill) and turns them into :class:`~edgeprof.layers.results.LayerResults`.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..backends import Backend
from ..errors import ConfigError
from ..measure.runner import DEFAULT_KILL_GRACE_S, profile
from ..model import Limits, RunResult, Termination
from ..units import format_binary
from ..version import __version__
from .request import (
    LayersRequest,
    check_importable,
    check_torch,
    describe_request,
    limits_dict,
)
from .results import (
    MB,
    LayerEntry,
    LayerResults,
    TimeStats,
    layer_ranges,
)
from .stalls import PHASE, own_warning, quota_stalls

WORKER = Path(__file__).resolve().parent.parent / "workload" / "layers.py"
"""Run as a script, not ``-m``: the model's Python need not have edgeprof installed."""


@dataclasses.dataclass(frozen=True)
class LayersRun:
    """The outcome: the whole run's :class:`RunResult` and what the worker reported."""

    result: RunResult
    request: LayersRequest
    limits: Limits
    model: Mapping[str, Any] | None
    """The worker's ``model`` record (layer count, names, torch version, threads)."""
    layers: tuple[Mapping[str, Any], ...]
    """One record per layer profiled, in order (also those before an OOM kill)."""
    warnings: tuple[str, ...]
    error: str | None
    """The worker's one-line account of a failure in the user's model."""
    profile_s: float | None
    """Seconds the worker spent in the profiling loop (after imports and the model build)."""
    checking: bool = False
    """The worker had finished the layers and was running the whole model to check the split."""
    stalls: Mapping[int, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    """Per layer, how the ``cpus`` quota's stalls fell on its timed iterations
    (:func:`~edgeprof.layers.stalls.quota_stalls`); empty without a quota that can stall."""
    bad_input: bool = False
    """The worker refused the request (``error`` is why): a layer range past the model's
    last layer, an interpreter without torch; not the model's failure (exit 2, not 3)."""
    chain: str | None = None
    """The check against the whole model: ``same``, ``different`` (the layers chained do
    not give the model's output), ``unchecked`` (the model failed), ``None`` (not run)."""

    @property
    def ok(self) -> bool:
        return (
            self.result.termination is Termination.EXITED
            and self.result.exit_code == 0
            and self.profile_s is not None
        )

    @property
    def total_layers(self) -> int | None:
        return None if self.model is None else int(self.model["layers"])

    def failure(self, out: Path | None) -> str:
        """One line: why the run gave no results, where it stopped, what was (not) written."""
        r = self.result
        code = "" if r.exit_code is None else f" (exit {r.exit_code})"
        if self.error is not None and self.bad_input:
            head = self.error
        elif self.error is not None:
            head = f"the model failed{code}: {self.error}"
        else:
            head = f"the run ended {r.termination.value}{code}"
            if r.termination is Termination.OOM:
                head += f" under memory={format_binary(r.limits.memory)}"
                if r.memory.peak_bytes is not None:
                    head += f", peak {format_binary(r.memory.peak_bytes)}"
            total = self.total_layers
            if total is None:
                head += ", before the model was built"
            elif self.checking:
                head += (
                    f", after its {len(self.layers)} layer(s), while running the whole model "
                    "once to check the split"
                )
            else:
                done = [int(x["layer"]) for x in self.layers]
                nxt = (done[-1] + 1) if done else self.request.layer_start
                names = self.model["names"] if self.model else []
                where = f" ({names[nxt - 1]})" if 0 < nxt <= len(names) else ""
                if nxt <= total:
                    head += f", during layer {nxt}{where} of {total}"
                head += (
                    f"; layers {layer_ranges(done)} were profiled before it"
                    if done
                    else "; no layer was profiled before it"
                )
        tail = f"; nothing written to {out}" if out is not None else ""
        return head + tail

    def to_results(self) -> LayerResults:
        """The profiled layers in the results schema (needs a finished run)."""
        if self.model is None or not self.ok:
            raise ConfigError("the run gave no layer results")
        entries = []
        for rec in self.layers:
            stats = TimeStats.of(rec["times_s"])
            entries.append(
                LayerEntry(
                    layer=int(rec["layer"]),
                    memory=rec["param_bytes"] / MB,
                    shape_in=rec["shape_in"],
                    shape_out=rec["shape_out"],
                    time=stats.median,
                    extra={
                        "name": rec["name"],
                        "type": rec["type"],
                        "time_stats": stats.to_dict(),
                        "param_bytes": rec["param_bytes"],
                        "output_bytes": rec["output_bytes"],
                        "alloc_peak_bytes": rec["alloc_peak_bytes"],
                        "rss_peak_bytes": rec["rss_peak_bytes"],
                        "rss_growth_bytes": rec["rss_growth_bytes"],
                        **(
                            {"quota_stalls": dict(self.stalls[int(rec["layer"])])}
                            if int(rec["layer"]) in self.stalls
                            else {}
                        ),
                    },
                )
            )
        r = self.result
        first, last = entries[0].layer, entries[-1].layer
        run_info = {
            "layers": [first, last],
            "started_at": r.started_at,
            "edgeprof_version": __version__,
            "torch": self.model.get("torch"),
            "threads": self.model.get("threads"),
            "iterations": self.request.iterations,
            "warmup": self.request.warmup,
            "backend": r.backend,
            "mechanism": r.mechanism,
            "applied_limits": limits_dict(r.limits),
            "cpu_period_s": r.cpu.period_s,
            "termination": r.termination.value,
            "exit_code": r.exit_code,
            "wall_s": r.wall_s,
            "profile_s": self.profile_s,
            "cpu_s": r.cpu.total_s,
            "peak_bytes": r.memory.peak_bytes,
            "peak_source": r.memory.peak_source,
            "model_param_bytes": self.model.get("param_bytes"),
            "chain_check": self.chain,
            "warnings": [*self.warnings, *r.warnings],
        }
        meta = {**describe_request(self.request, self.limits), "runs": [run_info]}
        return LayerResults(
            batch_size=self.request.batch_size,
            dtype=self.request.torch_dtype,
            layers=int(self.model["layers"]),
            model_name=self.request.name,
            profile_data=tuple(entries),
            meta=meta,
        )


def run_layers(
    request: LayersRequest,
    limits: Limits | None = None,
    *,
    backend: str | Backend = "auto",
    python: str | None = None,
    expect_layers: int | None = None,
    check_whole: bool = False,
    timeout: float | str | None = None,
    kill_grace: float | str | None = None,
    cores_busy: str = "wait",
    cwd: str | Path | None = None,
    cgroup_parent: str | None = None,
    stdout: int | None = None,
    device: str | None = None,
    env: Mapping[str, str] | None = None,
    allow_over_host: bool = False,
    device_cores: int | None = None,
) -> LayersRun:
    """Run the worker under ``limits`` and collect its records (``allow_over_host``,
    ``device_cores``, ``cores_busy`` and ``kill_grace``: as
    :func:`~edgeprof.measure.runner.profile`'s; ``None``: its default grace).

    ``python``: the interpreter that runs the worker (default: this one; it needs torch).
    ``expect_layers``: the layer count the model must have (a results file being extended).
    ``check_whole``: this range completes the file being extended, so the worker checks the
    whole model even where the range ends before the last layer
    (:func:`~edgeprof.layers.request.completes`).
    A model failure, an OOM kill or a timeout is a result: see :attr:`LayersRun.ok` and
    :meth:`LayersRun.failure`.
    """
    limits = limits or Limits()
    check_torch(python)
    check_importable(request.factory, python, Path.cwd() if cwd is None else Path(cwd), env)
    if getattr(backend, "name", backend) == "docker":
        raise ConfigError(
            "edgeprof layers runs its worker from this host's edgeprof: --backend docker is "
            "not supported yet"
        )
    with tempfile.TemporaryDirectory(prefix="edgeprof-layers-") as tmp:
        out = Path(tmp) / "layers.jsonl"
        spec = {
            "factory": request.factory,
            "factory_kwargs": dict(request.factory_kwargs),
            "input_shapes": [list(s) for s in request.input_shapes],
            "batch_size": request.batch_size,
            "dtype": request.dtype,
            "iterations": request.iterations,
            "warmup": request.warmup,
            "granularity": request.granularity,
            "layer_start": request.layer_start,
            "layer_end": request.layer_end,
            "expect_layers": expect_layers,
            "check_whole": check_whole,
            "seed": request.seed,
            # Each timed iteration to the runner, whose check of how a quota's stalls fell
            # on them judges each layer (.stalls): only under a quota, which can stall.
            "report_iterations": limits.cpus is not None,
            "out": str(out),
        }
        spec_path = Path(tmp) / "spec.json"
        spec_path.write_text(json.dumps(spec))
        result = profile(
            [python or sys.executable, str(WORKER), str(spec_path)],
            limits,
            backend=backend,
            timeout=timeout,
            kill_grace=DEFAULT_KILL_GRACE_S if kill_grace is None else kill_grace,
            cores_busy=cores_busy,
            cwd=cwd,
            name=request.name,
            cgroup_parent=cgroup_parent,
            stdout=stdout,
            device=device,
            device_cores=device_cores,
            env=env,
            allow_over_host=allow_over_host,
        )
        records = _read_records(out)
    return _collect(result, request, limits, records)


def _read_records(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            break  # a line cut short by a kill: everything before it is whole
        if isinstance(rec, dict):
            records.append(rec)
    return records


def _collect(
    result: RunResult, request: LayersRequest, limits: Limits, records: list[dict[str, Any]]
) -> LayersRun:
    layers = tuple(r for r in records if r.get("kind") == "layer")
    stalls = quota_stalls(result, layers)
    result = dataclasses.replace(
        result,
        warnings=tuple(w for w in result.warnings if not own_warning(result, w)),
        # The worker's phases and iterations served the check above; the user named none,
        # and the run's table would list them beside the layers' own.
        phases=tuple(p for p in result.phases if not p.name.startswith(PHASE)),
        latency=None if any(p.name.startswith(PHASE) for p in result.phases) else result.latency,
    )
    model = next((r for r in records if r.get("kind") == "model"), None)
    failed = next((r for r in records if r.get("kind") == "error"), None)
    done = next((r for r in records if r.get("kind") == "done"), None)
    return LayersRun(
        result=result,
        request=request,
        limits=limits,
        model=model,
        layers=layers,
        warnings=(
            *(r["message"] for r in records if r.get("kind") == "warning"),
            *([stalls.warning] if stalls.warning is not None else []),
        ),
        stalls=stalls.per_layer,
        error=None if failed is None else str(failed["message"]),
        bad_input=failed is not None and failed.get("input") is True,
        profile_s=None if done is None else float(done["profile_s"]),
        checking=any(r.get("kind") == "stage" and r.get("stage") == "check" for r in records),
        chain=next((str(r["chain"]) for r in records if r.get("kind") == "check"), None),
    )
