"""The Docker backend: runs in containers of a Docker daemon, local or remote.

Modules: :mod:`.backend` (:class:`DockerBackend`), :mod:`.run` (:class:`DockerRun`, one
container), :mod:`.cgroups` (exact mode's parent groups and counter files), :mod:`.stats`
(the stats API and ``/proc`` network counters), :mod:`.options` (``--docker-args``),
:mod:`.engine` (the Engine API client), :mod:`.daemon` (a pinged client, its errors'
wording, edgeprof's labels), :mod:`.image` (images built from environment descriptions).
"""

from __future__ import annotations

from .backend import DockerBackend
from .daemon import (
    BOOT_LABEL,
    HOST_LABEL,
    MANAGED_LABEL,
    OWNER_LABEL,
    explain,
    make_client,
)
from .engine import DaemonError, Engine
from .options import DockerOptions, parse_docker_args
from .run import DockerRun

__all__ = [
    "BOOT_LABEL",
    "HOST_LABEL",
    "MANAGED_LABEL",
    "OWNER_LABEL",
    "DaemonError",
    "DockerBackend",
    "DockerOptions",
    "DockerRun",
    "Engine",
    "explain",
    "make_client",
    "parse_docker_args",
]
