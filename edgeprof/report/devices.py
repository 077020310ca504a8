"""``edgeprof devices``: the merged device catalog as one table, or JSON."""

from __future__ import annotations

import json
from collections.abc import Mapping

from ..analysis.devices import Device, catalog_json, catalog_rows
from .table import plain_table

HEADER = ["device", "cores", "memory", "speed", "cpu period", "calibration", "source"]

NOTES = (
    "speed: a device core against one of this host's, as one quota of cores × speed CPUs: it "
    "holds for work that keeps every core busy;",
    "'needs calibration': unknown (a spec sheet gives none), so --device runs its cores at "
    "this host's speed until you measure the board and run edgeprof calibrate;",
    "'host's; predicted': its cores run at this host's speed and its calibration predicts "
    "the device's figures ('speed: calibration' in the entry runs them at its speed).",
)


def render_devices(catalog: Mapping[str, Device]) -> str:
    return plain_table(None, HEADER, catalog_rows(catalog), ["", *NOTES])


def devices_json(catalog: Mapping[str, Device]) -> str:
    return json.dumps(catalog_json(catalog), indent=2) + "\n"
