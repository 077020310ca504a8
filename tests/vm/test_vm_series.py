"""The VM harness's choices that need no boot: kernel series, packages, apt options, vCPUs."""

from __future__ import annotations

from pathlib import Path

import pytest

from . import guest, launch, series
from .guest import VmUnavailable
from .kernel import release_in_series

pytestmark = pytest.mark.vm

# Shaped like `apt-cache search --names-only` over bookworm-backports and bookworm.
APT_612 = """\
linux-image-6.12.95+deb12-amd64-dbg - Debug symbols for linux-image-6.12.95+deb12-amd64
linux-image-6.12.95+deb12-amd64-unsigned - Linux 6.12 for 64-bit PCs
linux-image-6.12.95+deb12-cloud-amd64 - Linux 6.12 for x86-64 cloud (signed)
linux-image-6.12.9+deb12-amd64 - Linux 6.12 for 64-bit PCs (signed)
linux-image-6.12.73+deb12-amd64 - Linux 6.12 for 64-bit PCs (signed)
linux-image-6.12.73+deb12-rt-amd64 - Linux 6.12 for 64-bit PCs (signed), PREEMPT_RT
linux-image-6.12.88+deb12-amd64 - Linux 6.12 for 64-bit PCs (signed)
"""
APT_61 = """\
linux-image-6.1.0-9-amd64 - Linux 6.1 for 64-bit PCs (signed)
linux-image-6.1.0-56-amd64 - Linux 6.1 for 64-bit PCs (signed)
linux-image-6.1.0-56-cloud-amd64 - Linux 6.1 for x86-64 cloud (signed)
linux-image-6.1.0-41-amd64 - Linux 6.1 for 64-bit PCs (signed)
"""


def test_newest_generic_612_first_by_patch_number_not_text() -> None:
    assert series.newest_packages(series.SERIES["6.12"], APT_612) == [
        "linux-image-6.12.88+deb12-amd64",
        "linux-image-6.12.73+deb12-amd64",
        "linux-image-6.12.9+deb12-amd64",
    ]


def test_newest_generic_61_first_by_abi() -> None:
    assert series.newest_packages(series.SERIES["6.1"], APT_61) == [
        "linux-image-6.1.0-56-amd64",
        "linux-image-6.1.0-41-amd64",
        "linux-image-6.1.0-9-amd64",
    ]


def test_one_series_never_picks_the_others_packages() -> None:
    assert series.newest_packages(series.SERIES["6.1"], APT_612) == []
    assert series.newest_packages(series.SERIES["6.12"], APT_61) == []


def test_release_belongs_to_its_series_only() -> None:
    assert release_in_series("6.12.95+deb12-amd64", series.SERIES["6.12"])
    assert not release_in_series("6.12.95+deb12-amd64", series.SERIES["6.1"])
    assert release_in_series("6.1.0-56-amd64", series.SERIES["6.1"])
    assert not release_in_series("6.1.0-56-amd64", series.SERIES["6.12"])


def test_series_from_argument_env_or_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EDGEPROF_VM_KERNEL", raising=False)
    assert series.series_for().name == "6.12"
    monkeypatch.setenv("EDGEPROF_VM_KERNEL", "6.1")
    assert series.series_for().name == "6.1"
    assert series.series_for("6.12").name == "6.12"
    monkeypatch.setenv("EDGEPROF_VM_KERNEL", "5.10")
    with pytest.raises(VmUnavailable, match=r"6\.1, 6\.12"):
        series.series_for()


def test_host_mirror_from_deb822_skips_security_and_disabled() -> None:
    security = (
        "Types: deb\nURIs: http://security.example/debian-security\n"
        "Suites: bookworm-security\nComponents: main\n"
    )
    main = (
        "Types: deb deb-src\n# a comment\nURIs: http://mirror.example/debian/\n"
        "Suites: bookworm bookworm-updates\nComponents: main\n"
    )
    disabled = "Enabled: no\nTypes: deb\nURIs: http://old.example/debian\nSuites: bookworm\n"
    assert series.host_mirror([disabled, security + "\n" + main]) == "http://mirror.example/debian"


def test_host_mirror_from_one_line_format_and_fallback() -> None:
    text = (
        "# deb http://commented.example/debian bookworm main\n"
        "deb-src http://src.example/debian bookworm main\n"
        "deb [arch=amd64 signed-by=/k.gpg] http://one.example/debian bookworm main\n"
    )
    assert series.host_mirror([text]) == "http://one.example/debian"
    assert series.host_mirror(["deb https://packages.example/apt cloud-sdk main\n"]) == (
        series.FALLBACK_MIRROR
    )


def test_private_apt_leaves_the_hosts_sources_lists_and_cache_alone(tmp_path: Path) -> None:
    options = series.private_apt_options(tmp_path)
    pairs = dict(o.split("=", 1) for o in options[1::2])
    assert options[::2] == ["-o"] * 4
    assert pairs == {
        "Dir::Etc::SourceList": "/dev/null",
        "Dir::Etc::SourceParts": str(tmp_path / "sources"),
        "Dir::State::Lists": str(tmp_path / "lists"),
        "Dir::Cache": str(tmp_path / "cache"),
    }
    sources = series.private_sources("http://m.example/debian", "bookworm-backports")
    assert sources.splitlines() == [
        "Types: deb",
        "URIs: http://m.example/debian",
        "Suites: bookworm-backports",
        "Components: main",
        "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg",
    ]


def test_vcpus_from_env_default_eight(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EDGEPROF_VM_CPUS", raising=False)
    assert guest.default_cpus() == 8
    monkeypatch.setenv("EDGEPROF_VM_CPUS", "3")
    assert guest.default_cpus() == 3
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv("EDGEPROF_VM_CPUS", bad)
        with pytest.raises(ValueError, match="EDGEPROF_VM_CPUS"):
            guest.default_cpus()


def test_guests_run_single_threaded_tcg_whatever_their_vcpus() -> None:
    # Multi-threaded TCG oopsed the 6.12 guest in live code patching (launch._tcg_accel).
    assert launch._tcg_accel(1) == "tcg,thread=single"
    assert launch._tcg_accel(8) == "tcg,thread=single"
