"""The ``docker run`` options a user may pass (``--docker-args``), parsed into SDK arguments."""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...errors import ConfigError
from ...units import parse_size


@dataclass(frozen=True)
class DockerOptions:
    """The part of ``docker run``'s options a user may pass (the older profiler's DOCK_ARGS),
    parsed into SDK arguments — never a shell string."""

    volumes: tuple[str, ...] = ()
    environment: Mapping[str, str] = field(default_factory=dict)
    network_mode: str | None = None
    shm_size: int | None = None
    privileged: bool = False
    user: str | None = None
    security_opt: tuple[str, ...] = ()


def parse_docker_args(args: str | Sequence[str]) -> DockerOptions:
    """``"-v /data:/data --shm-size 1g --privileged"`` → :class:`DockerOptions`.

    Accepted: ``-v/--volume``, ``-e/--env``, ``--network/--net``, ``--shm-size``,
    ``--privileged``, ``-u/--user``, ``--security-opt`` (``--opt value`` and
    ``--opt=value``).  Anything else is a :class:`ConfigError`: edgeprof never forwards an
    option it does not understand.
    """
    try:
        words = shlex.split(args) if isinstance(args, str) else list(args)
    except ValueError as exc:  # an unclosed quote
        raise ConfigError(f"invalid docker options {str(args)[:60]!r}: {exc}") from None
    volumes: list[str] = []
    security: list[str] = []
    env: dict[str, str] = {}
    opts: dict[str, Any] = {}
    takes_value = {
        "-v": "volume",
        "--volume": "volume",
        "-e": "env",
        "--env": "env",
        "--network": "network",
        "--net": "network",
        "--shm-size": "shm",
        "-u": "user",
        "--user": "user",
        "--security-opt": "security",
    }
    i = 0
    while i < len(words):
        word = words[i]
        name, eq, inline = word.partition("=") if word.startswith("--") else (word, "", "")
        if name == "--privileged" and not eq:
            opts["privileged"] = True
            i += 1
            continue
        if name not in takes_value:
            raise ConfigError(
                f"docker option {word!r} is not supported by edgeprof"
                + _hint(name)
                + f" (supported: {', '.join(sorted(set(takes_value)))}, --privileged)"
            )
        if eq:
            value = inline
            i += 1
        else:
            if i + 1 >= len(words):
                raise ConfigError(f"docker option {word} needs a value")
            value = words[i + 1]
            i += 2
        kind = takes_value[name]
        if kind == "volume":
            if value.count(":") not in (1, 2) or not value.split(":")[0]:
                raise ConfigError(f"invalid volume {value!r}: expected SRC:DST[:ro|rw]")
            volumes.append(value)
        elif kind == "env":
            key, sep, val = value.partition("=")
            if not key:
                raise ConfigError(f"invalid environment variable {value!r}")
            env[key] = val if sep else os.environ.get(key, "")
        elif kind == "network":
            opts["network_mode"] = value
        elif kind == "shm":
            opts["shm_size"] = parse_size(value)
        elif kind == "security":
            security.append(value)
        else:
            opts["user"] = value
    return DockerOptions(
        volumes=tuple(volumes), environment=env, security_opt=tuple(security), **opts
    )


LIMIT_OPTIONS = frozenset(
    [
        "--cpus",
        "-m",
        "--memory",
        "--memory-swap",
        "--memory-reservation",
        "--cpu-quota",
        "--cpu-period",
        "--cpu-shares",
        "-c",
        "--cpuset-cpus",
        "--pids-limit",
        "--gpus",
    ]
)
"""``docker run``'s options for what edgeprof itself sets on each run's container."""

OWN_OPTIONS = frozenset(
    [
        "--rm",
        "--name",
        "-d",
        "--detach",
        "-i",
        "-t",
        "-it",
        "--interactive",
        "--tty",
        "--init",
        "--cidfile",
        "--cgroup-parent",
    ]
)
"""``docker run``'s options for the container's life, which edgeprof runs itself."""


def _hint(name: str) -> str:
    """What to do instead of an option edgeprof does not forward, where there is one (the old
    profiler's users put limits and ``--rm`` in DOCK_ARGS)."""
    if name in LIMIT_OPTIONS:
        return (
            ": edgeprof sets the container's limits itself, from --cpus, --cpuset, --memory, "
            "--pids and --gpus (an env.template's DOCKCPUS and DOCKMEMORY)"
        )
    if name in OWN_OPTIONS:
        return ": edgeprof creates, names, attaches to and removes each run's container itself"
    return ""
