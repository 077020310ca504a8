"""The two base images the docker tier runs, built locally and imported (``docker import``).

A static busybox and a Debian bookworm ``minbase`` rootfs with python3 (``debootstrap``); their
tarballs are cached and keyed by a recipe version, and each image carries the recipe key in a
label so that a stale one is replaced.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import docker

from tests.daemon_tools import tail as _tail
from tests.docker.daemon_common import (
    SBIN_PATH,
    TIMINGS,
    DockerUnavailable,
    _flock,
    _timed,
    _which,
    default_cache_dir,
)
from tests.docker.daemon_host import _safe_rmtree, _unmount_under
from tests.docker.daemon_install import _apt_install

BUSYBOX_IMAGE = "edgeprof-test/busybox:latest"

PYTHON3_IMAGE = "edgeprof-test/python3:bookworm"

#: Label carrying the recipe key an image was built from; a different key re-imports it.
IMAGE_LABEL = "org.edgeprof.test-image"

#: Bump a recipe to rebuild its cached tarball (the key is part of the file name).
BUSYBOX_RECIPE = "busybox-static-r1"

PYTHON3_RECIPE = "debian-bookworm-minbase-python3-r1"

DEBIAN_MIRROR = os.environ.get("EDGEPROF_DEBIAN_MIRROR", "http://deb.debian.org/debian")

DEBIAN_SECURITY_MIRROR = "http://deb.debian.org/debian-security"


@dataclass(frozen=True)
class _ImageSpec:
    key: str
    tag: str
    build: Callable[[Path], Path]
    changes: tuple[str, ...]


def _download_deb(package: str, into: Path) -> Path:
    """``apt-get download package`` into ``into`` (runs apt-get update once if needed)."""
    for attempt in (0, 1):
        r = subprocess.run(
            ["apt-get", "download", "-q", package],
            cwd=into,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        debs = sorted(into.glob(f"{package}_*.deb"))
        if r.returncode == 0 and debs:
            return debs[-1]
        if attempt == 0 and os.geteuid() == 0:
            subprocess.run(
                ["apt-get", "-q", "-o", "DPkg::Lock::Timeout=300", "update"],
                capture_output=True,
                timeout=600,
                check=False,
            )
    raise DockerUnavailable(f"apt-get download {package} failed:\n{r.stdout}{r.stderr}")


@_timed("build busybox")
def build_busybox_tarball(cache: Path) -> Path:
    """A rootfs tarball with Debian's static busybox and a symlink per applet (cached)."""
    out = cache / f"{BUSYBOX_RECIPE}.tar"
    if out.exists():
        return out
    with _flock(cache / "build.lock"):
        if out.exists():
            return out
        with tempfile.TemporaryDirectory(dir=cache, prefix="busybox-") as tmp_s:
            tmp = Path(tmp_s)
            deb = _download_deb("busybox-static", tmp)
            subprocess.run(["dpkg-deb", "-x", str(deb), str(tmp / "x")], check=True, timeout=120)
            binary = tmp / "x" / "bin" / "busybox"
            applets = subprocess.run(
                [str(binary), "--list-full"], capture_output=True, text=True, check=True, timeout=30
            ).stdout.split()
            part = tmp / "rootfs.tar"
            with tarfile.open(part, "w", format=tarfile.GNU_FORMAT) as tar:

                def add(
                    name: str, kind: bytes, mode: int, data: bytes = b"", link: str = ""
                ) -> None:
                    ti = tarfile.TarInfo(name)
                    ti.type, ti.mode, ti.mtime, ti.linkname = kind, mode, 0, link
                    ti.size = len(data)
                    tar.addfile(ti, io.BytesIO(data) if data else None)

                dirs = {
                    "bin",
                    "sbin",
                    "usr",
                    "usr/bin",
                    "usr/sbin",
                    "dev",
                    "proc",
                    "sys",
                    "etc",
                    "root",
                    "var",
                    "run",
                }
                for d in sorted(dirs):
                    add(d, tarfile.DIRTYPE, 0o755)
                add("tmp", tarfile.DIRTYPE, 0o1777)
                add("bin/busybox", tarfile.REGTYPE, 0o755, binary.read_bytes())
                for a in sorted(set(applets)):
                    if a.split("/")[-1] != "busybox" and a.rsplit("/", 1)[0] in dirs:
                        add(a, tarfile.SYMTYPE, 0o777, link="/bin/busybox")
                add(
                    "etc/passwd",
                    tarfile.REGTYPE,
                    0o644,
                    b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n",
                )
                add("etc/group", tarfile.REGTYPE, 0o644, b"root:x:0:\nnogroup:x:65534:\n")
            os.replace(part, out)
    return out


@_timed("build python3 (debootstrap)")
def build_python3_tarball(cache: Path) -> Path:
    """A Debian bookworm ``minbase`` rootfs with python3, made by debootstrap from
    deb.debian.org, as a tarball (cached; about a minute cold).  apt works inside: the
    sources list names bookworm, bookworm-updates and bookworm-security on deb.debian.org."""
    out = cache / f"{PYTHON3_RECIPE}.tar"
    if out.exists():
        return out
    if os.geteuid() != 0:
        raise DockerUnavailable("debootstrap needs root")
    if _which("debootstrap") is None:
        _apt_install("debootstrap")
    with _flock(cache / "build.lock"):
        if out.exists():
            return out
        tmp = Path(tempfile.mkdtemp(dir=cache, prefix="debootstrap-"))
        try:
            root = tmp / "rootfs"
            dlog = cache / "debootstrap.log"
            with dlog.open("w") as f:
                r = subprocess.run(
                    [
                        "debootstrap",
                        "--variant=minbase",
                        "--include=python3",
                        "bookworm",
                        str(root),
                        DEBIAN_MIRROR,
                    ],
                    stdout=f,
                    stderr=subprocess.STDOUT,
                    timeout=3600,
                    check=False,
                    env={**os.environ, "PATH": SBIN_PATH},
                )
            if r.returncode != 0:
                raise DockerUnavailable(f"debootstrap failed ({r.returncode}):\n{_tail(dlog)}")
            _unmount_under(root)  # debootstrap unmounts /proc and /sys itself; be sure
            (root / "etc/apt/sources.list").write_text(
                f"deb {DEBIAN_MIRROR} bookworm main\n"
                f"deb {DEBIAN_MIRROR} bookworm-updates main\n"
                f"deb {DEBIAN_SECURITY_MIRROR} bookworm-security main\n"
            )
            # Downloaded packages and package lists: 90 MB the image does not need
            # (apt-get update refreshes the lists anyway).
            for pattern in (
                "var/cache/apt/archives/*.deb",
                "var/cache/apt/*.bin",
                "var/lib/apt/lists/*_*",
            ):
                for p in root.glob(pattern):
                    p.unlink()
            part = tmp / "rootfs.tar"
            subprocess.run(
                [
                    "tar",
                    "--numeric-owner",
                    "--xattrs",
                    "-C",
                    str(root),
                    "-cf",
                    str(part),
                    "--exclude=./dev/*",
                    "--exclude=./proc/*",
                    "--exclude=./sys/*",
                    "--exclude=./run/*",
                    "--exclude=./tmp/*",
                    ".",
                ],
                check=True,
                timeout=600,
            )
            os.replace(part, out)
            for old in cache.glob("debian-bookworm-*.tar*"):
                if old != out:
                    old.unlink()
        finally:
            _safe_rmtree(tmp)
    return out


_SPECS = {
    "busybox": _ImageSpec(
        BUSYBOX_RECIPE,
        BUSYBOX_IMAGE,
        build_busybox_tarball,
        ("ENV PATH=/bin:/sbin:/usr/bin:/usr/sbin", 'CMD ["sh"]'),
    ),
    "python3": _ImageSpec(
        PYTHON3_RECIPE,
        PYTHON3_IMAGE,
        build_python3_tarball,
        (f"ENV PATH={SBIN_PATH}", "ENV LANG=C.UTF-8", 'CMD ["python3"]'),
    ),
}


def ensure_base_images(
    host: str, cache_dir: Path | None = None, names: Collection[str] | None = None
) -> dict[str, str]:
    """Make sure the daemon at ``host`` has the base images; returns
    ``{"busybox": "edgeprof-test/busybox:latest", "python3": "edgeprof-test/python3:bookworm"}``
    (only ``names`` of them if given).

    Idempotent: an image whose tag exists with the current recipe's label is left alone;
    otherwise its tarball is built (or taken from the cache) and imported."""
    import docker

    cache = cache_dir or default_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    api = docker.APIClient(base_url=host, timeout=900)
    try:
        for short, spec in _SPECS.items():
            if names is not None and short not in names:
                continue
            old_id: str | None = None
            try:
                attrs = _inspect(api, spec.tag)
                labels = (attrs.get("Config") or {}).get("Labels") or {}
                if labels.get(IMAGE_LABEL) == spec.key:
                    continue
                old_id = attrs["Id"]
            except docker.errors.ImageNotFound:
                pass
            tarball = spec.build(cache)
            repo, tag = spec.tag.rsplit(":", 1)
            t = time.monotonic()
            api.import_image(
                src=str(tarball),
                repository=repo,
                tag=tag,
                changes=[*spec.changes, f"LABEL {IMAGE_LABEL}={spec.key}"],
            )
            TIMINGS[f"import {short}"] = time.monotonic() - t
            attrs = _inspect(api, spec.tag)
            if (attrs.get("Config") or {}).get("Labels", {}).get(IMAGE_LABEL) != spec.key:
                raise DockerUnavailable(f"importing {tarball} did not give {spec.tag}")
            if old_id and old_id != attrs["Id"]:
                with contextlib.suppress(docker.errors.APIError):
                    api.remove_image(old_id)
    finally:
        api.close()
    return {short: spec.tag for short, spec in _SPECS.items() if names is None or short in names}


def _inspect(api: docker.APIClient, ref: str) -> dict[str, Any]:
    """``inspect_image`` (untyped in the SDK's stubs)."""
    attrs: dict[str, Any] = api.inspect_image(ref)  # type: ignore[no-untyped-call]
    return attrs
