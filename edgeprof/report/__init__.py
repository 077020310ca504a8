"""Renderers: each takes a :class:`~edgeprof.model.RunResult` (or a list) and nothing else."""
