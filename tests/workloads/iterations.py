"""A CPU-bound loop of equal iterations reported with ``edgeprof.iteration()``.

    python iterations.py LOOPS COUNT [RUSAGE_FILE]

Each iteration sums ``LOOPS`` squares (no memory traffic, no system calls: the model of a
single-threaded inference whose speed is the core's).  Five unreported iterations warm the
interpreter first.  With ``RUSAGE_FILE``, the process's own context switches and CPU time
are written there as JSON at the end (what the throttling of a short CFS period costs), with
each reported iteration's own CPU time (``iteration_cpu_s``, its ``time.process_time()``)
and wall time (``iteration_wall_s``): what the iteration cost whatever else ran on the core,
and how long it took.
"""

from __future__ import annotations

import json
import resource
import sys
import time

import edgeprof


def work(loops: int) -> int:
    x = 0
    for i in range(loops):
        x += i * i
    return x


def main() -> None:
    loops, count = int(sys.argv[1]), int(sys.argv[2])
    for _ in range(5):
        work(loops)
    cpu: list[float] = []
    wall: list[float] = []
    for _ in range(count):
        c0, w0 = time.process_time(), time.monotonic()
        with edgeprof.iteration():
            work(loops)
        cpu.append(time.process_time() - c0)
        wall.append(time.monotonic() - w0)
    if len(sys.argv) > 3:
        r = resource.getrusage(resource.RUSAGE_SELF)
        with open(sys.argv[3], "w") as f:
            json.dump(
                {
                    "nvcsw": r.ru_nvcsw,
                    "nivcsw": r.ru_nivcsw,
                    "cpu_s": r.ru_utime + r.ru_stime,
                    "iteration_cpu_s": cpu,
                    "iteration_wall_s": wall,
                },
                f,
            )


if __name__ == "__main__":
    main()
