"""Run a command inside a throwaway qemu VM that boots a real cgroup v2 kernel.

Our development and CI machines run cgroup v1 (hybrid).  To exercise the cgroup v2 code path on
a real kernel, this module boots a small VM under ``qemu-system-x86_64 -accel tcg`` (KVM guests
hang on these machines):

* kernel: the generic Debian ``linux-image-6.1.0-N-amd64`` (newest N available, fetched with
  ``apt-get download`` and unpacked with ``dpkg -x``; the ``-cloud-`` flavour lacks 9p);
* initramfs: a static busybox plus the virtio / 9p / overlay modules, built here in Python;
* the host's root file system is shared read-only over 9p and becomes the lower layer of an
  overlayfs on a tmpfs, so the guest sees the host's checkout, venv and Python at their host
  paths and may write anywhere without touching the host;
* ``cgroup2`` is mounted at ``/sys/fs/cgroup`` (every controller is available there; enabling
  them in ``cgroup.subtree_control`` is left to the code under test);
* a second, writable 9p share (mounted at :data:`GUEST_OUT_DIR`) carries the command script in
  and the command's output and exit code back out.

Booting takes a few seconds; TCG makes Python start-up slow, so boot one guest per test session
and run the whole suite inside it.  Typical use::

    from tests.vm.harness import GUEST_OUT_DIR, REPO_ROOT, project_python, run_in_guest

    result = run_in_guest(
        [str(project_python()), "-m", "pytest", "-m", "vm", f"--junitxml={GUEST_OUT_DIR}/j.xml"],
        cwd=REPO_ROOT,
    )
    result.exit_code, result.output, result.out_dir / "j.xml"

Only the standard library is used.  This module is the harness's public face; the work is
done in

* :mod:`tests.vm.guest`: what host and guest agree on (share paths, the interpreter), the
  result of a run and the errors;
* :mod:`tests.vm.assets`: :func:`ensure_assets`, built from :mod:`tests.vm.host_tools`
  (apt-get, dpkg, qemu's install), :mod:`tests.vm.kernel` (the guest kernel and its modules)
  and :mod:`tests.vm.initramfs` (busybox, ``/init``, the archive);
* :mod:`tests.vm.launch`: :func:`run_in_guest`, the qemu launch.
"""

from __future__ import annotations

from .assets import ensure_assets
from .guest import (
    GUEST_HOST_ROOT,
    GUEST_OUT_DIR,
    HOST_PYTHON,
    REPO_ROOT,
    GuestResult,
    VmAssets,
    VmError,
    VmUnavailable,
    default_cache_dir,
    in_ci,
    inside_guest,
    project_python,
)
from .kernel import MODULES
from .launch import run_in_guest

__all__ = [
    "GUEST_HOST_ROOT",
    "GUEST_OUT_DIR",
    "HOST_PYTHON",
    "MODULES",
    "REPO_ROOT",
    "GuestResult",
    "VmAssets",
    "VmError",
    "VmUnavailable",
    "default_cache_dir",
    "ensure_assets",
    "in_ci",
    "inside_guest",
    "project_python",
    "run_in_guest",
]
