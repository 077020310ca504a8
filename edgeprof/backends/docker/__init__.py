"""The Docker backend (an optional dependency: ``pip install 'edgeprof[docker]'``).

Modules: :mod:`.backend` (:class:`DockerBackend`), :mod:`.run` (:class:`DockerRun`, one
container), :mod:`.cgroups` (exact mode's parent groups and counter files), :mod:`.stats`
(the stats API and ``/proc`` network counters), :mod:`.options` (``--docker-args``),
:mod:`.sdk` (the SDK's import, client, errors and edgeprof's labels), :mod:`.image` (images
built from environment descriptions).
"""

from __future__ import annotations

from .backend import DockerBackend
from .options import DockerOptions, parse_docker_args
from .run import DockerRun
from .sdk import (
    BOOT_LABEL,
    HOST_LABEL,
    INSTALL_FIX,
    MANAGED_LABEL,
    OWNER_LABEL,
    docker_sdk,
    explain,
    make_client,
)

__all__ = [
    "BOOT_LABEL",
    "HOST_LABEL",
    "INSTALL_FIX",
    "MANAGED_LABEL",
    "OWNER_LABEL",
    "DockerBackend",
    "DockerOptions",
    "DockerRun",
    "docker_sdk",
    "explain",
    "make_client",
    "parse_docker_args",
]
