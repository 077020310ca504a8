"""The gpu tier: CUDA workloads measured over NVML (tests/run_tiers.py runs it where a GPU is)."""
