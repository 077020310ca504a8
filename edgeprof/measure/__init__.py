"""One run: the run loop, sampling, the workload's events, limits, clean-up."""
