"""Arithmetic over results: metrics, cells, statistics, comparisons, budgets, calibration.
Returns data (dataclasses, numbers); :mod:`edgeprof.report` renders it."""
