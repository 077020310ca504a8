"""storage.made_ids/remove_made: a run removes the empty directories it made, and only
those (a library user's empty directory, made at the path after the run's had been moved
away, had been removed by the run that could not write there)."""

from __future__ import annotations

from pathlib import Path

from edgeprof.storage import made_ids, missing_dirs, remove_made


def test_the_directories_made_are_removed_while_empty_and_still_the_ones_made(
    tmp_path: Path,
) -> None:
    out = tmp_path / "a" / "b"
    missing = missing_dirs(out)
    out.mkdir(parents=True)
    made = made_ids(missing)
    assert [p for p, _, _ in made] == [out, out.parent]
    remove_made(made)
    assert not (tmp_path / "a").exists()
    # Moved away and another made in its place: the other stays, and so does the moved one.
    missing = missing_dirs(out)
    out.mkdir(parents=True)
    made = made_ids(missing)
    out.rename(tmp_path / "moved")
    out.mkdir()
    remove_made(made)
    assert out.is_dir() and (tmp_path / "moved").is_dir()
    # One that holds a file is kept.
    (tmp_path / "moved").rename(tmp_path / "kept")
    out.rmdir()
    (tmp_path / "kept" / "f").write_text("x")
    remove_made([(tmp_path / "kept", *_id(tmp_path / "kept"))])
    assert (tmp_path / "kept" / "f").exists()


def _id(p: Path) -> tuple[int, int]:
    st = p.lstat()
    return st.st_dev, st.st_ino
