"""Where a result's edgeprof code came from (:mod:`edgeprof.measure.provenance`), and the
notes that name it where two sides of one version differ in it (:mod:`edgeprof.analysis.hosts`)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from edgeprof.analysis import hosts
from edgeprof.measure import provenance
from edgeprof.model import RunResult
from edgeprof.model.origin import EdgeprofOrigin
from tests.conftest import require

from .conftest import make_result

A = "6c8a290d1e2f" + "0" * 28
B = "ded3d2e5e6d9" + "1" * 28


def _checkout(root: Path, head: str, refs: dict[str, str], packed: str = "") -> Path:
    """A fake checkout: ``root/.git`` with ``HEAD``, loose ``refs`` and ``packed-refs``;
    returns its ``edgeprof`` package directory."""
    git = root / ".git"
    git.mkdir(parents=True)
    (git / "HEAD").write_text(head + "\n")
    for ref, sha in refs.items():
        (git / ref).parent.mkdir(parents=True, exist_ok=True)
        (git / ref).write_text(sha + "\n")
    if packed:
        (git / "packed-refs").write_text(packed)
    (root / "edgeprof").mkdir()
    return root / "edgeprof"


def test_a_checkouts_commit_is_read_from_its_loose_ref(tmp_path: Path) -> None:
    package = _checkout(tmp_path, "ref: refs/heads/main", {"refs/heads/main": A})
    assert provenance.source_of(package) == f"git {A}"


def test_a_packed_ref_and_a_detached_head_are_read(tmp_path: Path) -> None:
    packed = f"# pack-refs with: peeled sorted\n{B} refs/heads/dev\n{A} refs/heads/main\n"
    package = _checkout(tmp_path / "p", "ref: refs/heads/main", {}, packed)
    assert provenance.source_of(package) == f"git {A}"
    detached = _checkout(tmp_path / "d", B, {})
    assert provenance.source_of(detached) == f"git {B}"


def test_a_worktrees_gitdir_file_reads_its_head_and_the_common_refs(tmp_path: Path) -> None:
    main = tmp_path / "main" / ".git"
    (main / "worktrees" / "w").mkdir(parents=True)
    (main / "refs" / "heads").mkdir(parents=True)
    (main / "refs" / "heads" / "fix").write_text(B + "\n")
    (main / "worktrees" / "w" / "HEAD").write_text("ref: refs/heads/fix\n")
    (main / "worktrees" / "w" / "commondir").write_text("../..\n")
    tree = tmp_path / "w"
    (tree / "edgeprof").mkdir(parents=True)
    (tree / ".git").write_text(f"gitdir: {main / 'worktrees' / 'w'}\n")
    assert provenance.source_of(tree / "edgeprof") == f"git {B}"


def test_no_commit_is_claimed_from_an_unborn_branch_or_garbage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Neither is a commit: the installed distribution is asked instead."""
    monkeypatch.setattr(provenance, "installed_source", lambda: None)
    unborn = _checkout(tmp_path / "u", "ref: refs/heads/main", {})
    assert provenance.source_of(unborn) is None
    garbage = _checkout(tmp_path / "g", "ref: refs/heads/main", {"refs/heads/main": "xyz"})
    assert provenance.source_of(garbage) is None
    index = "edgeprof 0.1.0 from a package index"
    monkeypatch.setattr(provenance, "installed_source", lambda: index)
    (tmp_path / "bare" / "edgeprof").mkdir(parents=True)
    assert provenance.source_of(tmp_path / "bare" / "edgeprof") == index


@pytest.mark.parametrize(
    ("direct_url", "source"),
    [
        (
            {"url": "https://example.org/e.git", "vcs_info": {"vcs": "git", "commit_id": A}},
            f"git {A} (https://example.org/e.git)",
        ),
        (
            {"url": "file:///w/e-0.1.0.whl", "archive_info": {"hashes": {"sha256": "ab12"}}},
            "file:///w/e-0.1.0.whl (sha256 ab12)",
        ),
        ({"url": "file:///w/e.tar.gz", "archive_info": {}}, "file:///w/e.tar.gz"),
        (
            {"url": "file:///src/e", "dir_info": {"editable": True}},
            "file:///src/e (editable, edgeprof 0.1.0)",
        ),
        ({"url": "file:///src/e", "dir_info": {}}, "file:///src/e (edgeprof 0.1.0)"),
        ({"vcs_info": {"commit_id": A}}, None),
    ],
)
def test_an_installed_distributions_direct_url_names_its_origin(
    direct_url: dict[str, object], source: str | None
) -> None:
    assert provenance.direct_url_source(json.dumps(direct_url), "0.1.0") == source
    assert provenance.direct_url_source("{not json", "0.1.0") is None


def test_this_process_edgeprof_origin_is_read_once_and_is_this_checkouts_commit() -> None:
    root = Path(provenance.__file__).resolve().parents[2]
    # The suite runs from a git checkout (CI's clone): elsewhere (an sdist) a skip, which
    # fails under CI=true as every skip does.
    require((root / ".git").exists(), "not run from a git checkout")
    origin = provenance.edgeprof_origin()
    assert origin is provenance.edgeprof_origin()  # cached
    assert origin.source == f"git {provenance.checkout_commit(root / '.git')}"
    assert origin.source is not None and len(origin.source) == len("git ") + 40


def _made(source: str | None, version: str = "0.1.0") -> RunResult:
    return make_result(edgeprof_version=version, edgeprof_origin=EdgeprofOrigin(source))


def test_compare_names_the_commits_where_one_version_ran_from_two() -> None:
    note = hosts.sides_note([_made(f"git {A}")], [_made(f"git {B}")])
    assert note == (
        "the baseline and the current results ran on the same host by different edgeprof "
        "versions (0.1.0 (git 6c8a290d1e2f) → 0.1.0 (git ded3d2e5e6d9)): a change may be how "
        "it measures, not the model's"
    )
    # An older file's unknown origin is unknown, as its unrecorded memory is, not a
    # difference: an upgrading user's every old baseline had read "different hosts".
    old = dataclasses.replace(_made(None), edgeprof_origin=None)
    assert hosts.sides_note([old], [_made(f"git {B}")]) is None


def test_the_origin_is_not_shown_where_the_versions_tell_the_sides_apart() -> None:
    assert hosts.sides_note([_made(f"git {A}")], [_made(f"git {A}")]) is None
    note = hosts.sides_note([_made(f"git {A}")], [_made(f"git {B}", "0.2.0")])
    assert note is not None and "versions (0.1.0 → 0.2.0)" in note


def test_a_merge_names_its_parts_commits_only_where_their_versions_agree() -> None:
    (note,) = hosts.shard_notes(
        [("shard 1/2", [_made(f"git {A}")]), ("shard 2/2", [_made("file:///w/e.whl")])]
    )
    assert note.startswith(
        "the shards were measured by 2 edgeprof versions: 0.1.0 (git 6c8a290d1e2f) "
        "(shard 1/2); 0.1.0 (file:///w/e.whl) (shard 2/2)."
    )


def test_a_result_keeps_its_origin_and_an_older_file_reads_as_none() -> None:
    r = _made(f"git {A}")
    d = r.to_dict()
    assert list(d)[:3] == ["schema_version", "edgeprof_version", "edgeprof_origin"]
    assert d["edgeprof_origin"] == {"source": f"git {A}", "python": None}
    assert RunResult.from_dict(d) == r
    del d["edgeprof_origin"]
    assert RunResult.from_dict(d).edgeprof_origin is None


EPYC = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 26
model\t\t: 2
model name\t: AMD EPYC
stepping\t: 1
flags\t\t: fpu vme de hypervisor lahf_lm

processor\t: 1
cpu family\t: 25
model name\t: Other
"""


def test_the_first_cpus_family_model_and_stepping_and_its_hypervisor_flag() -> None:
    cpu = provenance.cpuinfo_keys(EPYC)
    assert cpu["model name"] == "AMD EPYC" and cpu["cpu family"] == "26"
    assert provenance.cpu_identity(cpu, "x86_64") == (26, 2, 1, True)
    bare = {**cpu, "flags": "fpu vme de lahf_lm"}
    assert provenance.cpu_identity(bare, "x86_64").virtual is False
    assert provenance.cpu_identity({"model": "x"}, "x86_64") == (None, None, None, None)


def test_another_architectures_model_is_not_read_as_x86s() -> None:
    """An ARM or POWER ``/proc/cpuinfo`` has other keys (``CPU part``; POWER's ``model``
    is a name): nothing is said of them."""
    cpu = {"model": "2", "cpu family": "8", "flags": "hypervisor"}
    assert provenance.cpu_identity(cpu, "aarch64") == (None, None, None, None)


def test_the_tick_is_recorded_only_from_the_kernels_configuration(tmp_path: Path) -> None:
    from edgeprof.measure import tick

    config = tmp_path / "config"
    config.write_text("CONFIG_HZ_250=y\nCONFIG_HZ=250\n")
    assert tick.configured_hz([tmp_path / "missing", config]) == 250
    assert tick.configured_hz([tmp_path / "missing"]) is None


def test_this_processs_python_is_recorded_as_edgeprofs() -> None:
    import platform

    python = provenance.edgeprof_origin().python
    assert python == f"{platform.python_implementation()} {platform.python_version()}"


def test_a_hosts_new_keys_read_back_and_an_older_host_reads_them_as_none() -> None:
    from edgeprof.model import HostInfo

    host = HostInfo("6.18", 2, "AMD EPYC", "vm", tick_hz=250, cpu_family=26, cpu_model_id=2,
                    cpu_stepping=1, virtual=True)  # fmt: skip
    d = make_result(host=host).to_dict()
    assert d["host"]["tick_hz"] == 250 and d["host"]["virtual"] is True
    assert RunResult.from_dict(d).host == host
    for key in ("tick_hz", "cpu_family", "cpu_model_id", "cpu_stepping", "virtual"):
        del d["host"][key]
    assert RunResult.from_dict(d).host == HostInfo("6.18", 2, "AMD EPYC", "vm")


def test_a_containers_unset_thread_counts_are_not_read_from_this_host() -> None:
    from edgeprof.measure.limits import thread_env
    from edgeprof.measure.thread_vars import inherited_threads, threads_given
    from edgeprof.model import Limits

    sized = {"OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"}
    assert threads_given(sized, None) == {**sized, "OPENBLAS_NUM_THREADS": None}
    assert threads_given({}, {"OPENBLAS_NUM_THREADS": "4"})["OPENBLAS_NUM_THREADS"] == "4"
    pinned = Limits(cpuset="0-2")
    one = {"OMP_NUM_THREADS": "1"}
    given = threads_given(thread_env(pinned, one, {}), one)
    (odd,) = inherited_threads(pinned, one, {}, given)
    assert odd == (
        "OMP_NUM_THREADS=1 was inherited from edgeprof's environment and kept, not the 3 "
        "edgeprof sizes to its 3 pinned CPUs: the workload was given OMP_NUM_THREADS=1, "
        "OPENBLAS_NUM_THREADS=1, MKL_NUM_THREADS=1 (edgeprof sets the ones not given to the "
        "count given, so that the pools agree); unset it, or pass -E with the count meant"
    )
    assert inherited_threads(pinned, one, one, given) == []
    assert inherited_threads(pinned, {"OMP_NUM_THREADS": "3"}, {}, given) == []
    # A device's share is named as the user gave it, not as an option never typed.
    board = Limits(cpus=0.5)
    (odd,) = inherited_threads(board, {"OMP_NUM_THREADS": "2"}, {}, given, "tinyboard")
    assert "kept, not the 1 edgeprof sizes to --device tinyboard's 0.5 CPUs: the" in odd
    replaced = ("--cpus",)
    (odd,) = inherited_threads(board, {"OMP_NUM_THREADS": "2"}, {}, given, "tinyboard", replaced)
    assert "kept, not the 1 edgeprof sizes to --cpus 0.5: the workload" in odd


def test_a_devices_inherited_thread_count_is_held_to_its_cores() -> None:
    """A 4-core device at speed 0.25 (1 CPU): its pools are 4, as edgeprof sizes them; an
    inherited ``OMP_NUM_THREADS=4`` had been warned of as "not the 1 edgeprof sizes to
    --device quad25's 1 CPUs", and ``=1``, a pool of a quarter of the device, not at all."""
    from edgeprof.measure.thread_vars import inherited_threads
    from edgeprof.model import Limits

    quad = Limits(cpus=1.0)
    given = {"OMP_NUM_THREADS": "4", "MKL_NUM_THREADS": "4", "OPENBLAS_NUM_THREADS": "4"}
    four, one = {"OMP_NUM_THREADS": "4"}, {"OMP_NUM_THREADS": "1"}
    assert inherited_threads(quad, four, {}, given, "quad25", (), 4) == []
    (odd,) = inherited_threads(quad, one, {}, given, "quad25", (), 4)
    assert "OMP_NUM_THREADS=1 was inherited from edgeprof's environment and kept, not the 4 " \
        "edgeprof sizes to --device quad25's 4 cores: the workload" in odd
