"""``edgeprof devices``: the merged device catalog as one table, or JSON."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..analysis.device_setting import calibrated_elsewhere, calibrated_share
from ..analysis.devices import CALIBRATED, Device, origin, whose
from ..cpu_units import format_period
from ..errors import ConfigError
from ..model import STORAGE
from ..units import format_binary
from .table import plain_table

HEADER = [
    "device", "cores", "memory", "speed", "cpu period", "storage", "calibration", "catalog",
    "source",
]  # fmt: skip

NOTES = (
    "speed: a device core against one of this host's, as one quota of cores × speed CPUs: it "
    "holds for work that keeps every core busy;",
    "'needs calibration': unknown (a spec sheet gives none), so --device runs its cores at "
    "this host's speed until you measure the board and run edgeprof calibrate;",
    "'host's; predicted': its cores run at this host's speed and its calibration predicts "
    "the device's figures ('speed: calibration' in the entry runs them at its speed); "
    "'calibrated at other limits': its calibration has no fit at the entry's own cores and "
    "memory, so predicts nothing for its runs (run --device says which it has);",
    "'cpus=C from calibration': the share the entry's calibration implies, 'poor fit' where "
    "that fit's R², held-out error or contended profiling says it may be far off (run "
    "--device says which).",
    "catalog: the file an entry came from; an entry replaces the whole entry of its name "
    "in an earlier catalog (shipped, then $EDGEPROF_DEVICES, then --devices).",
    "What a share of this host cannot emulate (caches, SIMD, memory bandwidth, heat, "
    "accelerators, the board's own swap): docs/method.md, 'What edgeprof cannot emulate'.",
)


def render_devices(catalog: Mapping[str, Device]) -> str:
    """The table, its notes, and each entry's own (a size whose unit reads as decimal)."""
    own = [f"note: {n}" for d in sorted(catalog.values(), key=lambda d: d.name) for n in d.notes]
    return plain_table(None, HEADER, catalog_rows(catalog), ["", *NOTES, *own])


def devices_json(catalog: Mapping[str, Device]) -> str:
    return json.dumps(catalog_json(catalog), indent=2) + "\n"


def describe_speed(device: Device) -> str:
    """The speed column of ``edgeprof devices``."""
    if device.speed == CALIBRATED:
        return _calibrated(device)
    if device.share is not None:
        return f"share {device.share:g}" + _predicts(device, "")
    if isinstance(device.speed, float):
        return f"speed {device.speed:g}" + _predicts(device, "")
    if device.calibration is not None:
        # Its cores run at this host's speed, and its calibration predicts the device's
        # figures: "needs calibration" had been shown beside the file that calibrates it.
        return "host's" + _predicts(device, "; predicted")
    return "needs calibration"


def _predicts(device: Device, predicted: str) -> str:
    """What the entry's calibration predicts for its runs: ``predicted`` where it was fitted
    at the entry's own limits, else that it was fitted at other limits (it predicts nothing
    for the entry's runs: a verifier's entry of speed 0.5 and 2 cores with a calibration of
    1 core's was listed as one of 1 core's), or that it cannot be read."""
    if device.calibration is None:
        return ""
    try:
        elsewhere = calibrated_elsewhere(device)
    except ConfigError:  # run --device says why, in full
        return "; calibration unreadable"
    return predicted if elsewhere is None else "; calibrated at other limits"


def catalog_cell(device: Device) -> str:
    """The catalog column: where the entry came from, and the earlier entry of its name it
    replaces, in ``run``'s and ``doctor``'s words (``envcat.yml ($EDGEPROF_DEVICES);
    replaces the shipped one``).  The listing had shown a team's 2-core ``rpi4-4gb`` as the
    board, where ``run`` and ``doctor`` said it replaced the shipped one (a tester's)."""
    where = origin(device)
    return where if device.replaces is None else f"{where}; replaces {whose(device.replaces)}"


def _calibrated(device: Device) -> str:
    """The share ``speed: calibration`` gives, and whether its fit is poor: the column had
    read "from calibration" alone, where a board got 0.043 CPUs from a fit of R² 0.541."""
    got = calibrated_share(device)
    if isinstance(got, str):  # a paragraph: run --device says it in full
        return "from calibration: refused (run --device says why)"
    cpus, doubts = got
    return f"cpus={cpus:g} from calibration" + (", poor fit" if doubts else "")


def catalog_rows(catalog: Mapping[str, Device]) -> list[list[str]]:
    """The rows of ``edgeprof devices``: name, cores, memory, speed, period, storage speed,
    calibration, catalog, source."""
    return [
        [
            d.name,
            str(d.cores),
            format_binary(d.memory)
            + (" shared with the GPU" if d.unified_memory else "")
            + ("" if d.gpu_memory is None else f", GPU {format_binary(d.gpu_memory)}"),
            describe_speed(d),
            "auto" if d.cpu_period_us is None else format_period(d.cpu_period_us),
            _storage(d),
            "-" if d.calibration is None
            else f"{d.calibration}" + ("" if d.calibration.is_file() else " (missing)"),
            catalog_cell(d),
            d.source or "-",
        ]
        for d in sorted(catalog.values(), key=lambda d: d.name)
    ]


def _storage(d: Device) -> str:
    """``read 40.0MiB/s, write 20.0MiB/s, read 1500 IOPS``; ``host's`` where the entry
    gives none."""
    asked = d.storage.storage_rates()
    return ", ".join(f"{s.way} {s.format(rate)}" for s, rate in asked) or "host's"


def catalog_json(catalog: Mapping[str, Device]) -> list[dict[str, Any]]:
    return [
        {
            "name": d.name,
            "cores": d.cores,
            "memory_bytes": d.memory,
            "share": d.share,
            "speed": d.speed,
            **_calibrated_json(d),
            "cpu_period_us": d.cpu_period_us,
            "gpu_memory_bytes": d.gpu_memory,
            "unified_memory": d.unified_memory,
            **{s.key: getattr(d, s.key) for s in STORAGE},
            "calibration": None if d.calibration is None else str(d.calibration),
            "description": d.description,
            "source": d.source,
            "catalog": str(d.catalog),
            "replaces": None if d.replaces is None else str(d.replaces.catalog),
            "notes": list(d.notes),
        }
        for d in sorted(catalog.values(), key=lambda d: d.name)
    ]


def _calibrated_json(d: Device) -> dict[str, Any]:
    """``calibrated_cpus`` and ``calibration_doubts`` of a ``speed: calibration`` entry (``null``
    and the reason where it implies none)."""
    if d.speed != CALIBRATED:
        return {}
    got = calibrated_share(d)
    if isinstance(got, str):
        return {"calibrated_cpus": None, "calibration_doubts": [got]}
    return {"calibrated_cpus": got[0], "calibration_doubts": list(got[1])}
