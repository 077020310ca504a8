"""The Docker daemon at edgeprof's boundary: a pinged client, what its errors say, our labels.

The client is :mod:`.engine` (the Engine API on the standard library).  Its errors
(:class:`~.engine.DaemonError`) are caught here and in the modules beside this one, and
become :mod:`edgeprof.errors` types: nothing above the Docker backend sees them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ...errors import BackendError, BackendUnavailable
from .. import owner
from ..capabilities import ContainerDaemon
from .engine import DEFAULT_SOCKET, DaemonError, Engine

MANAGED_LABEL = "org.edgeprof.managed"
"""On every container and image edgeprof creates (``1``)."""
OWNER_LABEL = "org.edgeprof.owner"
"""``<pid>:<process start time>``: lets ``edgeprof gc`` tell a dead run's container."""
HOST_LABEL = "org.edgeprof.host"
"""The owner's host name: a shared daemon's containers of other hosts are never collected."""
BOOT_LABEL = "org.edgeprof.boot"
"""The owner's boot id: a container that outlived a reboot of its host has no owner."""


def run_labels() -> dict[str, str]:
    """The labels of a run's container: managed, and its owner (this process)."""
    return {
        MANAGED_LABEL: "1",
        OWNER_LABEL: owner.this_process().token(),
        HOST_LABEL: owner.hostname(),
        BOOT_LABEL: owner.boot_id(),
    }


RUN_ELSEWHERE = "; or run on this host without Docker: --backend cgroup"
"""How a run goes on without a daemon (``gc`` has nothing to run, so it is not told)."""


def make_client(base_url: str | None = None, unreachable: str = "") -> Engine:
    """A client for ``base_url`` (else ``DOCKER_HOST``, else the local socket), pinged;
    ``unreachable`` ends the message when no daemon answers."""
    try:
        engine = Engine(base_url)
    except DaemonError as exc:  # an address edgeprof cannot speak to: it says what to do
        raise BackendUnavailable(f"Docker daemon address {exc}") from exc
    try:
        engine.ping()
    except DaemonError as exc:
        raise BackendUnavailable(
            f"cannot reach the Docker daemon ({exc}); start dockerd, "
            f"or point DOCKER_HOST at a running daemon{unreachable}"
        ) from exc
    return engine


def expected(env: Mapping[str, str] | None = None) -> bool:
    """Whether this host is meant to have a Docker daemon: ``DOCKER_HOST`` names one, or the
    default socket is there (a daemon installed, perhaps stopped).  Where neither is, an
    unreachable daemon is no news: ``edgeprof gc`` had said ``docker: skipped (… start
    dockerd …)`` on every call on a host without Docker."""
    env = os.environ if env is None else env
    return bool(env.get("DOCKER_HOST")) or os.path.lexists(DEFAULT_SOCKET)


def managed_containers(client: ContainerDaemon) -> list[dict[str, Any]]:
    """The containers edgeprof created on ``client``'s daemon (:data:`MANAGED_LABEL`),
    live runs' too: for ``edgeprof gc`` (:mod:`edgeprof.measure.gc`) to judge."""
    try:
        return client.containers(f"{MANAGED_LABEL}=1")
    except DaemonError as exc:
        raise BackendError(f"cannot list the Docker daemon's containers: {explain(exc)}") from exc


def remove_container(client: ContainerDaemon, cid: str, name: str) -> None:
    """Remove the container ``cid`` (``name`` in the message of a refusal)."""
    try:
        client.remove(cid)
    except DaemonError as exc:
        raise BackendError(f"cannot remove container {name}: {explain(exc)}") from exc


def explain(exc: BaseException) -> str:
    """The first line of what the Docker daemon said (or of the exception)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
