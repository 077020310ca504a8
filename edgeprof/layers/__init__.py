"""Per-layer profiles of PyTorch models under a device's limits, in PipeEdge's format.

``edgeprof layers MODULE:FACTORY …`` builds the model from the user's factory inside an
ordinary edgeprof run (the workload is :mod:`edgeprof.layers._worker`), times each layer and
measures its memory, and writes ``profiler_results.yml`` (:mod:`.results`); ``edgeprof layers
export`` converts it to the scheduler's ``models.yml`` and ``device_types.yml``
(:mod:`.export`).  Nothing here imports torch: only the worker does, in the limited run.
"""

from __future__ import annotations

from .export import export_device_types, export_models
from .results import LayerEntry, LayerResults, TimeStats, load, merge, save
from .run import LayersRequest, LayersRun, make_request, run_layers

__all__ = [
    "LayerEntry",
    "LayerResults",
    "LayersRequest",
    "LayersRun",
    "TimeStats",
    "export_device_types",
    "export_models",
    "load",
    "make_request",
    "merge",
    "run_layers",
    "save",
]
