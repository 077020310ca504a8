"""Per-layer profiles of PyTorch models under a device's limits, in PipeEdge's format.

``edgeprof layers MODULE:FACTORY …`` builds the model from the user's factory inside an
ordinary edgeprof run (the workload is :mod:`edgeprof.workload.layers`), times each layer and
measures its memory, and writes ``profiler_results.yml`` (:mod:`.results`); ``edgeprof layers
export`` converts it to the scheduler's ``models.yml`` and ``device_types.yml``
(:mod:`edgeprof.report.layers_export`).  Nothing here imports torch: only the worker
does, in the limited run.
"""

from __future__ import annotations

from .request import LayersRequest, make_request
from .results import LayerEntry, LayerResults, TimeStats, load, merge, save
from .run import LayersRun, run_layers

__all__ = [
    "LayerEntry",
    "LayerResults",
    "LayersRequest",
    "LayersRun",
    "TimeStats",
    "load",
    "make_request",
    "merge",
    "run_layers",
    "save",
]
