"""Arithmetic over results: statistics, comparisons, budgets, calibration."""
