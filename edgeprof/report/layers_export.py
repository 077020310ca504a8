"""Converters from ``profiler_results.yml`` to PipeEdge's scheduler inputs.

``models.yml`` maps a model name to its properties, which do not depend on the device:

    MODEL:
      layers: N
      mem_MB: [per layer]            # the results' `memory` (MB = 10^6 bytes)
      parameters_in: int             # elements of one sample's input to layer 1
      parameters_out: [per layer]    # elements of one sample's output of each layer

``device_types.yml`` maps a device type to its memory, bandwidth and timings:

    DEVICE_TYPE:
      mem_MB: int                    # default: the --memory the profile ran under, in MB
      bw_Mbps: int
      model_profiles:
        MODEL:
        - batch_size: 8
          dtype: torch.float32
          time_s: [per layer]        # the results' `time` (median seconds per batch)

Both files are extended when they exist: an entry already there is kept (an error) unless
``overwrite``; a device type's memory and bandwidth are never changed, since the timings
already recorded for it depend on them.  Only a complete profile (layers 1…N) is exported,
and not one whose layers, chained, did not give the model's own output (:func:`check_chain`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..layers.results import (
    MB,
    LayerResults,
    chain_check,
    check_same_limits,
    dump_yaml,
    write_text_atomic,
)
from ..storage import read_capped, why_unreadable
from ..yamlfile import parse as parse_yaml


def _require_complete(results: LayerResults, source: str) -> None:
    if not results.complete:
        raise ConfigError(
            f"{source} holds layers {', '.join(map(str, results.covered)) or 'none'} of "
            f"{results.layers}: profile layers {results.missing_text()} first "
            "(edgeprof layers … --layer-start/--layer-end, same -o)"
        )


def check_chain(results: LayerResults, source: str, *, allow: bool = False) -> str | None:
    """Refuse a profile whose layers, chained, did not give the model's own output: the
    scheduler would split a model that is not these layers one after the other (such a file
    had been exported silently, rc 0).  ``allow`` (``--allow-not-chain``) exports it anyway.
    Returns a warning for a file no run of which checked it (``None`` otherwise)."""
    if not results.complete:
        return None  # refused for that first (_require_complete)
    status, why = chain_check(results)
    if status == "different" and not allow:
        raise ConfigError(
            f"{source}: {why}; the scheduler would split the model wrongly (try another "
            "--granularity, or --allow-not-chain to export it anyway)"
        )
    if status == "different":
        return f"{source}: {why}; exported anyway (--allow-not-chain)"
    if status == "unchecked":
        return f"{source}: {why}"
    return None


def _elements(shapes: list[list[int]]) -> int:
    return sum(math.prod(s) for s in shapes)


def model_entry(results: LayerResults) -> dict[str, Any]:
    return {
        "layers": results.layers,
        "mem_MB": [e.memory for e in results.profile_data],
        "parameters_in": _elements(results.profile_data[0].shape_in),
        "parameters_out": [_elements(e.shape_out) for e in results.profile_data],
    }


def _load_mapping(path: Path, what: str) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        text = read_capped(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {what} {path}: {why_unreadable(exc)}") from exc
    data = parse_yaml(text, f"{what} {path}")  # PyYAML's several lines had been printed whole
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: not a {what} (expected a mapping of names)")
    return data


def _save(path: Path, data: dict[str, Any]) -> None:
    write_text_atomic(path, dump_yaml(data))


def export_models(
    results: LayerResults, path: Path, *, source: str = "results", overwrite: bool = False
) -> str:
    """Add (or with ``overwrite`` replace) the model's entry in ``path``; returns a line
    saying what was done."""
    _require_complete(results, source)
    models = _load_mapping(path, "models file")
    name = results.model_name
    if name in models and not overwrite:
        raise ConfigError(f"{path} already has model {name!r} (--overwrite replaces it)")
    action = "replaced" if name in models else "added"
    models[name] = model_entry(results)
    _save(path, models)
    return f"{action} model {name!r} ({results.layers} layers) in {path}"


def default_mem_mb(results: LayerResults) -> int | None:
    """The memory limit the profile ran under, in MB (10^6 bytes, rounded down)."""
    limits = (results.meta or {}).get("limits") or {}
    mem = limits.get("memory_bytes")
    return None if mem is None else int(mem // MB)


def _made(results: LayerResults) -> tuple[str | None, str | None]:
    """(limits, granularity) the profile was made under; ``None`` where the file (PipeEdge's
    own) does not say."""
    meta = results.meta or {}
    return (meta.get("limits") or {}).get("describe"), meta.get("granularity")


def _check_same_device(
    results: LayerResults, dev: dict[str, Any], path: Path, device_type: str
) -> None:
    """Refuse timings that do not describe the device type's other timings' device, or the
    model as its other profiles split it: profiles under cpus=1, cpus=0.5 and no limit, of 6
    and of 11 layers, had all been added to one device type ("added timings", rc 0)."""
    src = f"{path}: device type {device_type!r}"
    found = dev.get("edgeprof")
    record: dict[str, Any] = found if isinstance(found, dict) else {}
    limits, granularity = _made(results)
    if record.get("limits") is not None and limits is not None:
        check_same_limits(record["limits"], limits, src, what="one device type")
    name = results.model_name
    models = record.get("models")
    split = models.get(name) if isinstance(models, dict) else None
    split = split if isinstance(split, dict) else {}
    have_layers = split.get("layers")
    others = [
        p
        for p in dev["model_profiles"].get(name) or []
        if isinstance(p, dict) and isinstance(p.get("time_s"), list)
    ]
    if have_layers is None and others:
        have_layers = len(others[0]["time_s"])
    have_gran = split.get("granularity")
    if have_layers is not None and have_layers != results.layers:
        raise ConfigError(
            f"{src} holds {name!r} in {have_layers} layers"
            + (f" (granularity {have_gran})" if have_gran else "")
            + f", not {results.layers}"
            + (f" (granularity {granularity})" if granularity else "")
            + ": one model's timings on one device type must split it alike"
        )
    if have_gran is not None and granularity is not None and have_gran != granularity:
        raise ConfigError(
            f"{src} holds {name!r} split at granularity {have_gran}, not {granularity}: one "
            "model's timings on one device type must split it alike"
        )


def _record_device(results: LayerResults, dev: dict[str, Any]) -> None:
    """What the checks above compare later timings with, under the device type's ``edgeprof``
    key (PipeEdge's readers take mem_MB, bw_Mbps and model_profiles by name)."""
    if results.meta is None:
        return  # PipeEdge's own file: its layer count is its time_s's length, checked so
    limits, granularity = _made(results)
    record = dev.get("edgeprof")
    if not isinstance(record, dict):
        record = dev["edgeprof"] = {}
    if limits is not None and record.get("limits") is None:
        record["limits"] = limits
    split: dict[str, Any] = {"layers": results.layers}
    if granularity is not None:
        split["granularity"] = granularity
    if not isinstance(record.get("models"), dict):
        record["models"] = {}
    record["models"][results.model_name] = split


def export_device_types(
    results: LayerResults,
    path: Path,
    device_type: str,
    *,
    mem_mb: int | None = None,
    bw_mbps: int | None = None,
    source: str = "results",
    overwrite: bool = False,
) -> str:
    """Add the model's timings to ``device_type`` in ``path`` (creating the device type,
    which then needs its memory and bandwidth); returns a line saying what was done."""
    _require_complete(results, source)
    if not device_type:
        raise ConfigError("the device type name is empty")
    types = _load_mapping(path, "device types file")
    if device_type in types:
        dev = types[device_type]
        if not isinstance(dev, dict) or "mem_MB" not in dev or "bw_Mbps" not in dev:
            raise ConfigError(f"{path}: device type {device_type!r} lacks mem_MB or bw_Mbps")
        for label, given, have in (
            ("--mem-mb", mem_mb, dev["mem_MB"]),
            ("--bw-mbps", bw_mbps, dev["bw_Mbps"]),
        ):
            if given is not None and given != have:
                raise ConfigError(
                    f"{path}: device type {device_type!r} has {have}, not {label} {given}; "
                    "its recorded timings depend on it"
                )
    else:
        if mem_mb is None:
            mem_mb = default_mem_mb(results)
        if mem_mb is None or bw_mbps is None:
            need = " and ".join(
                x for x, v in (("--mem-mb", mem_mb), ("--bw-mbps", bw_mbps)) if v is None
            )
            raise ConfigError(f"new device type {device_type!r}: give {need}")
        dev = {"mem_MB": mem_mb, "bw_Mbps": bw_mbps, "model_profiles": {}}
        types[device_type] = dev
    if dev.get("model_profiles") is None:
        dev["model_profiles"] = {}
    _check_same_device(results, dev, path, device_type)
    profiles = dev["model_profiles"].setdefault(results.model_name, [])
    entry = {
        "batch_size": results.batch_size,
        "dtype": results.dtype,
        "time_s": [e.time for e in results.profile_data],
    }
    action = "added"
    for i, p in enumerate(profiles):
        if p.get("batch_size") == results.batch_size and p.get("dtype") == results.dtype:
            if not overwrite:
                raise ConfigError(
                    f"{path}: {device_type!r} already has a profile of {results.model_name!r} "
                    f"for batch size {results.batch_size}, {results.dtype} "
                    "(--overwrite replaces it)"
                )
            profiles[i] = entry
            action = "replaced"
            break
    else:
        profiles.append(entry)
    _record_device(results, dev)
    _save(path, types)
    return (
        f"{action} timings of {results.model_name!r} (batch {results.batch_size}, "
        f"{results.dtype}) for device type {device_type!r} in {path}"
    )
