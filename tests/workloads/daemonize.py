"""Double-fork a busy grandchild that outlives its parent, then exit.

argv[1]: how long the parent stays: ``N`` seconds, or ``cpu=N``: until the grandchild has
spun N seconds of its own CPU time (the CPU inside the run is then known whatever the load of
the machine: a fixed wait let a loaded 2-core machine give the grandchild less than a test
expected).  argv[2]: the grandchild writes its pid there once it runs.  argv[3] (optional,
default the ``cpu=`` value): the grandchild creates ``argv[2] + ".spun"`` once it has spun that
many seconds of its own CPU, for a test to wait on.
"""

import os
import sys
import time

how_long = sys.argv[1]
pidfile = sys.argv[2]
spun = pidfile + ".spun"
cpu_target = float(how_long[4:]) if how_long.startswith("cpu=") else None
spin_mark = float(sys.argv[3]) if len(sys.argv) > 3 else cpu_target
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        with open(pidfile, "w") as f:
            f.write(str(os.getpid()))
        while spin_mark is not None and time.process_time() < spin_mark:
            pass
        if spin_mark is not None:
            open(spun, "w").close()
        while True:
            pass
    os._exit(0)
if cpu_target is None:
    time.sleep(float(how_long))
else:
    deadline = time.monotonic() + 300
    while not os.path.exists(spun):
        if time.monotonic() > deadline:
            sys.exit("the grandchild did not get its CPU time in 300 s")
        time.sleep(0.01)
