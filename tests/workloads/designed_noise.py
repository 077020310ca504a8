"""``designed_noise.py COUNTER_DIR a|b|far``: CPU work with a run-to-run spread set by design.

``a`` and ``b`` do the same work on average, scaled per run by a fixed sequence (the runs are
numbered by a counter file per model in COUNTER_DIR) whose spread, ~15 %, dwarfs a machine's
own noise: at every number of runs up to 6 their means are within 5 % of each other and the
95 % interval of the difference spans ±20 % or more, so no such sweep tells them apart or
shows them within a precision of 1 %.  ``far`` does 4× the work and holds 64 MiB more.
"""

import sys
from pathlib import Path

FACTORS = {
    "a": (1.0, 1.2, 0.8, 1.1, 0.9, 1.0, 1.15, 0.85),
    "b": (1.2, 0.8, 1.0, 0.9, 1.1, 1.0, 0.85, 1.15),
    "far": (4.0,) * 8,
}
BASE_WORK = 400_000
"""Loop iterations of a factor 1.0 (~40–60 ms of CPU here)."""

counter = Path(sys.argv[1]) / sys.argv[2]
n = int(counter.read_text()) if counter.exists() else 0
counter.write_text(str(n + 1))
factor = FACTORS[sys.argv[2]][n % 8]
held = bytearray(b"\x01" * ((80 if sys.argv[2] == "far" else 16) << 20))
x = 0
for i in range(int(BASE_WORK * factor)):
    x += i * i
print(sys.argv[2], n + 1, factor, len(held), x % 7)
