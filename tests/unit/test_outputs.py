"""edgeprof.outfiles: outputs never written through a link, handed to the sudo user.

Runs as any user: the links here are the test's own, which the walk follows; another user's
link is tested on the real kernel as root (tests/host/test_safe_outputs.py)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from edgeprof import outfiles
from edgeprof.errors import ConfigError, UnsafeOutput
from edgeprof.storage import append_locked, prepare_out_dir, write_output


def test_write_atomic_creates_and_replaces_a_plain_file(tmp_path: Path) -> None:
    f = tmp_path / "r.json"
    outfiles.write_atomic(f, "one")
    outfiles.write_atomic(f, b"two")
    assert f.read_text() == "two" and [p.name for p in tmp_path.iterdir()] == ["r.json"]


@pytest.mark.parametrize("kind", ["symlink", "hardlink", "fifo", "dangling"])
def test_a_planted_name_is_refused_and_its_target_kept(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "target"
    target.write_text("precious")
    f = tmp_path / "samples.csv"
    if kind == "symlink":
        f.symlink_to(target)
    elif kind == "dangling":
        f.symlink_to(tmp_path / "not-yet")
    elif kind == "hardlink":
        os.link(target, f)
    else:
        os.mkfifo(f)
    writes: list[Callable[[], None]] = [
        lambda: outfiles.write_atomic(f, "x"),
        lambda: os.close(outfiles.open_file(f)),
        lambda: append_locked(f, "x"),
        lambda: write_output(f, "x"),
        lambda: outfiles.check_target(f),
    ]
    for write in writes:
        with pytest.raises(UnsafeOutput, match=r"samples\.csv: it"):
            write()
    assert target.read_text() == "precious" and not (tmp_path / "not-yet").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["samples.csv", "target"]


def test_own_directory_links_are_followed_and_missing_directories_made(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "rel").symlink_to("real")  # relative
    (tmp_path / "abs").symlink_to(real)  # absolute
    outfiles.make_dirs(tmp_path / "rel" / "a" / "b")
    outfiles.write_atomic(tmp_path / "abs" / "a" / "b" / "f", "x")
    assert (real / "a" / "b" / "f").read_text() == "x"
    assert prepare_out_dir(tmp_path / "abs" / "c", ("result.json",)) == tmp_path / "abs" / "c"
    assert list((real / "c").iterdir()) == []  # the probe is gone


def test_a_link_loop_and_a_file_on_the_way_are_one_line(tmp_path: Path) -> None:
    (tmp_path / "loop").symlink_to("loop")
    (tmp_path / "file").write_text("")
    for parent in ("loop", "file"):
        with pytest.raises(ConfigError) as err:
            prepare_out_dir(tmp_path / parent / "out")
        assert "\n" not in str(err.value) and "cannot write to output directory" in str(err.value)
        with pytest.raises(ConfigError, match="cannot write"):
            outfiles.check_target(tmp_path / parent / "x.md")
    outfiles.check_target(tmp_path / "missing" / "x.md")  # made when written: not an error


def test_write_atomic_leaves_no_temporary_on_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(ConfigError, match=r"cannot write .*f\.md: No space left on device"):
        write_output(tmp_path / "f.md", "x")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("env", "euid", "ids"),
    [
        ({"SUDO_UID": "1000", "SUDO_GID": "1001"}, 0, (1000, 1001)),
        ({"SUDO_UID": "1000", "SUDO_GID": "1001"}, 1000, None),  # not root: nothing to hand
        ({"SUDO_UID": "0", "SUDO_GID": "0"}, 0, None),  # sudo from root
        ({}, 0, None),
    ],
)
def test_sudo_ids(env: dict[str, str], euid: int, ids: tuple[int, int] | None) -> None:
    assert outfiles.sudo_ids(env, euid) == ids


@pytest.mark.parametrize("uid", ["-1", "10a", "١٠٠٠", "9" * 30, " 1000", "4294967295"])
def test_a_malformed_sudo_uid_is_an_error(uid: str) -> None:
    with pytest.raises(ConfigError, match=r"not user and group ids \(0 to 4294967294\)"):
        outfiles.sudo_ids({"SUDO_UID": uid}, 0)
    with pytest.raises(ConfigError, match="not user and group ids"):  # the group's the same
        outfiles.sudo_ids({"SUDO_UID": "1000", "SUDO_GID": uid}, 0)


def test_keep_root_hands_nothing_over(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(outfiles, "sudo_ids", lambda: (1000, 1000))
    assert outfiles.owner() == (1000, 1000)
    outfiles.keep_root()
    try:
        assert outfiles.owner() is None
    finally:
        outfiles.keep_root(False)


def test_nothing_is_made_under_the_kernels_trees(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--out /sys/fs/cgroup/cpu/edgeprof-evil/a/b`` had made three cgroups before its
    ``result.json`` was refused: the tree is refused before any ``mkdir`` (a stand-in for
    /sys here, as making a directory in the real one would make a cgroup)."""
    kernel = tmp_path.resolve() / "sys"
    kernel.mkdir()
    monkeypatch.setattr(outfiles, "KERNEL_TREES", (kernel,))
    out = kernel / "fs" / "a" / "b"
    with pytest.raises(ConfigError) as err:
        prepare_out_dir(out, ("result.json",))
    assert str(err.value) == f"cannot write {out}: {kernel} holds the kernel's files, not outputs"
    assert list(kernel.iterdir()) == []
    (tmp_path / "link").symlink_to(kernel)  # nor through a link into it
    with pytest.raises(ConfigError, match="holds the kernel's files"):
        outfiles.make_dirs(tmp_path / "link" / "c")
    with pytest.raises(ConfigError, match="holds the kernel's files"):
        outfiles.open_file(tmp_path / "link" / "f", append=True)
    assert list(kernel.iterdir()) == []


def test_the_probe_leaves_a_users_file_of_the_old_probes_name(tmp_path: Path) -> None:
    """The write probe had been ``.edgeprof-probe-<pid>``, opened without ``O_EXCL`` and
    then removed: a user's file of that name was deleted."""
    mine = tmp_path / f".edgeprof-probe-{os.getpid()}"
    mine.write_text("precious")
    prepare_out_dir(tmp_path)
    outfiles.probe(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == [mine.name]
    assert mine.read_text() == "precious"


def test_append_locked_refuses_the_kernels_files_and_says_a_full_disk_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As root, ``$GITHUB_STEP_SUMMARY=/proc/sys/kernel/hostname`` had renamed the host;
    ``/proc/self/stat`` (EINVAL) and a full disk (ENOSPC) had been tracebacks, exit 1.
    /proc/self/stat refuses writes, so trying it here changes nothing."""
    with pytest.raises(ConfigError) as err:
        append_locked(Path("/proc/self/stat"), "x")
    kernel = "/proc holds the kernel's files, not outputs"
    assert str(err.value) == f"cannot write /proc/self/stat: {kernel}"
    f = tmp_path / "s.md"

    def full(fd: int, data: bytes) -> int:
        raise OSError(28, os.strerror(28))

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(ConfigError) as err:
        append_locked(f, "## run\n")
    monkeypatch.undo()
    assert str(err.value) == f"cannot write {f}: No space left on device"
