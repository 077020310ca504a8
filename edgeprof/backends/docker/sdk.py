"""The Docker SDK at edgeprof's boundary: its import, a client, its errors, our labels.

The SDK is an optional dependency, imported on first use.  Its errors, and those of
``requests`` (and ``urllib3`` beneath it) that the SDK passes through unwrapped — a daemon
that dies mid-call surfaces as a ``requests`` ``ConnectionError``, a timed-out wait as
``ReadTimeout`` or a ``ConnectionError`` saying "Read timed out" — are caught here and in
the modules beside this one, and become :mod:`edgeprof.errors` types: nothing above the
Docker backend sees them.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ...errors import BackendUnavailable
from .. import owner

if TYPE_CHECKING:  # the SDK is an optional dependency: imported lazily
    import docker

INSTALL_FIX = "pip install 'edgeprof[docker]'"
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


def docker_sdk() -> Any:
    """The Docker SDK, imported on first use (an optional dependency)."""
    try:
        import docker
    except ImportError:
        raise BackendUnavailable(f"the Docker SDK is not installed: {INSTALL_FIX}") from None
    return docker


def daemon_errors() -> tuple[type[Exception], ...]:
    """What a call to the daemon through the SDK can raise: the SDK's own errors, and the
    ``requests``/``urllib3`` errors it does not wrap (both are dependencies of the SDK)."""
    sdk = docker_sdk()  # first: without the SDK, requests may be missing too
    import requests
    import urllib3

    return (
        sdk.errors.DockerException,
        requests.exceptions.RequestException,
        urllib3.exceptions.HTTPError,
    )


def is_timeout(exc: BaseException) -> bool:
    """A short API wait that ran out (``ReadTimeout``, or a ``ConnectionError`` whose
    message says so: the unix-socket adapter raises that one), not a lost daemon."""
    name = type(exc).__name__
    return "Timeout" in name or "timed out" in str(exc)


def make_client(base_url: str | None = None) -> docker.DockerClient:
    """A client for ``base_url`` (else ``DOCKER_HOST``, else the local socket), pinged."""
    sdk = docker_sdk()
    try:
        client = sdk.DockerClient(base_url=base_url) if base_url else sdk.from_env()
        client.ping()
    except sdk.errors.DockerException as exc:
        where = base_url or os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
        raise BackendUnavailable(
            f"cannot reach the Docker daemon at {where} ({exc}); start dockerd, "
            "or point DOCKER_HOST at a running daemon"
        ) from exc
    result: docker.DockerClient = client
    return result


def explain(exc: BaseException) -> str:
    """The first line of what the Docker daemon said (or of the exception)."""
    text = str(getattr(exc, "explanation", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
