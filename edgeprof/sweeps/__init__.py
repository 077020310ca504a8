"""Many runs: sweeps of models and limit settings, batch-size benches."""
