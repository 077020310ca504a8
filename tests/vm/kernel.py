"""The guest kernel: the newest generic Debian kernel of a series, its modules, a vmlinux.

The series (6.1 or 6.12, :mod:`tests.vm.series`) is downloaded with ``apt-get download``
and unpacked with ``dpkg -x`` into the cache; the ``-cloud-`` flavour lacks 9p.  The
modules the initramfs loads (:data:`MODULES`) are ordered by the dependencies read from
each module's ``.modinfo``.
"""

from __future__ import annotations

import gzip
import io
import lzma
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from . import host_tools
from .guest import VmUnavailable
from .host_tools import _apt_update, _download_deb, _private_apt, _require_apt, _run
from .series import KernelSeries, newest_packages

#: Kernel modules the initramfs needs, in load order (their dependencies are added first;
#: modules built into the kernel are skipped).
MODULES: tuple[str, ...] = (
    "virtio_ring",
    "virtio",
    "virtio_pci_modern_dev",
    "virtio_pci_legacy_dev",
    "virtio_pci",
    "netfs",
    "fscache",
    "9pnet",
    "9pnet_virtio",
    "9p",
    "overlay",
)

def _kernel_candidates(series: KernelSeries, apt_options: Sequence[str]) -> list[str]:
    """Return the generic image packages of ``series`` that apt knows, newest first."""
    out = _run(["apt-cache", *apt_options, "search", "--names-only", series.search])
    return newest_packages(series, out)


def _pointer(cache: Path, series: KernelSeries) -> Path:
    """Return the file naming the cached kernel directory of ``series``."""
    return cache / f"kernel-current-{series.name}"


def _ensure_kernel(cache: Path, series: KernelSeries) -> Path:
    """Return the cached kernel directory of ``series``, downloading a kernel if needed.

    The directory holds ``vmlinuz``, ``release`` (``uname -r``) and ``modules/`` with the
    decompressed ``.ko`` files of :data:`MODULES` and their dependencies, ``load-order`` and
    ``builtin`` (the requested modules built into this kernel).  Each series has its own
    directory and ``kernel-current-<series>`` pointer, so both kernels stay cached.
    """
    current = _pointer(cache, series)
    if current.exists():
        kdir = cache / current.read_text().strip()
        if (kdir / "complete").exists():
            _ensure_vmlinux(kdir)
            return kdir
    _require_apt("downloading the guest kernel")
    options: list[str] = []
    if series.private_suite:
        options = _private_apt(cache, series.private_suite)
    candidates = _kernel_candidates(series, options)
    if not candidates:
        _refresh(cache, series)
        candidates = _kernel_candidates(series, options)
    if not candidates:
        raise VmUnavailable(
            f"apt knows no {series.search} package "
            f"(is {series.private_suite or 'Debian bookworm'} reachable? try apt-get update)"
        )
    errors: list[str] = []
    for attempt in range(2):
        for package in candidates:
            try:
                return _unpack_kernel(cache, series, package, options)
            except VmUnavailable as exc:
                errors.append(str(exc))
        if attempt == 0 and _refresh(cache, series):
            # A stale index can name packages the mirror no longer has.
            candidates = _kernel_candidates(series, options) or candidates
        else:
            break
    raise VmUnavailable("could not obtain a guest kernel:\n" + "\n".join(errors[-3:]))


def _refresh(cache: Path, series: KernelSeries) -> bool:
    """Update the package index ``series`` is found in, once; return whether it ran."""
    if series.private_suite:
        before = set(host_tools._private_updated)
        _private_apt(cache, series.private_suite, refresh=True)
        return host_tools._private_updated != before
    if host_tools._apt_updated or os.geteuid() != 0:
        return False
    _apt_update()
    return True


def _unpack_kernel(
    cache: Path, series: KernelSeries, package: str, apt_options: Sequence[str]
) -> Path:
    """Download ``package``, keep the kernel and needed modules under ``cache``."""
    with tempfile.TemporaryDirectory(prefix="tmp-kernel-", dir=cache) as tmp_name:
        tmp = Path(tmp_name)
        deb = _download_deb(package, tmp, apt_options)
        root = tmp / "root"
        _run(["dpkg", "-x", str(deb), str(root)])
        vmlinuz = sorted((root / "boot").glob("vmlinuz-*"))
        if not vmlinuz:
            raise VmUnavailable(f"{deb.name} contains no /boot/vmlinuz-*")
        release = vmlinuz[0].name.removeprefix("vmlinuz-")
        if not release_in_series(release, series):
            raise VmUnavailable(f"{deb.name} holds kernel {release}, not a {series.name} one")
        moddir = next(
            (d for base in ("lib", "usr/lib") if (d := root / base / "modules" / release).is_dir()),
            None,
        )
        if moddir is None:
            raise VmUnavailable(f"{deb.name} contains no modules directory for {release}")
        order, builtin = _resolve_modules(moddir)

        staging = tmp / "kernel"
        (staging / "modules").mkdir(parents=True)
        shutil.copyfile(vmlinuz[0], staging / "vmlinuz")
        for name, rel in order:
            (staging / "modules" / f"{name}.ko").write_bytes(_read_module(moddir / rel))
        (staging / "release").write_text(release + "\n")
        (staging / "package").write_text(deb.name + "\n")
        (staging / "load-order").write_text("".join(f"{name}\n" for name, _ in order))
        (staging / "builtin").write_text("".join(f"{name}\n" for name in builtin))
        (staging / "complete").write_text("")

        final = cache / f"kernel-{release}"
        if final.exists():
            shutil.rmtree(final)
        staging.rename(final)
    pointer = _pointer(cache, series)
    pointer.with_suffix(".tmp").write_text(final.name + "\n")
    pointer.with_suffix(".tmp").replace(pointer)
    # Older kernels of this series go, with their initramfs; the other series' stay.
    for old in cache.glob("kernel-*"):
        old_release = old.name.removeprefix("kernel-")
        if old.is_dir() and old != final and release_in_series(old_release, series):
            shutil.rmtree(old, ignore_errors=True)
            for initrd in cache.glob(f"initrd-{old_release}-*"):
                initrd.unlink(missing_ok=True)
    _ensure_vmlinux(final)
    return final


def release_in_series(release: str, series: KernelSeries) -> bool:
    """Return whether ``uname -r`` ``release`` belongs to ``series`` (6.1 is not 6.12)."""
    return re.match(rf"{re.escape(series.name)}[.-]", release) is not None


def _ensure_vmlinux(kdir: Path) -> None:
    """Unpack ``kdir/vmlinuz`` into ``kdir/vmlinux`` if it can boot through PVH.

    qemu boots an uncompressed ELF kernel with a PVH entry point directly, which skips the
    bzImage decompression: that takes about 7 s under TCG, half of a guest's boot.  Writes
    ``vmlinux.none`` instead when the kernel cannot be used that way.
    """
    if (kdir / "vmlinux").exists() or (kdir / "vmlinux.none").exists():
        return
    try:
        elf = _decompress_bzimage((kdir / "vmlinuz").read_bytes())
    except (ValueError, OSError, lzma.LZMAError, subprocess.CalledProcessError):
        elf = None
    if elf is None or not _has_pvh_note(elf):
        (kdir / "vmlinux.none").write_text("")
        return
    (kdir / "vmlinux.tmp").write_bytes(elf)
    (kdir / "vmlinux.tmp").replace(kdir / "vmlinux")


def _decompress_bzimage(image: bytes) -> bytes | None:
    """Return the ELF kernel inside a bzImage, or None if its compression is unsupported."""
    if image[0x202:0x206] != b"HdrS":
        raise ValueError("not a bzImage")
    setup_sects = image[0x1F1] or 4
    offset = (setup_sects + 1) * 512 + int.from_bytes(image[0x248:0x24C], "little")
    payload = image[offset : offset + int.from_bytes(image[0x24C:0x250], "little")]
    if payload.startswith(b"\xfd7zXZ\x00"):
        data = lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(payload)
    elif payload.startswith(b"\x1f\x8b"):
        data = gzip.GzipFile(fileobj=io.BytesIO(payload)).read()
    elif payload.startswith(b"\x28\xb5\x2f\xfd") and shutil.which("zstd"):
        # The kernel build appends the decompressed size (le32) to a zstd payload, which
        # the zstd tool rejects as trailing garbage (Debian's 6.12 kernels are zstd).
        data = subprocess.run(
            ["zstd", "-dc"], input=payload[:-4], capture_output=True, check=True
        ).stdout
    else:
        return None
    return data if data.startswith(b"\x7fELF\x02") else None


def _has_pvh_note(elf: bytes) -> bool:
    """Return whether an ELF kernel has the Xen PVH entry note (XEN_ELFNOTE_PHYS32_ENTRY)."""

    def num(offset: int, size: int) -> int:
        return int.from_bytes(elf[offset : offset + size], "little")

    phoff, phentsize, phnum = num(0x20, 8), num(0x36, 2), num(0x38, 2)
    for header in (phoff + i * phentsize for i in range(phnum)):
        if num(header, 4) != 4:  # PT_NOTE
            continue
        pos, end = num(header + 0x08, 8), num(header + 0x08, 8) + num(header + 0x20, 8)
        while pos + 12 <= end:
            namesz, descsz, kind = num(pos, 4), num(pos + 4, 4), num(pos + 8, 4)
            name = elf[pos + 12 : pos + 12 + namesz]
            if name == b"Xen\0" and kind == 18:
                return True
            pos += 12 + (namesz + 3) // 4 * 4 + (descsz + 3) // 4 * 4
    return False


def _module_name(path: str) -> str:
    """Return the module name of ``kernel/.../foo-bar.ko[.xz]`` (``foo_bar``)."""
    base = path.rsplit("/", 1)[-1]
    return base.split(".ko", 1)[0].replace("-", "_")


def _resolve_modules(moddir: Path) -> tuple[list[tuple[str, str]], list[str]]:
    """Order :data:`MODULES` and their dependencies for loading.

    Returns ``([(name, path relative to moddir), ...], [built-in names])``.  The package
    ships no ``modules.dep`` (depmod runs at install time), so dependencies are read from
    each module's ``.modinfo`` section; built-ins come from ``modules.builtin``.
    """
    paths = {_module_name(p.name): p for p in sorted((moddir / "kernel").rglob("*.ko*"))}
    builtin_file = moddir / "modules.builtin"
    builtin_all = (
        {_module_name(line) for line in builtin_file.read_text().split()}
        if builtin_file.exists()
        else set()
    )

    order: list[tuple[str, str]] = []
    seen: set[str] = set()
    missing: list[str] = []

    def visit(name: str) -> None:
        if name in seen:
            return
        seen.add(name)
        path = paths.get(name)
        if path is None:
            if name not in builtin_all:
                missing.append(name)
            return
        for dep in _modinfo(_read_module(path)).get("depends", "").split(","):
            if dep:
                visit(_module_name(dep))
        order.append((name, str(path.relative_to(moddir))))

    for wanted in MODULES:
        visit(wanted)
    # Only the modules the guest cannot work without are fatal when absent.
    essential = {"virtio_pci", "9pnet_virtio", "9p", "overlay"} & set(missing)
    if essential:
        raise VmUnavailable(f"kernel in {moddir} lacks modules {sorted(essential)}")
    builtin = [name for name in MODULES if name in builtin_all]
    return order, builtin


def _modinfo(elf: bytes) -> dict[str, str]:
    """Return the ``key=value`` pairs of a kernel module's ``.modinfo`` ELF section."""
    if elf[:5] != b"\x7fELF\x02":
        raise VmUnavailable("kernel module is not a 64-bit ELF file")

    def num(offset: int, size: int) -> int:
        return int.from_bytes(elf[offset : offset + size], "little")

    shoff, shentsize, shnum, shstrndx = num(0x28, 8), num(0x3A, 2), num(0x3C, 2), num(0x3E, 2)
    sections = [
        (num(h, 4), num(h + 0x18, 8), num(h + 0x20, 8))
        for h in (shoff + i * shentsize for i in range(shnum))
    ]
    strtab = sections[shstrndx][1]
    info: dict[str, str] = {}
    for name_off, offset, size in sections:
        name = elf[strtab + name_off : elf.index(b"\0", strtab + name_off)]
        if name == b".modinfo":
            for item in elf[offset : offset + size].split(b"\0"):
                key, sep, value = item.decode(errors="replace").partition("=")
                if sep:
                    info.setdefault(key, value)
    return info


def _read_module(path: Path) -> bytes:
    """Return a module's bytes, decompressing ``.ko.xz`` / ``.ko.gz`` / ``.ko.zst``."""
    data = path.read_bytes()
    if path.name.endswith(".xz"):
        return lzma.decompress(data)
    if path.name.endswith(".gz"):
        return gzip.decompress(data)
    if path.name.endswith(".zst"):
        if shutil.which("zstd") is None:
            raise VmUnavailable(f"{path.name} is zstd-compressed and `zstd` is missing")
        return subprocess.run(["zstd", "-dc"], input=data, capture_output=True, check=True).stdout
    return data
