"""A private Docker daemon for the docker tier, and the base images its tests run.

Our machines have no image registry and no system Docker daemon, so this module sets up
everything the tests need, on the machine itself, and takes it all down again:

* :func:`ensure_docker_installed` installs Debian's ``docker.io`` (dockerd 20.10, containerd
  1.6, runc 1.1) with apt-get when it is missing (root only).  No service is started: while
  apt-get runs, a ``policy-rc.d`` that denies service starts is put in place if there is none.
* :func:`start_daemon` starts a **private** containerd and dockerd pair.  Every path either of
  them writes is under a directory of ours (data root, exec root, sockets, pidfile, containerd
  root and state, the daemon's key file); the daemon's configuration file is ours too, so
  ``/etc/docker/daemon.json`` is never read.  containerd is started by us and handed to
  dockerd with ``--containerd``: left alone, dockerd 20.10 would use a system containerd
  whenever ``/run/containerd/containerd.sock`` exists instead of starting its own.
  Networking is off (``--bridge=none --iptables=false --ip-forward=false --ip-masq=false``):
  otherwise dockerd creates ``docker0``, writes NAT and FORWARD rules, sets the FORWARD
  policy to DROP and turns IPv4 forwarding on, all host-wide.  Containers get the ``none``
  network unless they ask for ``network_mode="host"`` (apt-get inside a container needs it).
* Containers are started under ``--cgroup-parent <own memory group>/edgeprof-docker-<pid>``:
  dockerd's cgroupfs driver would otherwise put them at ``/docker`` in every hierarchy root,
  outside the memory group this machine gave us.  runc creates that path in *every*
  hierarchy (also those where we are in ``/``, the named ``systemd`` one and ``unified``);
  :meth:`PrivateDaemon.stop` removes the parent's subtree and, deepest first, every
  directory on the way that did not exist before the daemon started or that is strictly
  below our own group and empty (see :meth:`PrivateDaemon._remove_groups`), and raises if
  one is left.
* A test process killed before ``stop()``: dockerd and containerd die with it
  (``PR_SET_PDEATHSIG``), the shims do not; every daemon is registered in the cache, and
  the next :func:`start_daemon` reaps a dead session's daemon (:func:`reap_stale_daemons`).
* :func:`ensure_base_images` imports two images built locally (``docker import``):
  a static busybox and a Debian bookworm ``minbase`` rootfs with python3 (``debootstrap``),
  whose tarballs are cached in :func:`default_cache_dir` and keyed by a recipe version.

Typical use (see ``conftest.py``)::

    daemon = start_daemon(tmp_dir, data_root=default_cache_dir() / "data-root")
    try:
        images = ensure_base_images(daemon.host)
        client = docker.DockerClient(base_url=daemon.host)
        ...
    finally:
        daemon.stop()

Only the standard library and the Docker SDK (``pip install docker``) are used.  This module
is the harness's public face (import from it); the work is done in ``daemon_common`` (the
error, timings, the cache dir), ``daemon_host`` (mounts, cgroup hierarchies, processes),
``daemon_install`` (``docker.io``), ``daemon_images`` (the base images), ``daemon_process``
(:class:`PrivateDaemon` and its stop) and ``daemon_start`` (:func:`start_daemon`, the reaper).
"""

from __future__ import annotations

from tests.docker.daemon_common import TIMINGS, DockerUnavailable, default_cache_dir
from tests.docker.daemon_host import Hierarchy, cgroup_hierarchies, own_cgroup, own_groups

# test_daemon.py checks mounts with it; a private name, so re-exported explicitly.
from tests.docker.daemon_host import _mounts_under as _mounts_under
from tests.docker.daemon_images import (
    BUSYBOX_IMAGE,
    BUSYBOX_RECIPE,
    IMAGE_LABEL,
    PYTHON3_IMAGE,
    PYTHON3_RECIPE,
    build_busybox_tarball,
    build_python3_tarball,
    ensure_base_images,
)
from tests.docker.daemon_install import ensure_docker_installed
from tests.docker.daemon_process import PrivateDaemon
from tests.docker.daemon_start import DockerSession, reap_stale_daemons, start_daemon

__all__ = [
    "BUSYBOX_IMAGE",
    "BUSYBOX_RECIPE",
    "IMAGE_LABEL",
    "PYTHON3_IMAGE",
    "PYTHON3_RECIPE",
    "TIMINGS",
    "DockerSession",
    "DockerUnavailable",
    "Hierarchy",
    "PrivateDaemon",
    "build_busybox_tarball",
    "build_python3_tarball",
    "cgroup_hierarchies",
    "default_cache_dir",
    "ensure_base_images",
    "ensure_docker_installed",
    "own_cgroup",
    "own_groups",
    "reap_stale_daemons",
    "start_daemon",
]
