"""Code that runs inside the measured process: standard library only."""
