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

from ..errors import ConfigError
from ..model import UserIds


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
    env = os.environ if environ is None else environ
    if as_root or (os.geteuid() if euid is None else euid) != 0:
        return None
    uid_text = env.get("SUDO_UID")
    if not uid_text:
        return None
    gid_text = env.get("SUDO_GID", "")
    if not uid_text.isdigit() or (gid_text and not gid_text.isdigit()):
        raise ConfigError(
            f"SUDO_UID={uid_text!r} SUDO_GID={gid_text!r}: not numeric ids; "
            "run edgeprof through sudo unchanged, or pass --as-root"
        )
    uid = int(uid_text)
    if uid == 0:
        return None
    try:
        entry: pwd.struct_passwd | None = pwd.getpwuid(uid)
    except KeyError:
        entry = None
    gid = int(gid_text) if gid_text else (entry.pw_gid if entry else uid)
    groups = (gid,) if entry is None else tuple(os.getgrouplist(entry.pw_name, gid))
    return UserIds(uid=uid, gid=gid, groups=groups)
