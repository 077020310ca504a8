"""Everything a guest boot needs, prepared and cached: qemu, the kernel, the initramfs."""

from __future__ import annotations

import platform
from pathlib import Path

from .guest import VmAssets, VmUnavailable, default_cache_dir, inside_guest
from .host_tools import _ensure_qemu, _locked
from .initramfs import _ensure_busybox, _ensure_initrd
from .kernel import _ensure_kernel
from .series import series_for


def ensure_assets(cache_dir: Path | None = None, kernel: str | None = None) -> VmAssets:
    """Make sure qemu, a kernel and an initramfs are ready, and return them.

    Installs ``qemu-system-x86`` with apt-get when it is missing (needs root), downloads and
    unpacks the newest generic Debian kernel of series ``kernel`` (``6.12`` or ``6.1``;
    default ``$EDGEPROF_VM_KERNEL``, else 6.12: :func:`~tests.vm.series.series_for`) and a
    static busybox into ``cache_dir`` (default :func:`default_cache_dir`), and builds the
    initramfs.  Both series are cached side by side.  Everything is cached and
    reused; the initramfs is keyed by a hash of its inputs (init script, modules, busybox), so
    it is rebuilt when any of them changes.  Concurrent callers serialise on a lock file.

    Raises :class:`VmUnavailable` when any of this is impossible here.
    """
    if inside_guest():
        raise VmUnavailable(
            "already inside an edgeprof VM guest: nested TCG guests are not supported"
        )
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        raise VmUnavailable(
            f"the VM tier needs Linux on x86-64, not {platform.system()} {platform.machine()}"
        )
    series = series_for(kernel)
    cache = (cache_dir or default_cache_dir()).expanduser().resolve()
    try:
        cache.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise VmUnavailable(f"cannot create the VM cache directory {cache}: {exc}") from exc
    with _locked(cache / ".lock"):
        qemu = _ensure_qemu()
        kernel_dir = _ensure_kernel(cache, series)
        busybox = _ensure_busybox(cache)
        return _ensure_initrd(cache, qemu, kernel_dir, busybox, series.name)
