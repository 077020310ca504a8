"""Backend registry and auto-detection.

The built-in backends are ``cgroup`` (``auto`` picks it), ``docker`` and ``process`` (the
workload's process tree through psutil, where no cgroup can be created: ``auto`` falls back to
it with one warning).  Another backend, one
outside edgeprof or the test suite's scripted one, plugs in with :func:`register_backend`;
:func:`get_backend`, ``edgeprof.profile(backend=NAME)`` and ``--backend NAME`` then accept it.

The interface (:class:`Backend`, :class:`RunHandle` and their typed capabilities) is in
:mod:`edgeprof.backends.base`; the Docker backend, an optional dependency, is the
:mod:`edgeprof.backends.docker` package, imported only when asked for.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import BackendUnavailable, ConfigError
from ..names import check_cgroup_parent
from ..units import shown
from .base import Backend, RunHandle
from .capabilities import BatchReader, CleanupScope, PeakReset, Reclaim, ReclaimReading

if TYPE_CHECKING:
    from .cgroup_v1 import CgroupV1Backend
    from .cgroup_v2 import CgroupV2Backend
    from .process import ProcessBackend

_LAZY = {
    "CgroupV1Backend": "cgroup_v1",
    "CgroupV2Backend": "cgroup_v2",
    "ProcessBackend": "process",
}
"""Each built-in backend's module, imported when the backend is first named: a run loads
the one it uses (the process backend's ctypes alone is ~4 ms of start-up)."""


if not TYPE_CHECKING:  # hidden from mypy, which then sees the real imports above

    def __getattr__(name: str) -> Any:
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{__name__}.{module}"), name)


NAMES = ("auto", "cgroup", "docker", "process")
"""The built-in names; :func:`backend_names` adds the registered ones."""

BackendFactory = Callable[[], Backend]
_registered: dict[str, BackendFactory] = {}

__all__ = [
    "NAMES",
    "Backend",
    "BackendFactory",
    "BatchReader",
    "CgroupV1Backend",
    "CgroupV2Backend",
    "CleanupScope",
    "PeakReset",
    "ProcessBackend",
    "Reclaim",
    "ReclaimReading",
    "RunHandle",
    "backend_names",
    "get_backend",
    "register_backend",
    "unregister_backend",
]


def register_backend(name: str, factory: BackendFactory) -> None:
    """Make ``name`` a backend: :func:`get_backend` then returns ``factory()``, checked.

    ``factory`` takes no argument and returns an object implementing :class:`Backend`.
    Registering a built-in name or a registered one is a programming error (``ValueError``):
    a backend never silently replaces another.
    """
    if not name or name in NAMES or name in _registered:
        raise ValueError(f"backend name {name!r} is empty, built in or already registered")
    _registered[name] = factory


def unregister_backend(name: str) -> None:
    """Remove a backend added by :func:`register_backend` (``KeyError`` if it was not)."""
    del _registered[name]


def backend_names() -> tuple[str, ...]:
    """Every name :func:`get_backend` accepts: the built-in ones, then the registered ones."""
    return NAMES + tuple(_registered)


def cgroup_backend(cgroup_parent: str | None = None) -> Backend:
    """cgroup v2 if this host has it with controllers, else cgroup v1 (hybrid hosts)."""
    from .cgroup_v1 import CgroupV1Backend
    from .cgroup_v2 import CgroupV2Backend

    if cgroup_parent is not None:
        check_cgroup_parent(cgroup_parent)
    v2 = CgroupV2Backend(parent=cgroup_parent)
    try:
        v2.check()
        return v2
    except BackendUnavailable as e2:
        if v2.holds_controllers():
            raise  # a cgroup v2 host: v1 is no alternative, and naming it only confuses
        v1 = CgroupV1Backend()
        try:
            v1.check()
        except BackendUnavailable as e1:
            raise BackendUnavailable(f"cgroup backend unavailable: {e2}; and {e1}") from e1
        if cgroup_parent is not None:
            raise ConfigError(
                "--cgroup-parent applies to cgroup v2; this host uses cgroup v1"
            ) from None
        return v1


def get_backend(
    name: str | Backend = "auto",
    *,
    cgroup_parent: str | None = None,
    image: str | None = None,
    docker_args: str | None = None,
) -> Backend:
    """A ready backend by name (``auto`` picks the best one this host supports).

    An object that already implements :class:`Backend` is checked and returned as is.
    """
    if not isinstance(name, str):
        if not isinstance(name, Backend):  # backend=3 had failed as an AttributeError
            raise ConfigError(
                f"backend: expected a name ({', '.join(backend_names())}) or a Backend, not "
                f"{shown(name)}"
            )
        name.check()
        return name
    if name == "cgroup":
        return cgroup_backend(cgroup_parent)
    if name == "auto":
        try:
            return cgroup_backend(cgroup_parent)
        except BackendUnavailable as exc:
            if cgroup_parent is not None:
                raise
            from .process import ProcessBackend

            fallback = ProcessBackend(fallback=str(exc))
            fallback.check()
            return fallback
    if name == "process":
        if cgroup_parent is not None:
            raise ConfigError("--cgroup-parent applies to the cgroup backend, not to process")
        from .process import ProcessBackend

        tree = ProcessBackend()
        tree.check()
        return tree
    if name == "docker":
        from .docker import DockerBackend, DockerOptions, parse_docker_args

        opts = parse_docker_args(docker_args) if docker_args else DockerOptions()
        be = DockerBackend(image, options=opts)
        be.check()
        return be
    factory = _registered.get(name)
    if factory is not None:
        plugged = factory()
        plugged.check()
        return plugged
    raise ConfigError(f"unknown backend {name!r}: choose one of {', '.join(backend_names())}")
