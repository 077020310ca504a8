"""Names that come from users — model names, run labels, environment variables, cgroup
paths — and what edgeprof accepts in them.

None of them is ever given to a shell (a model name reaches the workload as one argument) or
used as a path without cleaning (:func:`edgeprof.sweeps.labels.safe_dir`). Still, a model
list is input from a file that may come from anywhere, and a name with shell syntax, a
control character, a ``..`` component or undecodable bytes in it is far more likely an
attack or a mistake than a model: edgeprof refuses it with one line naming it, before
anything starts, rather than carry it into tables, CSV files, directory names and the
workload's argv.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from .errors import ConfigError
from .workload.instrument import FD_ENV, INODE_ENV, PATH_ENV, SYNC_ENV, UNAVAILABLE_ENV

MAX_COMPONENT_BYTES = 255
"""NAME_MAX of Linux file systems: a longer name cannot be a file."""
MAX_NAME_BYTES = 4096
"""PATH_MAX."""
SHELL_SYNTAX = frozenset(";&|$`<>(){}[]*?!\\\"'~#")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")
CGROUP_PATH = re.compile(r"^[A-Za-z0-9_./@:-]+$")


def _show(text: object) -> str:
    shown = ascii(text)
    return shown if len(shown) <= 60 else shown[:57] + "...'"


def _as_typed(text: object) -> str:
    """``text`` quoted as the user typed it (``'é'``) where it prints as itself, else as
    :func:`_show` escapes it (a control character, an undecodable byte)."""
    if not isinstance(text, str) or has_control(text):
        return _show(text)
    if any("\ud800" <= c <= "\udfff" for c in text):  # undecodable bytes
        return _show(text)
    shown = repr(text)
    return shown if len(shown) <= 60 else shown[:57] + "...'"


def as_word(text: str) -> str:
    """``text`` as a message quotes a name given on the command line: as it is where it
    reads as one word (``rpi4-4gb``, ``mÿ-board``), else as ``repr`` writes it, in quotes
    (a tester's ``--device mÿ board is in no device catalog`` read as two words)."""
    if text and not has_control(text) and not any(c.isspace() or c in SHELL_SYNTAX for c in text):
        return text
    return repr(text)


def has_control(text: str) -> bool:
    """A C0 or C1 control character (a newline, an escape): it breaks a table's row, a CSV
    field and a terminal's line."""
    return any(ord(c) < 32 or 127 <= ord(c) < 160 for c in text)


def printable(text: str) -> str:
    """``text`` with each control character written as ``repr`` writes it (``\\x1b``,
    ``\\n``): for labels edgeprof derives from what a workload chose, such as its program's
    file name, which may hold anything but ``/`` and NUL.  A program linked as
    ``ESC]0;PWN BEL ESC[31mpy<newline>X`` had retitled and coloured the terminal and split the
    results table's row; the escaped name still tells the runs apart."""
    if not has_control(text):
        return text
    return "".join(repr(c)[1:-1] if has_control(c) else c for c in text)


def check_name(text: str, what: str) -> str:
    """``text`` if it is acceptable as a model name or run label, else a ConfigError."""
    if not text or not text.strip():
        raise ConfigError(f"{what}: empty name")
    if any("\ud800" <= c <= "\udfff" for c in text):  # undecodable bytes, lone surrogates
        raise ConfigError(f"{what} {_show(text)}: not valid UTF-8")
    if has_control(text):
        raise ConfigError(f"{what} {_show(text)}: contains a control character")
    size = len(text.encode())
    if size > MAX_NAME_BYTES or any(
        len(p.encode()) > MAX_COMPONENT_BYTES for p in text.split("/")
    ):
        # "at most 255 a part" had not said what a part is (a tester's).
        raise ConfigError(
            f"{what} {_show(text)}: too long ({size} bytes; at most {MAX_COMPONENT_BYTES} "
            f"between slashes, {MAX_NAME_BYTES} in all)"
        )
    bad = sorted(set(text) & SHELL_SYNTAX)
    if bad:
        raise ConfigError(
            f"{what} {_show(text)}: contains {''.join(bad)!r} (shell syntax is refused in names)"
        )
    if ".." in PurePosixPath(text).parts:
        raise ConfigError(f"{what} {_show(text)}: contains a '..' component")
    if text.startswith("-"):
        raise ConfigError(f"{what} {_show(text)}: starts with '-' (it would read as an option)")
    return text


# Every variable of the events channel: ``-E EDGEPROF_EVENTS_SYNC=bogus`` had been accepted
# and silently replaced (the workload saw ``11:6261584``), the hold socket having been left
# out when it was added.
_RESERVED_ENV = frozenset({FD_ENV, INODE_ENV, PATH_ENV, SYNC_ENV, UNAVAILABLE_ENV})
PROCESS_RUN_ENV = "EDGEPROF_PROCESS_RUN"
"""The process backend's mark of a run's processes (edgeprof/backends/_run_tree.py): given
with ``-E``, it would be replaced, as the events channel's variables would."""


def check_env(key: str, value: str) -> None:
    """An environment variable for the workload: a plain name, a value without NUL."""
    if not isinstance(key, str) or not ENV_NAME.match(key):
        # As typed, and the form allowed: ``-E 'é=1'`` had said only ``name '\\xe9'``.
        raise ConfigError(
            f"invalid environment variable name {_as_typed(key)}: expected ASCII letters, "
            "digits, '_', '.' and '-', not starting with a digit, '.' or '-'"
        )
    if key == PROCESS_RUN_ENV:
        raise ConfigError(
            f"environment variable {key}: edgeprof sets it for each run (the process "
            "backend's mark of the run's processes, docs/backends.md); it cannot be given"
        )
    if key in _RESERVED_ENV:
        # ``-E EDGEPROF_EVENTS_FD=3`` had been accepted and silently replaced (the workload
        # saw 8): the events channel's variables are the run's own.
        raise ConfigError(
            f"environment variable {key}: edgeprof sets it for each run (its events "
            "channel, docs/phases.md); it cannot be given"
        )
    if not isinstance(value, str):  # env={"A": 1} had raised a bare TypeError
        raise ConfigError(f"environment variable {key}: the value {_show(value)} is not a string")
    if "\0" in value:
        raise ConfigError(f"environment variable {key}: the value contains a NUL byte")


def check_cgroup_parent(path: str) -> str:
    """``--cgroup-parent``: a cgroup path below the hierarchy's root, never outside it."""
    if not CGROUP_PATH.match(path) or ".." in PurePosixPath(path).parts:
        raise ConfigError(
            f"--cgroup-parent {_show(path)}: expected a cgroup path such as /edgeprof "
            "(letters, digits, . _ - @ : /; no '..')"
        )
    return path


SHOWN_NAME = 60
"""A phase name longer than this is shortened in tables and warnings (:func:`shown_name`):
two 214-character names (200 stored, each cut and ended with ``~`` and 8 hex digits) had
made the Phases table ~270 columns wide and every warning naming them as long."""

_CUT_SUFFIX = re.compile(r"~[0-9a-f]{8}$")


def shown_name(name: str) -> str:
    """``name`` as a table or warning shows it: whole up to :data:`SHOWN_NAME` characters,
    else its first 40, ``…`` and a ``~`` suffix of 8 hex digits that keeps two names apart:
    the workload's own where it cut the name (so it matches the stored name's end), else
    one of the whole name.  ``result.json`` keeps the name whole."""
    if len(name) <= SHOWN_NAME:
        return name
    cut = _CUT_SUFFIX.search(name)
    if cut is not None:
        suffix = cut.group()
    else:
        import hashlib

        whole = name.encode("utf-8", "surrogatepass")
        suffix = "~" + hashlib.blake2s(whole, digest_size=4).hexdigest()
    return f"{name[:40]}…{suffix}"
