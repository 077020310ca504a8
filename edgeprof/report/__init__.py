"""Renderers: results (:class:`~edgeprof.model.RunResult`) and what :mod:`edgeprof.analysis`
computed from them, turned into text and Markdown tables (all through :mod:`.table`), CSV,
JSON, JUnit XML and plots."""
