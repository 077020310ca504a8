"""Which guest kernel to boot: the two kernel series, their Debian packages, a private apt.

* ``6.12`` (the default): what most current hosts run, and the first kernel whose cgroup v2
  ``memory.peak`` can be reset per open file descriptor, which edgeprof uses for phase peaks.
  Debian bookworm has it only in ``bookworm-backports``
  (``linux-image-6.12.N+deb12-amd64``), which the host's apt sources usually lack, so it is
  fetched through a private apt configuration under the VM cache: the host's sources, lists
  and caches are never touched.
* ``6.1``: bookworm's own kernel (``linux-image-6.1.0-N-amd64``) from the host's apt
  sources; its ``memory.peak`` cannot be reset, so it exercises the sampled fallback.

``EDGEPROF_VM_KERNEL`` picks the series.  Only the standard library is used.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterable
from pathlib import Path

from .guest import VmUnavailable

#: The mirror used when the host's apt sources name no Debian archive.
FALLBACK_MIRROR = "http://deb.debian.org/debian"

#: The archive key every Debian mirror signs with (package ``debian-archive-keyring``).
DEBIAN_KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"


@dataclasses.dataclass(frozen=True)
class KernelSeries:
    """One kernel series the harness can boot."""

    #: ``EDGEPROF_VM_KERNEL`` value and the prefix of the guest's ``uname -r``.
    name: str
    #: Regex for ``apt-cache search --names-only``.
    search: str
    #: Matches a generic amd64 image package in ``apt-cache search`` output (one per line);
    #: group 1 is the package, group 2 the number that orders them (newest is largest).
    package_re: re.Pattern[str]
    #: Suite fetched through the private apt configuration; None: the host's own sources.
    private_suite: str | None


SERIES: dict[str, KernelSeries] = {
    "6.1": KernelSeries(
        name="6.1",
        search=r"^linux-image-6\.1\.0-[0-9]+-amd64$",
        package_re=re.compile(r"^(linux-image-6\.1\.0-(\d+)-amd64)\s", re.MULTILINE),
        private_suite=None,
    ),
    "6.12": KernelSeries(
        name="6.12",
        search=r"^linux-image-6\.12\.[0-9]+\+deb12-amd64$",
        package_re=re.compile(r"^(linux-image-6\.12\.(\d+)\+deb12-amd64)\s", re.MULTILINE),
        private_suite="bookworm-backports",
    ),
}

DEFAULT_SERIES = "6.12"


def series_for(name: str | None = None) -> KernelSeries:
    """Return the series ``name``, else ``$EDGEPROF_VM_KERNEL``, else :data:`DEFAULT_SERIES`."""
    name = name or os.environ.get("EDGEPROF_VM_KERNEL") or DEFAULT_SERIES
    try:
        return SERIES[name]
    except KeyError:
        raise VmUnavailable(
            f"unknown guest kernel {name!r} (EDGEPROF_VM_KERNEL): choose one of "
            f"{', '.join(SERIES)}"
        ) from None


def newest_packages(series: KernelSeries, apt_cache_output: str) -> list[str]:
    """Return the generic image packages of ``series`` in ``apt_cache_output``, newest first.

    Names that merely start like one (``-cloud-``, ``-rt-``, ``-dbg``, ``-unsigned``) do not
    match: the cloud flavour lacks 9p, and the others are not the plain signed image.
    """
    found = {name: int(abi) for name, abi in series.package_re.findall(apt_cache_output)}
    return sorted(found, key=lambda name: found[name], reverse=True)


def host_mirror(sources: Iterable[str]) -> str:
    """Return the Debian archive URI the host's apt sources use.

    ``sources`` are the texts of ``sources.list`` files (one-line ``deb URI suite ...``)
    and of deb822 ``.sources`` files.  The first ``deb`` entry with a plain ``bookworm``
    suite wins (``-security`` lives on another host); :data:`FALLBACK_MIRROR` if none.
    """
    for text in sources:
        for uri, suites in _entries(text):
            if "bookworm" in suites:
                return uri.rstrip("/")
    return FALLBACK_MIRROR


def _entries(text: str) -> list[tuple[str, list[str]]]:
    """Return ``(uri, suites)`` of each ``deb`` entry in one sources file (either format)."""
    # A comment line is dropped, not blanked: in deb822 a blank line would end the stanza.
    lines = [
        line.split("#", 1)[0].rstrip()
        for line in text.splitlines()
        if not line.lstrip().startswith("#")
    ]
    entries: list[tuple[str, list[str]]] = []
    for line in lines:  # one-line format: deb [options] uri suite component...
        words = line.split()
        if words[:1] == ["deb"]:
            rest = words[1:]
            if rest and rest[0].startswith("["):
                while rest and not rest[0].endswith("]"):
                    rest = rest[1:]
                rest = rest[1:]
            if len(rest) >= 2:
                entries.append((rest[0], [rest[1]]))
    stanza: dict[str, str] = {}
    for line in [*lines, ""]:  # deb822: stanzas of "Key: value" separated by blank lines
        if not line.strip():
            if "deb" in stanza.get("types", "").split() and stanza.get("enabled", "yes") != "no":
                suites = stanza.get("suites", "").split()
                entries.extend((uri, suites) for uri in stanza.get("uris", "").split())
            stanza = {}
        elif ":" in line and not line[0].isspace():
            key, _, value = line.partition(":")
            stanza[key.strip().lower()] = value.strip()
    return entries


def read_host_sources(etc_apt: Path = Path("/etc/apt")) -> list[str]:
    """Return the texts of the host's ``sources.list`` and ``sources.list.d/*.{list,sources}``."""
    paths = [etc_apt / "sources.list"]
    parts = etc_apt / "sources.list.d"
    if parts.is_dir():
        paths += sorted(p for p in parts.iterdir() if p.suffix in (".list", ".sources"))
    texts = []
    for path in paths:
        try:
            texts.append(path.read_text(errors="replace"))
        except OSError:
            continue
    return texts


def private_sources(mirror: str, suite: str) -> str:
    """Return the deb822 sources file of the private apt configuration."""
    return (
        "Types: deb\n"
        f"URIs: {mirror}\n"
        f"Suites: {suite}\n"
        "Components: main\n"
        f"Signed-By: {DEBIAN_KEYRING}\n"
    )


def private_apt_options(apt_dir: Path) -> list[str]:
    """Return the ``-o`` options that make apt use only the configuration in ``apt_dir``.

    The host's ``sources.list`` and ``sources.list.d`` are replaced by ``apt_dir/sources``;
    the package lists and the download cache live under ``apt_dir`` too, so ``apt-get
    update`` with these options leaves the host's apt state as it was.
    """
    return [
        "-o",
        "Dir::Etc::SourceList=/dev/null",
        "-o",
        f"Dir::Etc::SourceParts={apt_dir / 'sources'}",
        "-o",
        f"Dir::State::Lists={apt_dir / 'lists'}",
        "-o",
        f"Dir::Cache={apt_dir / 'cache'}",
    ]
