"""Reading results back: result.json, sweep.json, JSON lists and directories."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

import edgeprof
from edgeprof.errors import ConfigError
from edgeprof.model import GpuStats, Limits, Sample
from edgeprof.model.gpu import GPU_CSV_COLUMNS, GPU_SAMPLE_COLUMNS
from edgeprof.resultfiles import SWEEP_SCHEMA, load_runs
from edgeprof.samplefiles import _refused
from edgeprof.storage import write_result

from .conftest import make_result


def test_limits_describe_is_a_stable_label() -> None:
    assert Limits().describe() == "none"
    assert Limits(cpus="1.5", cpuset="0-1", memory="512m").describe() == (
        "cpus=1.5, cpuset=0-1, memory=512.0MiB"
    )


def test_load_runs_reads_every_form(tmp_path: Path) -> None:
    a, b, c, c2, b2 = (make_result(name=n, wall_s=1.0 + i) for i, n in enumerate("abccb"))
    write_result(tmp_path / "one.json", a)
    (tmp_path / "list.json").write_text(json.dumps([b.to_dict(), c.to_dict()]))
    sweep = tmp_path / "sw" / "sweep.json"
    sweep.parent.mkdir()
    sweep.write_text(json.dumps({"schema": SWEEP_SCHEMA, "runs": [c2.to_dict()], "cells": []}))
    (tmp_path / "sw" / "x").mkdir()
    write_result(tmp_path / "sw" / "x" / "result.json", a)  # read through sweep.json instead
    nested = tmp_path / "runs" / "m" / "1"
    nested.mkdir(parents=True)
    write_result(nested / "result.json", b2)
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


SAMPLES_HEADER = ",".join(Sample.columns()) + "\r\n"
"""What edgeprof writes as ``samples.csv``'s first line."""


def _refusal(path: Path, where: str, why: str, name: str = "samples.csv") -> str:
    return (
        f"{path} not read: {where} (where the result naming it is), edgeprof reads only its "
        f"own {name}, and this one {why}"
    )


@pytest.mark.parametrize(
    "how", ["absolute", "climbing", "link", "linked-dir", "header", "hard-link"]
)
def test_a_file_a_result_names_elsewhere_is_read_only_if_it_is_edgeprofs(
    tmp_path: Path, how: str
) -> None:
    """``samples.path: /etc/shadow``, ``../../etc/passwd`` or a ``samples.csv`` linking to a
    root-only file had been read by ``report`` and its second line quoted into the HTML (a
    security review's): a file not plainly in the result's directory is read only if it is
    named ``samples.csv``, is a regular file and starts with edgeprof's header; otherwise
    the run says why among its warnings."""
    secret = tmp_path / "secret"
    secret.write_text("header\nSECRET-TOKEN\n")
    theirs = tmp_path / "elsewhere" / "samples.csv"  # edgeprof's name, not its contents
    theirs.parent.mkdir()
    theirs.write_text("t_s,secret\n1,2\n")
    art, sw = tmp_path / "art", tmp_path / "sw"
    recorded = {
        "absolute": str(secret),
        "climbing": "../secret",
        "linked-dir": "d/secret",
        "header": "../elsewhere/samples.csv",
    }.get(how, "samples.csv")
    r = make_result(name="a")
    r = replace(r, samples=replace(r.samples, path=recorded))
    for d in (art, sw):
        d.mkdir()
        if how == "link":
            (d / "samples.csv").symlink_to(secret)
        elif how == "linked-dir":
            (d / "d").symlink_to(tmp_path)
        elif how == "hard-link":  # as a hard link to a root-only file would be
            os.link(secret, d / "samples.csv")
    (art / "result.json").write_text(json.dumps(r.to_dict()))
    (sw / "sweep.json").write_text(json.dumps({"schema": SWEEP_SCHEMA, "runs": [r.to_dict()]}))
    header = "does not start with the header edgeprof writes in samples.csv"
    why = header if how in ("header", "hard-link") else "is not named samples.csv"
    for read, base in ((art / "result.json", art), (sw / "sweep.json", sw)):
        [got] = load_runs([read])
        assert got.samples.path is None or not Path(got.samples.path).exists(), (how, read)
        found = secret if how == "absolute" else base / recorded
        where = f"hard-linked in {base}" if how == "hard-link" else f"outside {base}"
        assert got.warnings == (*r.warnings, _refusal(found, where, why)), how


def test_a_fifo_in_place_of_edgeprofs_file_is_refused_without_waiting(tmp_path: Path) -> None:
    """A FIFO is never a candidate (not a file), but one swapped in after that check would
    have held the open of its header forever: it is opened without waiting, and refused."""
    (tmp_path / "elsewhere").mkdir()
    fifo = tmp_path / "elsewhere" / "samples.csv"
    os.mkfifo(fifo)
    assert _refused(fifo, "samples.csv", tmp_path / "art") == _refusal(
        fifo, f"outside {tmp_path / 'art'}", "is not a regular file"
    ).removeprefix(f"{fifo} ")


def test_a_refusal_names_the_current_directory_in_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``report r.json`` read from where it lies: "outside ., the directory…" was awkward
    (a verifier's)."""
    r = make_result(name="a")
    r = replace(r, samples=replace(r.samples, path="/etc/hostname"))
    (tmp_path / "r.json").write_text(json.dumps(r.to_dict()))
    monkeypatch.chdir(tmp_path)
    [got] = load_runs([Path("r.json")])
    assert got.warnings[-1] == _refusal(
        Path("/etc/hostname"), "outside the current directory", "is not named samples.csv"
    )


@pytest.mark.parametrize("where", ["above", "absolute", "linked"])
@pytest.mark.parametrize("ending", ["\r\n", "\n"])
def test_edgeprofs_own_files_are_read_wherever_a_result_names_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str, ending: str
) -> None:
    """``cd sub && run --json --out ../jx > r.json`` (results.md: ``run --json`` names its
    files from where it ran), or ``--out /abs/jy``: ``report r.json`` had left the run's
    samples unread, "../jx/samples.csv leads outside ." (a verifier's).  An edgeprof
    ``samples.csv`` (with the GPU columns or without; its line end rewritten by a copy) and
    ``gpu.csv`` are read wherever they are, through a link too."""
    sub, jx = tmp_path / "sub", tmp_path / "jx"
    sub.mkdir()
    jx.mkdir()
    gpu_header = ",".join([*Sample.columns(), *GPU_SAMPLE_COLUMNS])
    (jx / "samples.csv").write_text(gpu_header + ending + "0.1" + "," * 13 + ending)
    (jx / "gpu.csv").write_text(",".join(GPU_CSV_COLUMNS) + ending)
    r = make_result(name="a")
    gpu = GpuStats(None, None, (), None, None, 0, 0.1, path="../jx/gpu.csv")
    r = replace(r, samples=replace(r.samples, path="../jx/samples.csv"), gpu=gpu)
    write_result(jx / "result.json", r)  # its own directory: this run's
    if where == "absolute":
        r = replace(r, samples=replace(r.samples, path=str(jx / "samples.csv")))
    elif where == "linked":  # a samples.csv beside it, linking to the run's
        (sub / "samples.csv").symlink_to(jx / "samples.csv")
        r = replace(r, samples=replace(r.samples, path="samples.csv"))
    (sub / "r.json").write_text(json.dumps(r.to_dict()))
    monkeypatch.chdir(sub)
    [got] = load_runs([Path("r.json")])
    want = {"above": "../jx/samples.csv", "absolute": str(jx / "samples.csv")}
    assert got.samples.path == want.get(where, "samples.csv")
    assert got.gpu is not None and got.gpu.path == "../jx/gpu.csv"
    assert got.warnings == r.warnings


def test_a_merged_sweeps_parts_are_read_wherever_they_are(tmp_path: Path) -> None:
    """``merge shx/job1/part shx/job2/part --out results/merged/today``: its ``report`` had
    said "… leads outside results/merged/today …: not read" of each run and drawn no
    timeline (a verifier's).  A shard is any directory holding a ``sweep.json``; what is
    read there is edgeprof's (a shard recorded as ``..`` or ``/x`` names no file of
    anyone's that is read)."""
    (tmp_path / "secret").write_text("t_s\n1\n")  # not edgeprof's header
    (tmp_path / "sweep.json").write_text("{}")  # "../../../sweep.json": a sweep, far above
    part = tmp_path / "shx" / "job1" / "part"
    (part / "2" / "1").mkdir(parents=True)
    (part / "2" / "1" / "samples.csv").write_text(SAMPLES_HEADER + "0.1,,,,,,,,,\r\n")
    (part / "sweep.json").write_text("{}")
    mg = tmp_path / "results" / "merged" / "today"
    mg.mkdir(parents=True)
    r = make_result(name="a")
    mine = replace(r, samples=replace(r.samples, path="../../../shx/job1/part/2/1/samples.csv"))
    theirs = replace(r, samples=replace(r.samples, path="/somewhere/secret"))
    shards = [
        {"path": "../../../shx/job1/part/sweep.json"},
        {"path": "../../../sweep.json"},
        {"path": "/x/sweep.json"},
    ]
    doc = {"schema": SWEEP_SCHEMA, "runs": [mine.to_dict(), theirs.to_dict()], "shards": shards}
    (mg / "sweep.json").write_text(json.dumps(doc))
    a, b = load_runs([mg])
    assert a.samples.path == str(mg / "../../../shx/job1/part/2/1/samples.csv")
    assert a.warnings == r.warnings
    assert b.samples.path == "/somewhere/secret" and not Path(b.samples.path).exists()
    assert b.warnings == (
        *r.warnings,
        _refusal(mg / "../../../secret", f"outside {mg}", "is not named samples.csv"),
    )


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


def test_a_newer_edgeprofs_keys_are_read_past_in_every_part(tmp_path: Path) -> None:
    """Keys are only added within schema version 1, so an older edgeprof reads a newer one's
    file past the keys it does not know, in every part alike: a key added to ``cpu``,
    ``host``, ``io`` or ``samples`` had been "malformed: CpuStats.__init__() got an
    unexpected keyword argument 'new_counter'" (a tester's), where one in ``limits`` or
    ``memory`` read."""
    run = make_result()
    d = run.to_dict()
    for part in ("cpu", "host", "io", "samples", "memory", "limits"):
        d[part] = {**d[part], "new_counter": 1}
    d["new_top"] = {"x": 1}
    path = tmp_path / "result.json"
    path.write_text(json.dumps(d))
    (back,) = load_runs([path])
    assert back.cpu == run.cpu and back.host == run.host and back.io == run.io
    assert back.memory == run.memory and back.limits == run.limits
    assert back.samples.count == run.samples.count
    path.unlink()  # the suite checks every file a test leaves against the published schema


def test_a_bad_run_of_a_sweep_is_named_by_its_place(tmp_path: Path) -> None:
    """A refusal says which run of a sweep holds the bad key: the key alone had left a
    40-run file to search."""
    runs = [make_result().to_dict() for _ in range(3)]
    del runs[1]["wall_s"]
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps({"schema": SWEEP_SCHEMA, "runs": runs}))
    with pytest.raises(ConfigError) as err:
        load_runs([path])
    assert str(err.value) == f"{path} is not an edgeprof result (run 2 of 3): missing key 'wall_s'"
    path.unlink()


def test_json_that_is_no_result_is_said_to_be_none_in_one_line(tmp_path: Path) -> None:
    """``report edgeprof/result.schema.json`` had said "-18446744073709551616 is beyond any
    figure edgeprof reads (2**64)": its bounds were read as figures of a result."""
    schema = Path(edgeprof.__file__).parent / "result.schema.json"
    other = tmp_path / "other.json"
    other.write_text('{"a": 1}')
    for path in (schema, other):
        with pytest.raises(ConfigError) as raised:
            load_runs([path])
        assert str(raised.value) == (
            f"{path} is not an edgeprof result: it has no schema_version (a result's) nor "
            "runs (a sweep's)"
        )
    # A result's own figure past 2**64 is still that figure's error.
    huge = tmp_path / "huge.json"
    huge.write_text(json.dumps({**make_result().to_dict(), "x": 2**64}))
    with pytest.raises(ConfigError, match=r"18446744073709551616 is beyond any figure"):
        load_runs([huge])


def test_a_directorys_unreadable_files_are_skipped_with_why_only_where_asked(
    tmp_path: Path,
) -> None:
    """``report DIR`` (``skipped`` given) reads every result a directory holds past the
    broken and foreign ones, each named with its one line; without ``skipped`` (compare,
    calibrate, ``edgeprof.load``) the first is an error, as a file named by hand is."""
    for name in ("a", "c"):
        (tmp_path / name).mkdir()
        write_result(tmp_path / name / "result.json", make_result(name=name))
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "result.json").write_text("{")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "result.json").write_text('{"a": 1}')
    skipped: list[tuple[Path, str]] = []
    assert [r.name for r in load_runs([tmp_path], skipped)] == ["a", "c"]
    assert [(f.relative_to(tmp_path).as_posix(), why) for f, why in skipped] == [
        (
            "b/result.json",
            f"cannot read result {tmp_path}/b/result.json: not JSON (Expecting property name "
            "enclosed in double quotes at line 1, column 2)",
        ),
        (
            "d/result.json",
            f"{tmp_path}/d/result.json is not an edgeprof result: it has no schema_version (a "
            "result's) nor runs (a sweep's)",
        ),
    ]
    with pytest.raises(ConfigError, match=r"cannot read result .*/b/result\.json"):
        load_runs([tmp_path])
    with pytest.raises(ConfigError, match=r"/d/result\.json is not an edgeprof result"):
        load_runs([tmp_path / "d" / "result.json"], [])
    with pytest.raises(ConfigError, match=r"/d/result\.json is not an edgeprof result"):
        load_runs([tmp_path / "d"], [])  # the directory's own file: as if named


def test_a_json_message_ending_in_at_says_it_once(tmp_path: Path) -> None:
    """A tester's truncated result.json with a newline inside a string had read "Invalid
    control character at at line 1, column 27"."""
    (tmp_path / "result.json").write_text('{"schema_version": 1, "nam\n')
    with pytest.raises(ConfigError) as e:
        load_runs([tmp_path], [])
    assert str(e.value).endswith(": not JSON (Invalid control character at line 1, column 27)")
