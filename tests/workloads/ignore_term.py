"""Busy-wait while ignoring SIGTERM: only SIGKILL stops it."""

import signal
import time

signal.signal(signal.SIGTERM, signal.SIG_IGN)
while True:
    time.sleep(0.01)
