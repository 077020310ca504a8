"""Reading results back: result.json, sweep.json, JSON lists and directories."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from edgeprof.errors import ConfigError
from edgeprof.model import GpuStats, Limits
from edgeprof.resultfiles import SWEEP_SCHEMA, load_runs
from edgeprof.storage import write_result

from .conftest import make_result


def test_limits_describe_is_a_stable_label() -> None:
    assert Limits().describe() == "none"
    assert Limits(cpus="1.5", cpuset="0-1", memory="512m").describe() == (
        "cpus=1.5, cpuset=0-1, memory=512.0MiB"
    )


def test_load_runs_reads_every_form(tmp_path: Path) -> None:
    a, b, c = (make_result(name=n) for n in "abc")
    write_result(tmp_path / "one.json", a)
    (tmp_path / "list.json").write_text(json.dumps([b.to_dict(), c.to_dict()]))
    sweep = tmp_path / "sw" / "sweep.json"
    sweep.parent.mkdir()
    sweep.write_text(json.dumps({"schema": SWEEP_SCHEMA, "runs": [c.to_dict()], "cells": []}))
    (tmp_path / "sw" / "x").mkdir()
    write_result(tmp_path / "sw" / "x" / "result.json", a)  # read through sweep.json instead
    nested = tmp_path / "runs" / "m" / "1"
    nested.mkdir(parents=True)
    write_result(nested / "result.json", b)
    warm = tmp_path / "runs" / "m" / "warmup-1"  # a warm-up (a fit's): no measured run
    warm.mkdir()
    write_result(warm / "result.json", a)
    paths = [tmp_path / "one.json", tmp_path / "list.json", sweep.parent, tmp_path / "runs"]
    got = load_runs(paths)
    assert [r.name for r in got] == ["a", "b", "c", "c", "b"]
    assert got[0] == a


def test_a_runs_files_are_found_from_where_its_result_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sweep run with ``--out sweep`` in one directory, read from another after a move:
    its samples.csv and gpu.csv are found under the files read, not at the recorded path
    relative to the directory of the read (where another run's files may lie)."""
    run_dir = tmp_path / "moved" / "sweep" / "2" / "1"
    run_dir.mkdir(parents=True)
    for name in ("samples.csv", "gpu.csv"):
        (run_dir / name).write_text("t_s\n")
    r = make_result(name="2")
    gpu = GpuStats(
        driver=None,
        selection=None,
        devices=(),
        memory_peak_bytes=None,
        energy_j=None,
        samples=0,
        interval_s=0.1,
        path="sweep/2/1/gpu.csv",
    )
    r = replace(r, samples=replace(r.samples, path="sweep/2/1/samples.csv"), gpu=gpu)
    write_result(run_dir / "result.json", r)
    sweep = tmp_path / "moved" / "sweep" / "sweep.json"
    sweep.write_text(json.dumps({"schema": SWEEP_SCHEMA, "runs": [r.to_dict()], "cells": []}))
    decoy = tmp_path / "elsewhere" / "sweep" / "2" / "1"
    decoy.mkdir(parents=True)
    (decoy / "samples.csv").write_text("t_s\n")  # another run's, at the recorded path
    monkeypatch.chdir(tmp_path / "elsewhere")
    for read in (sweep.parent, run_dir / "result.json", tmp_path / "moved"):
        [got] = load_runs([read])
        assert got.samples.path is not None and got.gpu is not None and got.gpu.path
        assert Path(got.samples.path).resolve() == run_dir / "samples.csv", read
        assert Path(got.gpu.path).resolve() == run_dir / "gpu.csv", read
    # An absolute path recorded before the move; a run whose files are gone keeps its own.
    moved = replace(r, samples=replace(r.samples, path="/old/sweep/2/1/samples.csv"))
    gone = replace(r, name="3", samples=replace(r.samples, path="sweep/3/1/samples.csv"))
    sweep.write_text(
        json.dumps({"schema": SWEEP_SCHEMA, "runs": [moved.to_dict(), gone.to_dict()]})
    )
    a, b = load_runs([sweep])
    assert a.samples.path == str(run_dir / "samples.csv")
    # Gone: named from the sweep.json it is recorded relative to, never from the reader's
    # working directory (a decoy samples.csv there had been taken for it).
    assert b.samples.path == str(sweep.parent / "sweep/3/1/samples.csv")
    assert not Path(b.samples.path).exists()


@pytest.mark.parametrize("how", ["absolute", "climbing", "link", "linked-dir"])
def test_a_results_files_are_read_only_inside_its_directory(tmp_path: Path, how: str) -> None:
    """``samples.path: /etc/shadow``, ``../../etc/passwd`` or a ``samples.csv`` linking to a
    root-only file had been read by ``report`` and its second line quoted into the HTML (a
    security review's): a file outside the result's directory is not read, and the run says
    so among its warnings."""
    secret = tmp_path / "secret"
    secret.write_text("header\nSECRET-TOKEN\n")
    art = tmp_path / "art"
    art.mkdir()
    recorded = {"absolute": str(secret), "climbing": "../secret"}.get(how, "samples.csv")
    if how == "link":
        (art / "samples.csv").symlink_to(secret)
    elif how == "linked-dir":
        (art / "d").symlink_to(tmp_path)
        recorded = "d/secret"
    r = make_result(name="a")
    r = replace(r, samples=replace(r.samples, path=recorded))
    (art / "result.json").write_text(json.dumps(r.to_dict()))
    sweep = tmp_path / "sw" / "sweep.json"
    sweep.parent.mkdir()
    sweep.write_text(json.dumps({"schema": SWEEP_SCHEMA, "runs": [r.to_dict()]}))
    if how == "link":
        (sweep.parent / "samples.csv").symlink_to(secret)
    elif how == "linked-dir":
        (sweep.parent / "d").symlink_to(tmp_path)
    for read, base in ((art / "result.json", art), (sweep, sweep.parent)):
        [got] = load_runs([read])
        assert got.samples.path is None or not Path(got.samples.path).exists(), (how, read)
        found = secret if how == "absolute" else base / recorded
        assert got.warnings == (
            *r.warnings,
            f"{found} leads outside {base}, the directory of the file that names it: not "
            "read (edgeprof reads a result's files only inside its directory)",
        )


def test_a_merged_sweeps_shard_must_be_a_sweep_beside_it(tmp_path: Path) -> None:
    """A merged sweep's shard recorded as ``..`` (or any directory without a ``sweep.json``)
    named a directory whose files were then read as its runs' samples; a real shard beside
    it (``merge p1 p2 --out mg``) is still found."""
    (tmp_path / "secret").write_text("t_s\n1\n")
    (tmp_path / "sweep.json").write_text("{}")  # "../sweep.json" is a sweep, but not beside
    p1 = tmp_path / "p1" / "2" / "1"
    p1.mkdir(parents=True)
    (p1 / "samples.csv").write_text("t_s\n1\n")
    (tmp_path / "p1" / "sweep.json").write_text("{}")
    mg = tmp_path / "mg"
    mg.mkdir()
    r = make_result(name="a")
    mine = replace(r, samples=replace(r.samples, path="../p1/2/1/samples.csv"))
    theirs = replace(r, samples=replace(r.samples, path="/somewhere/secret"))
    shards = [{"path": "../p1/sweep.json"}, {"path": "../sweep.json"}, {"path": "/x/sweep.json"}]
    doc = {"schema": SWEEP_SCHEMA, "runs": [mine.to_dict(), theirs.to_dict()], "shards": shards}
    (mg / "sweep.json").write_text(json.dumps(doc))
    a, b = load_runs([mg])
    assert a.samples.path == str(mg / "../p1/2/1/samples.csv")
    assert b.samples.path == "/somewhere/secret" and not Path(b.samples.path).exists()


@pytest.mark.parametrize(
    "text", ["{", "[1]", '{"schema": "edgeprof-sweep/1", "runs": 3}', '{"schema_version": 1}']
)
def test_load_runs_refuses_what_is_not_a_result(tmp_path: Path, text: str) -> None:
    p = tmp_path / "bad.json"
    p.write_text(text)
    with pytest.raises(ConfigError, match=r"bad\.json"):
        load_runs([p])
    with pytest.raises(ConfigError, match=r"no result\.json"):
        (tmp_path / "empty").mkdir()
        load_runs([tmp_path / "empty"])


def test_append_locked_never_interleaves(tmp_path: Path) -> None:
    import multiprocessing

    from edgeprof.storage import append_locked

    path = tmp_path / "summary.txt"
    line = "x" * 70_000 + "\n"  # larger than a pipe buffer: one write() may be partial

    def writer(c: str) -> None:
        for _ in range(20):
            append_locked(path, line.replace("x", c))

    procs = [multiprocessing.Process(target=writer, args=(c,)) for c in "abcd"]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    lines = path.read_text().splitlines()
    assert len(lines) == 80 and all(len(set(ln)) == 1 for ln in lines)


@pytest.mark.parametrize("schema", ["edgeprof-sweep/2", 7])
def test_a_sweep_of_another_schema_is_named_as_a_sweep(tmp_path: Path, schema: object) -> None:
    """It had read "is not an edgeprof result: unsupported result schema_version None"."""
    runs = [make_result().to_dict()]
    (tmp_path / "sweep.json").write_text(json.dumps({"schema": schema, "runs": runs}))
    want = f"unsupported sweep schema {schema!r} \\(this edgeprof reads {SWEEP_SCHEMA}\\)$"
    for given in (tmp_path, tmp_path / "sweep.json"):
        with pytest.raises(ConfigError, match=want):
            load_runs([given])


def test_a_gone_samples_file_is_never_one_in_the_readers_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """result.json names its samples.csv from beside it; with that file gone, a bare
    ``samples.csv`` had been read from the working directory (a reviewer's decoy there)."""
    out = tmp_path / "out"
    out.mkdir()
    r = make_result(name="m")
    here = replace(r, samples=replace(r.samples, path=str(out / "samples.csv")))
    write_result(out / "result.json", here)
    assert json.loads((out / "result.json").read_text())["samples"]["path"] == "samples.csv"
    monkeypatch.chdir(tmp_path)
    (tmp_path / "samples.csv").write_text("t_s\n0\n")  # the decoy
    (run,) = load_runs([Path("out")])
    assert run.samples.path is not None and Path(run.samples.path) == Path("out/samples.csv")
