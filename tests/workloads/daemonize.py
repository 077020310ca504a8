"""Double-fork a busy grandchild that outlives its parent, then exit after argv[1] s.

The grandchild writes its pid to argv[2] so the test can check it was killed.
"""

import os
import sys
import time

parent_wait = float(sys.argv[1])
pidfile = sys.argv[2]
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        with open(pidfile, "w") as f:
            f.write(str(os.getpid()))
        while True:
            pass
    os._exit(0)
time.sleep(parent_wait)
