"""Code that runs inside the measured process.  It imports nothing else of edgeprof (the
profiler reads its protocol constants), so ``import edgeprof`` in a workload stays cheap and
:mod:`edgeprof.workload.instrument` can be copied alone into an image; the per-layer worker
imports PyTorch, in the interpreter that runs the model."""
