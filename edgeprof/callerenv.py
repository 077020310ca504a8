"""The environment edgeprof's caller gave it, which a workload inherits.

CPython's locale coercion (PEP 538) runs before any Python code: where the caller's
``LC_CTYPE`` locale is C or POSIX (no locale variable at all, as under cron, ``env -i`` or
a bare container, or ``LANG=C``) and ``LC_ALL`` is unset, it sets ``LC_CTYPE=C.UTF-8`` in
edgeprof's own environment.  Inherited by the workload, it changed what the workload did:
``LANG=C sh -c 'printf é | wc -m'`` printed 2 alone and 1 under edgeprof.  The variable is
told apart from one the caller set by the process's original environment, which the kernel
keeps as exec gave it (``/proc/self/environ``; ``setenv`` never writes it), so a caller's own
``LC_CTYPE=C.UTF-8`` is kept.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping

_COERCION_TARGETS = frozenset({"C.UTF-8", "C.utf8", "UTF-8"})
"""The values CPython's ``_Py_CoerceLegacyLocale`` sets, in the order it tries them."""

_PROC_ENVIRON = "/proc/self/environ"


def names_at_exec(raw: bytes) -> frozenset[str]:
    """The variable names of an environment block as ``/proc/PID/environ`` holds it."""
    return frozenset(os.fsdecode(entry.split(b"=", 1)[0]) for entry in raw.split(b"\0") if entry)


@functools.cache
def _exec_names() -> frozenset[str] | None:
    try:
        with open(_PROC_ENVIRON, "rb") as f:
            return names_at_exec(f.read())
    except OSError:
        return None


def coerced_by_python(env: Mapping[str, str], at_exec: frozenset[str] | None) -> bool:
    """Whether ``env``'s ``LC_CTYPE`` is the one CPython's coercion set, not the caller's.

    ``at_exec``: the names the process was started with, or None where they cannot be read;
    then the coercion's own rule is applied (only a caller with no ``LC_ALL`` and ``LANG``
    unset, C or POSIX is coerced), which mistakes a caller's own ``LC_CTYPE=C.UTF-8`` there
    for the coercion's: the locale the workload gets is then the caller's ``LANG``'s, as it
    would have been if CPython had coerced it.
    """
    if env.get("LC_CTYPE") not in _COERCION_TARGETS:
        return False
    if at_exec is not None:
        return "LC_CTYPE" not in at_exec
    if env.get("PYTHONCOERCECLOCALE") == "0" or env.get("LC_ALL"):
        return False
    return env.get("LANG", "") in ("", "C", "POSIX")


def callers_environ(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``env`` (edgeprof's own, by default) less what CPython added to it at start-up."""
    env = os.environ if env is None else env
    given = dict(env)
    if coerced_by_python(given, _exec_names()):
        del given["LC_CTYPE"]
    return given
