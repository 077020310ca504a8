"""A tree whose every process's CPU time is known, for the process backend.

The main process forks a child that forks a grandchild and exits at once, so the grandchild
is an orphan (re-parented to edgeprof, the run's subreaper).  The grandchild spins to its own
``time.process_time()`` target of argv[2] s and writes its CPU time to ``argv[1]/grandchild``;
the main process reaps its child, spins argv[3] s, waits for the grandchild's file and writes
its own CPU time with its reaped children's to ``argv[1]/main`` before it exits.  The two
files' sum is the tree's CPU time but for the processes' last instructions (exit)."""

import os
import sys
import time

out, grand_s, main_s = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])


def spin(seconds: float) -> None:
    while time.process_time() < seconds:
        pass


def cpu(children: bool) -> float:
    t = os.times()
    return t.user + t.system + (t.children_user + t.children_system if children else 0.0)


child = os.fork()
if child == 0:
    if os.fork() == 0:
        spin(grand_s)
        with open(os.path.join(out, "grandchild.tmp"), "w") as f:
            f.write(repr(cpu(False)))
        os.rename(os.path.join(out, "grandchild.tmp"), os.path.join(out, "grandchild"))
        os._exit(0)
    os._exit(0)
os.waitpid(child, 0)
spin(main_s)
deadline = time.monotonic() + 300
while not os.path.exists(os.path.join(out, "grandchild")):
    if time.monotonic() > deadline:
        sys.exit("the grandchild did not finish in 300 s")
    time.sleep(0.005)
with open(os.path.join(out, "main"), "w") as f:
    f.write(repr(cpu(True)))
