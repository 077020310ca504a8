"""An output directory held by another process, as a live edgeprof run holds its ``--out``:
this process's own holds are passed over (a sweep's runs write inside its ``--out``), so a
test of what another edgeprof sees needs another process."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

HOLDER = (
    "import sys; from pathlib import Path; from edgeprof.dirlock import DirLock\n"
    "with DirLock(Path(sys.argv[1])):\n"
    "    print('held', flush=True); sys.stdin.read()\n"
)


@contextmanager
def held_by_another(directory: Path) -> Iterator[None]:
    """``directory`` held by another process's DirLock, as a live edgeprof run holds its --out."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(directory)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdin is not None
    try:
        assert proc.stdout.readline() == "held\n"
        yield
    finally:
        proc.stdin.close()  # the holder's read ends: it lets go and exits
        assert proc.wait(timeout=30) == 0
