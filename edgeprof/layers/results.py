"""``profiler_results.yml``: PipeEdge's per-layer results schema, with edgeprof's fields beside.

The file keeps every key PipeEdge's profiler writes and its scheduler converters read, with
the same meaning, so their tools read ours unchanged:

    batch_size: 8                  # samples per batch (microbatch)
    dtype: torch.float32           # str(torch dtype)
    layers: 6                      # layers in the whole model (not only those profiled)
    model_name: ...
    profile_data:                  # one entry per profiled layer, sorted by layer
    - layer: 1                     # 1-based
      memory: 0.742656             # MB (10^6 bytes) of the layer's parameters and buffers
      shape_in: [[3, 224, 224]]    # per sample: the batch dimension left out
      shape_out: [[197, 192]]
      time: 0.0399                 # seconds per batch: median of the timed iterations

PipeEdge's ``memory`` was a process-RSS difference around building the layer, in MB of 10^6
bytes; edgeprof's is the exact size of the layer's weights, in the same unit.  Its ``time``
was a mean; edgeprof's is the median (the mean is in ``time_stats``).  edgeprof adds, per
layer: ``name``, ``type``, ``time_stats``, ``param_bytes``, ``output_bytes``,
``alloc_peak_bytes``, ``rss_peak_bytes``, ``rss_growth_bytes`` (all ``*_bytes`` in bytes), and
at the top ``units`` (these definitions, in the file itself) and ``edgeprof`` (how the
profile was made: factory, granularity, input shapes, limits, one entry per run).  A file
written by PipeEdge itself (without them) is read and exported too.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .. import storage as files
from ..cpu_units import format_cpuset
from ..errors import ConfigError
from ..measure.sketch import percentile
from ..storage import read_input
from ..yamlfile import parse as parse_yaml

SCHEMA = "edgeprof-layers/1"
GRANULARITIES = ("children", "blocks", "leaves")
DTYPES = ("float32", "float64", "float16", "bfloat16")
MB = 1_000_000
"""``memory`` and the scheduler files' ``mem_MB``: megabytes of 10^6 bytes, as PipeEdge."""

UNITS: dict[str, str] = {
    "time": "seconds per batch: median of the timed iterations",
    "time_stats": "seconds per batch, over the timed iterations (p90 etc.: linear interpolation)",
    "memory": "MB = 10^6 bytes: the layer's parameters and buffers",
    "shape_in, shape_out": "per sample: the batch dimension is left out",
    "param_bytes": "bytes of the layer's parameters and buffers",
    "output_bytes": "bytes of the layer's output tensors (whole batch)",
    "alloc_peak_bytes": (
        "bytes: peak of the tensor storage the layer's operators allocated and held at once "
        "during one forward (outputs included; inputs, weights and the libraries' private "
        "scratch buffers not), counted per operator in a torch dispatch mode"
    ),
    "rss_peak_bytes": (
        "bytes: the worker process's resident-set high-water mark (VmHWM, reset before the "
        "layer through /proc/self/clear_refs) during one forward of the layer; it counts the "
        "shared libraries' file pages (torch's), which the kernel charges to whichever cgroup "
        "read them first: not comparable with the memory limit or the run's peak_bytes"
    ),
    "rss_growth_bytes": (
        "bytes: rss_peak_bytes minus the resident set just before the layer; a lower bound "
        "of its extra memory, since the allocator reuses pages already resident"
    ),
    "quota_stalls": (
        "under a --cpus quota that can stall: of the timed iterations, those whose stall is "
        "known, those the quota stalled, the stall seconds inside them, the median with that "
        "stall time spread evenly over them (even_median_s: as on a core that much slower), "
        "and the percentiles that measure the stall pattern rather than the layer (distorted)"
    ),
}

_SEED_LAYER_KEYS = ("layer", "memory", "shape_in", "shape_out", "time")


@dataclass(frozen=True)
class TimeStats:
    """Statistics of one layer's timed iterations, in seconds per batch."""

    iterations: int
    median: float
    mean: float
    sd: float | None
    """Sample standard deviation; ``None`` for one iteration (one sample has no spread: a
    single timed iteration had written ``sd: 0.0``)."""
    min: float
    p90: float
    p95: float
    p99: float
    max: float

    @classmethod
    def of(cls, times: Sequence[float]) -> TimeStats:
        if not times:
            raise ValueError("no timed iteration")
        ordered = sorted(times)
        return cls(
            iterations=len(ordered),
            median=statistics.median(ordered),
            mean=statistics.fmean(ordered),
            sd=statistics.stdev(ordered) if len(ordered) > 1 else None,
            min=ordered[0],
            p90=percentile(ordered, 90),
            p95=percentile(ordered, 95),
            p99=percentile(ordered, 99),
            max=ordered[-1],
        )

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class LayerEntry:
    """One ``profile_data`` entry: PipeEdge's five keys, then whatever else the file holds."""

    layer: int
    memory: float
    shape_in: list[list[int]]
    shape_out: list[list[int]]
    time: float
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "layer": self.layer,
            "memory": self.memory,
            "shape_in": [list(s) for s in self.shape_in],
            "shape_out": [list(s) for s in self.shape_out],
            "time": self.time,
        }
        d.update({k: v for k, v in self.extra.items() if k not in d})
        return d


@dataclass(frozen=True)
class LayerResults:
    """A whole ``profiler_results.yml``.  ``meta`` is the ``edgeprof`` block (``None`` in a
    file PipeEdge wrote)."""

    batch_size: int
    dtype: str
    layers: int
    model_name: str
    profile_data: tuple[LayerEntry, ...]
    meta: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "batch_size": self.batch_size,
            "dtype": self.dtype,
            "layers": self.layers,
            "model_name": self.model_name,
        }
        if self.meta is not None:
            d["units"] = dict(UNITS)
            d["edgeprof"] = _plain(self.meta)
        d["profile_data"] = [e.to_dict() for e in self.profile_data]
        return d

    @property
    def covered(self) -> list[int]:
        return [e.layer for e in self.profile_data]

    @property
    def complete(self) -> bool:
        return self.covered == list(range(1, self.layers + 1))

    def missing_text(self) -> str:
        have = set(self.covered)
        return layer_ranges([i for i in range(1, self.layers + 1) if i not in have])


def _plain(value: Any) -> Any:
    """Mappings and tuples as plain dicts and lists, so ``yaml.safe_dump`` takes them."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


# -- reading and validating -------------------------------------------------------------------


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: object) -> bool:
    return (_is_int(v) or isinstance(v, float)) and math.isfinite(float(v))  # type: ignore[arg-type]


def _shapes(v: object) -> list[list[int]] | None:
    if not isinstance(v, list) or not v:
        return None
    out = []
    for s in v:
        if not isinstance(s, list) or not all(_is_int(d) and d >= 0 for d in s):
            return None
        out.append(list(s))
    return out


def _other_kind(data: Mapping[str, Any]) -> str | None:
    """What else edgeprof writes that ``data`` is, where it is no profile: given one (a
    models.yml as ``-o``, a sweep.json as ``-i``), the reader had said only ``missing key
    'batch_size'``."""
    if "batch_size" in data or "profile_data" in data:
        return None
    if "runs" in data and "cells" in data:
        return "a sweep's results (sweep.json)"
    if "termination" in data and "limits" in data:
        return "a run's result (result.json)"
    entries = list(data.values())
    if entries and all(isinstance(v, dict) and "model_profiles" in v for v in entries):
        return "a device types file (`edgeprof layers export device-types` writes it)"
    if entries and all(isinstance(v, dict) and "parameters_out" in v for v in entries):
        return "a models file (`edgeprof layers export models` writes it)"
    return None


def from_dict(data: object, source: str) -> LayerResults:
    """Validate a loaded results document; a problem is a :class:`ConfigError` naming
    ``source`` and the entry."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: not a profiler results file (expected a mapping)")
    other = _other_kind(data)
    if other is not None:
        raise ConfigError(
            f"{source} is {other}, not a per-layer profile: expected the profiler_results.yml "
            "that `edgeprof layers MODULE:FACTORY -o FILE` writes"
        )
    for key in ("batch_size", "dtype", "layers", "model_name", "profile_data"):
        if key not in data:
            raise ConfigError(f"{source}: missing key {key!r}")
    batch, dtype, layers, name = (data[k] for k in ("batch_size", "dtype", "layers", "model_name"))
    if not _is_int(batch) or batch < 1:
        raise ConfigError(f"{source}: batch_size must be a positive integer, got {batch!r}")
    if not isinstance(dtype, str) or not dtype:
        raise ConfigError(f"{source}: dtype must be a string such as torch.float32, got {dtype!r}")
    if not _is_int(layers) or layers < 1:
        raise ConfigError(f"{source}: layers must be a positive integer, got {layers!r}")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{source}: model_name must be a non-empty string, got {name!r}")
    raw = data["profile_data"]
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        raise ConfigError(f"{source}: profile_data must be a list")
    entries: list[LayerEntry] = []
    seen: set[int] = set()
    for i, item in enumerate(raw):
        where = f"{source}: profile_data[{i}]"
        if not isinstance(item, dict):
            raise ConfigError(f"{where}: expected a mapping")
        missing = [k for k in _SEED_LAYER_KEYS if k not in item]
        if missing:
            raise ConfigError(f"{where}: missing {', '.join(missing)}")
        layer = item["layer"]
        if not _is_int(layer) or not 1 <= layer <= layers:
            raise ConfigError(f"{where}: layer must be an integer in 1-{layers}, got {layer!r}")
        where = f"{source}: layer {layer}"
        if layer in seen:
            raise ConfigError(f"{where}: appears twice")
        seen.add(layer)
        for key in ("memory", "time"):
            if not _is_number(item[key]) or item[key] < 0:
                raise ConfigError(f"{where}: {key} must be a number ≥ 0, got {item[key]!r}")
        shape_in, shape_out = _shapes(item["shape_in"]), _shapes(item["shape_out"])
        if shape_in is None or shape_out is None:
            key = "shape_in" if shape_in is None else "shape_out"
            raise ConfigError(f"{where}: {key} must be a list of shapes (lists of integers)")
        entries.append(
            LayerEntry(
                layer=layer,
                memory=float(item["memory"]),
                shape_in=shape_in,
                shape_out=shape_out,
                time=float(item["time"]),
                extra={k: v for k, v in item.items() if k not in _SEED_LAYER_KEYS},
            )
        )
    entries.sort(key=lambda e: e.layer)
    meta = data.get("edgeprof")
    if meta is not None and (not isinstance(meta, dict) or meta.get("schema") != SCHEMA):
        got = meta.get("schema") if isinstance(meta, dict) else meta
        raise ConfigError(f"{source}: the edgeprof block is not schema {SCHEMA} (got {got!r})")
    return LayerResults(
        batch_size=batch,
        dtype=dtype,
        layers=layers,
        model_name=name,
        profile_data=tuple(entries),
        meta=meta,
    )


def load(path: Path) -> LayerResults:
    text = read_input(path, "")
    data = parse_yaml(text, path)  # ``FILE:LINE: problem``, as every YAML file edgeprof reads
    return from_dict(data, str(path))


class _Dumper(yaml.SafeDumper):
    """Lists of scalars in flow style (shapes as ``[3, 224, 224]``, as in PipeEdge's file),
    everything else in block style."""


def _represent_list(dumper: yaml.SafeDumper, data: list[Any]) -> yaml.Node:
    flow = bool(data) and all(not isinstance(v, (list, dict)) for v in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


_Dumper.add_representer(list, _represent_list)


def dump_yaml(data: Any) -> str:
    """``data`` as YAML: keys in the given order (not sorted), scalar lists inline."""
    return yaml.dump(data, Dumper=_Dumper, default_flow_style=False, sort_keys=False, width=100)


def dump(results: LayerResults) -> str:
    return dump_yaml(results.to_dict())


def save(path: Path, results: LayerResults) -> None:
    """Write through a temporary file and a rename: an existing file is never half-written."""
    write_text_atomic(path, dump(results))


def write_text_atomic(path: Path, text: str) -> None:
    """:func:`edgeprof.storage.write_text_atomic`, a failure as one ConfigError line."""
    try:
        files.write_text_atomic(path, text)
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror}") from exc


def merge(existing: LayerResults, new: LayerResults) -> LayerResults:
    """``existing`` extended by ``new``'s layers (which must not overlap), runs appended."""
    overlap = sorted(set(existing.covered) & set(new.covered))
    if overlap:
        raise ConfigError(f"layers {layer_ranges(overlap)} are already in the results")
    meta: dict[str, Any] | None = None
    if existing.meta is not None or new.meta is not None:
        meta = dict(existing.meta or new.meta or {})
        runs = list((existing.meta or {}).get("runs", [])) + list((new.meta or {}).get("runs", []))
        meta["runs"] = runs
    return LayerResults(
        batch_size=existing.batch_size,
        dtype=existing.dtype,
        layers=existing.layers,
        model_name=existing.model_name,
        profile_data=tuple(
            sorted([*existing.profile_data, *new.profile_data], key=lambda e: e.layer)
        ),
        meta=meta,
    )


NOT_A_CHAIN = "do not give the model's own output"
"""The phrase of the worker's warning where the chained layers differ from the model (files
written before ``chain_check`` existed say it only so)."""


def chain_check(results: LayerResults) -> tuple[str, str]:
    """Whether the file's layers, chained, were found to give the model's own output:
    ``("different", why)``, ``("same", "")``, ``("unchecked", why)`` (no run of the file
    checked it), or ``("unknown", "")`` for a file PipeEdge wrote (no runs recorded)."""
    if results.meta is None:
        return "unknown", ""
    runs = [r for r in results.meta.get("runs") or [] if isinstance(r, Mapping)]
    for r in runs:
        warned = any(NOT_A_CHAIN in str(w) for w in r.get("warnings") or [])
        if r.get("chain_check") == "different" or warned:
            span = list(dict.fromkeys(map(str, r.get("layers") or ["?"])))
            return "different", (
                f"its run of layer{'s' if len(span) > 1 else ''} {'-'.join(span)} found that "
                f"the layers chained {NOT_A_CHAIN}: its forward is not a chain of these modules"
            )
    for r in runs:
        # Before chain_check was recorded, a run of layers 1-N checked silently.
        full = r.get("layers") == [1, results.layers] and "chain_check" not in r
        if r.get("chain_check") == "same" or full:
            return "same", ""
    return "unchecked", (
        "no run of it checked the layers chained against the whole model (the run that "
        "completes a file checks it since this edgeprof; profile it again to check)"
    )


def check_same_limits(have: object, want: str, src: str, what: str = "one file") -> None:
    """Refuse times made under limits ``want`` beside those ``src`` holds from limits ``have``
    (the ``describe`` of each): a profile extended, or a device type's timings in
    device_types.yml, must come from one device."""
    if have != want:
        raise ConfigError(
            f"{src} was profiled under limits {have}, not {want}: "
            f"times of {what} must come from one device"
        )


def layer_ranges(numbers: Sequence[int]) -> str:
    """``[1, 2, 3, 5]`` → ``"1-3, 5"``."""
    return format_cpuset(numbers, sep=", ")
