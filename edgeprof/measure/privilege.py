"""Whom the workload runs as.

edgeprof needs root for the cgroup backend on most hosts, so it is often started with
``sudo``.  The model script it runs is somebody else's code: it has no need for root, so under
sudo it runs as the user who invoked sudo (``SUDO_UID``/``SUDO_GID``, with that user's
supplementary groups) unless ``--as-root`` asks otherwise.  The child joins its cgroups while
still root (the ``cgroup.procs`` descriptors were opened by root) and drops its groups, gid
and uid — in that order, so no step needs a privilege it has already given up — before exec.
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Mapping

from ..model import UserIds
from ..outfiles import sudo_ids


def workload_user(
    as_root: bool = False,
    environ: Mapping[str, str] | None = None,
    euid: int | None = None,
) -> UserIds | None:
    """The identity the workload should take, or ``None`` to keep edgeprof's own.

    ``None`` unless edgeprof runs as root through sudo (``SUDO_UID`` set to a non-root uid)
    and ``as_root`` is false.  A malformed ``SUDO_UID``/``SUDO_GID`` is a :class:`ConfigError`:
    guessing an identity would be worse than stopping.
    """
    if as_root:
        return None
    ids = sudo_ids(environ, euid)
    if ids is None:
        return None
    uid, gid = ids
    try:
        name: str | None = pwd.getpwuid(uid).pw_name
    except KeyError:
        name = None
    groups = (gid,) if name is None else tuple(os.getgrouplist(name, gid))
    return UserIds(uid=uid, gid=gid, groups=groups)
