"""``edgeprof gc``: remove what a run whose edgeprof died (SIGKILL, power loss) left behind.

Only resources whose owner is gone are touched, never a live run's: a run group's name and a
container's label carry the owner's pid.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from . import _cgroupfs as fs
from .backends._process import signal_pids
from .backends.cgroup_v1 import cgroup_mounts
from .errors import EdgeprofError

RUN_GROUP = re.compile(r"^edgeprof-(\d+)-[0-9a-f]{8}$")


def _alive(pid: int) -> bool:
    """The process exists and is not a zombie (a killed edgeprof waits as one for its reaper)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def stale_groups(mountinfo: Path = Path("/proc/self/mountinfo")) -> list[Path]:
    """Run groups (every hierarchy) whose owning edgeprof process is gone, deepest first."""
    found = []
    for root in cgroup_mounts(mountinfo):
        for top, dirs, _ in os.walk(root):
            for d in dirs:
                m = RUN_GROUP.match(d)
                if m and not _alive(int(m.group(1))):
                    found.append(Path(top) / d)
    return sorted(found, key=lambda p: len(p.parts), reverse=True)


def collect(images: bool = False) -> list[str]:
    """Remove stale containers and groups (and edgeprof's images); a line per action."""
    out: list[str] = []
    try:
        from .backends.docker import MANAGED_LABEL, OWNER_LABEL, make_client

        client = make_client()
    except EdgeprofError as exc:
        out.append(f"docker: skipped ({exc})")
    else:
        for c in client.containers.list(all=True, filters={"label": f"{MANAGED_LABEL}=1"}):
            owner = c.labels.get(OWNER_LABEL, "")
            if owner.isdigit() and _alive(int(owner)):
                continue
            c.remove(force=True, v=True)
            out.append(f"removed container {c.name}")
        if images:
            from .dockerenv import remove_images

            out.extend(f"removed image {t}" for t in remove_images(client))
    for group in stale_groups():
        pids = fs.parse_pids(fs.read_optional(group / "cgroup.procs") or "")
        signal_pids(pids)
        failures = fs.remove_tree([group])
        out.extend(failures or [f"removed cgroup {group}"])
    if not out:
        out.append("nothing to remove")
    return out
