"""``--shard I/N`` and ``edgeprof merge``: the rounds each shard runs, a split sweep merged
back into the unsplit one, every refusal, and what rankings and ``compare`` say of results
from different hosts."""

from __future__ import annotations

import csv
import dataclasses
import json
import sys
from pathlib import Path

import pytest

from edgeprof.analysis.compare import summarize_cells
from edgeprof.analysis.hosts import mixed_hosts_note, resumed_hosts_note, shard_notes
from edgeprof.analysis.regression import compare_results
from edgeprof.cli import main
from edgeprof.errors import ConfigError
from edgeprof.model import HostInfo, RunResult
from edgeprof.model.origin import EdgeprofOrigin
from edgeprof.report.comparison import ranking_tables
from edgeprof.resultfiles import load_runs
from edgeprof.sweeps.labels import limit_settings
from edgeprof.sweeps.merge import merge_shards
from edgeprof.sweeps.plan import SweepPlan
from edgeprof.sweeps.sweep import run_sweep
from tests.fakes import FakeBackend, linear
from tests.unit.conftest import make_result

PLAN = SweepPlan(
    ("true",), models=("m1", "m2"), limits=limit_settings(["1,2"]), repeat=5, warmup=1
)


def _sweep(out: Path, shard: tuple[int, int] | None = None) -> None:
    plan = dataclasses.replace(PLAN, shard=shard)
    run_sweep(plan, backend=FakeBackend(linear()), out=out, profile_options={"interval": 0.01})


def _cells(path: Path) -> list[tuple[str, str, int]]:
    data = json.loads((path / "sweep.json").read_text())
    return [(c["label"], c["limits"], c["runs"]) for c in data["cells"]]


def _csv_rows(path: Path) -> list[dict[str, str]]:
    with (path / "runs.csv").open() as f:
        return list(csv.DictReader(f))


def test_a_shard_runs_its_rounds_and_every_warmup() -> None:
    plan = dataclasses.replace(PLAN, shard=(2, 3))
    assert plan.rounds() == [2, 5] and not plan.is_single
    steps = plan.steps()
    assert [(s.round, s.warmup) for s in steps][::4] == [(1, True), (2, False), (5, False)]
    assert len(steps) == 12  # 1 warm-up round and 2 measured, 4 cells each


def test_three_shards_merged_equal_the_unsplit_sweep(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    _sweep(tmp_path / "whole")
    for i in (1, 2, 3):
        _sweep(tmp_path / f"s{i}", (i, 3))
    shard = json.loads((tmp_path / "s3" / "sweep.json").read_text())["shard"]
    assert shard == {"index": 3, "count": 3, "rounds": [3]}
    capfd.readouterr()
    shards = [str(tmp_path / f"s{i}") for i in (3, 1, 2)]  # any order
    assert main(["merge", *shards, "--out", str(tmp_path / "merged")]) == 0
    out, err = capfd.readouterr()
    # What was merged and written is said on stderr, as run and report say theirs; stdout
    # holds the tables alone (`merge > tables.txt` had the status line among them).
    merged_dir = tmp_path / "merged"
    assert err.splitlines() == [
        f"edgeprof: merged 3 shards (20 runs) into {merged_dir}",
        f"edgeprof: wrote {merged_dir}/ (sweep.json, runs.csv, cells.csv, report.md)",
    ]
    assert "merged" not in out and "wrote" not in out
    assert out.startswith("Final Usage Stats\n")  # the tables first
    assert _cells(tmp_path / "merged") == _cells(tmp_path / "whole")
    whole = json.loads((tmp_path / "whole" / "sweep.json").read_text())
    merged = json.loads((tmp_path / "merged" / "sweep.json").read_text())
    # The merge's own command line (main() was given its words; the process's are pytest's).
    part = json.loads((tmp_path / "s1" / "sweep.json").read_text())
    assert merged["argv"] == sys.argv == part["argv"]
    assert [(r["name"], r["limits"]["cpus"]) for r in merged["runs"]] == [
        (r["name"], r["limits"]["cpus"]) for r in whole["runs"]
    ]
    assert {k: merged[k] for k in ("command", "models", "limits", "repeat", "warmup")} == {
        k: whole[k] for k in ("command", "models", "limits", "repeat", "warmup")
    }
    assert [s["rounds"] for s in merged["shards"]] == [[1, 4], [2, 5], [3]]
    assert len(merged["warmup_runs"]) == 3 * 4  # each shard warmed every cell up
    # Every file named from the merged sweep.json's directory, as a sweep's are (as each
    # shard named them, `m1/cpus=1/1/samples.csv` named nothing from there).
    assert [s["path"] for s in merged["shards"]] == [f"../s{i}/sweep.json" for i in (1, 2, 3)]
    named = [r["samples"]["path"] for r in merged["runs"] + merged["warmup_runs"]]
    assert named[0] == "../s1/m1/cpus=1/1/samples.csv"
    assert all((merged_dir / p).is_file() for p in named), named
    assert len(set(named)) == len(named) == 20 + 12
    for name in ("runs.csv", "cells.csv", "report.md"):
        assert (tmp_path / "merged" / name).is_file()
    # runs.csv in the whole sweep's order (by cell, then round: merge's had been round
    # order), each row tied to its directory in its shard.
    rows = _csv_rows(tmp_path / "merged")
    assert [(r["label"], r["limits"], r["run"]) for r in rows] == [
        (m, s, str(k)) for s in ("cpus=1", "cpus=2") for m in ("m1", "m2") for k in range(1, 6)
    ]
    assert [r["dir"] for r in rows[:5]] == [  # rounds 1 and 4 in s1, 2 and 5 in s2, 3 in s3
        f"../s{(k - 1) % 3 + 1}/m1/cpus=1/{k}" for k in range(1, 6)
    ]
    # The merged sweep is a sweep: report reads it (its rounds 1 … 5 in order).
    assert main(["report", str(tmp_path / "merged")]) == 0


def test_merge_checks_budgets_on_the_merged_sweep(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """The gate of a split sweep is the merge's: budgets on the merged cells' medians, the
    CI summary and JUnit files, exit 3 on a breach; a bad budget writes nothing."""
    for i in (1, 2):
        _sweep(tmp_path / f"s{i}", (i, 2))
    parts = [str(tmp_path / "s1"), str(tmp_path / "s2")]
    budgets = tmp_path / "budgets.yml"
    budgets.write_text("default:\n  peak_memory: 1t\n")
    ok = main(["merge", *parts, "--out", str(tmp_path / "ok"), "--budgets", str(budgets)])
    assert ok == 0
    assert "Budgets (" in capfd.readouterr().out
    junit = tmp_path / "gate.xml"
    # The fake backend spawns `true`: about 1 ms here, where a 1 ms budget lay inside the
    # runs' 95 % interval (inconclusive, not failed; a fresh clone's unit tier went red).
    # No process starts and exits in a microsecond.
    breach = main(
        ["merge", *parts, "--out", str(tmp_path / "bad"), "--max-wall", "1us",
         "--junit", str(junit), "--summary", str(tmp_path / "gate.md")]
    )
    out = capfd.readouterr().out
    assert breach == 3
    assert "Budgets (command line): 0 of 4 checks passed" in out  # 2 models x 2 settings
    assert junit.read_text().count("<failure") == 4
    assert "budget check" in (tmp_path / "gate.md").read_text()
    # Recorded in the merged sweep.json, and its report.md says the verdict: `report` of
    # the merge checks them again and exits 3, as the merge did.
    assert (tmp_path / "bad" / "report.md").read_text().startswith(
        "## edgeprof report\n\n**4 of 4 budget checks failed**"
    )
    assert main(["report", str(tmp_path / "bad")]) == 3
    assert (
        f"Budgets (command line, recorded in {tmp_path / 'bad' / 'sweep.json'}): 0 of 4 checks"
        in capfd.readouterr().out
    )
    assert main(["merge", *parts, "--out", str(tmp_path / "never"), "--max-wall", "soon"]) == 2
    assert not (tmp_path / "never").exists()


def test_merge_checks_the_budgets_its_shards_recorded(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Shards run with a budget each record it: merged without one given, the merge checks
    theirs (it had checked none, exit 0, on two parts that had each failed their gate)."""
    tight = {"source": "command line", "default": {}, "models": {}, "overrides": {"wall": 1e-6}}
    for i in (1, 2):
        _sweep(tmp_path / f"s{i}", (i, 2))
        doc = json.loads((tmp_path / f"s{i}" / "sweep.json").read_text())
        (tmp_path / f"s{i}" / "sweep.json").write_text(json.dumps({**doc, "budgets": tight}))
    parts = [str(tmp_path / "s1"), str(tmp_path / "s2")]
    assert main(["merge", *parts, "--out", str(tmp_path / "m")]) == 3
    out = capfd.readouterr().out
    assert "0 of 4 checks passed" in out and "recorded in" in out
    merged = json.loads((tmp_path / "m" / "sweep.json").read_text())
    assert merged["budgets"]["overrides"] == {"wall": 1e-6}
    assert main(["report", str(tmp_path / "m")]) == 3


def test_what_merge_refuses(tmp_path: Path) -> None:
    for i in (1, 2):
        _sweep(tmp_path / f"s{i}", (i, 2))
    _sweep(tmp_path / "whole")
    s1, s2 = tmp_path / "s1", tmp_path / "s2"
    with pytest.raises(ConfigError, match=r"shard 2/2 missing \(given: 1/2\)"):
        merge_shards([s1])
    with pytest.raises(ConfigError, match="shard 1/2 given twice"):
        merge_shards([s1, s1, s2])
    with pytest.raises(ConfigError, match="is a whole sweep, not a shard"):
        merge_shards([s1, tmp_path / "whole"])
    # A directory not there had been "no edgeprof sweep.json there" (a tester's).
    with pytest.raises(ConfigError) as e:
        merge_shards([s1, tmp_path / "nothere"])
    assert str(e.value) == f"{tmp_path / 'nothere'}: no such file or directory"
    with pytest.raises(ConfigError) as e:
        merge_shards([s1, tmp_path])
    assert str(e.value) == f"{tmp_path}: no edgeprof sweep.json there"
    data = json.loads((s2 / "sweep.json").read_text())
    other = tmp_path / "other"
    other.mkdir()
    (other / "sweep.json").write_text(json.dumps({**data, "models": ["m1", "m3"]}))
    # Each value beside its own shard: s1's models first, as s1 is named first.
    with pytest.raises(ConfigError, match="shards of different sweeps: their models differ") as e:
        merge_shards([s1, other])
    assert str(e.value).startswith(f"{s1 / 'sweep.json'} and {other / 'sweep.json'} ")
    assert str(e.value).endswith("their models differ (m1, m2; m1, m3)")  # text, no lists
    # The same models in another order, the limits, the number of parts: said as such.
    for changed, said in (
        ({"models": ["m2", "m1"]}, "their models are in another order (m1, m2; m2, m1)"),
        ({"limits": ["cpus=1", "cpus=3"]}, "their limits differ (cpus=1, cpus=2; cpus=1, cpus=3)"),
        ({"shard": {**data["shard"], "count": 3}},
         "their number of parts differs (--shard I/2, --shard I/3)"),
    ):  # fmt: skip
        (other / "sweep.json").write_text(json.dumps({**data, **changed}))
        with pytest.raises(ConfigError) as e:
            merge_shards([s1, other])
        assert str(e.value).endswith(f"are shards of different sweeps: {said}"), e.value
    (other / "sweep.json").write_text(json.dumps({**data, "runs": data["runs"][:-1]}))
    with pytest.raises(ConfigError, match=r"did not finish \(7 of 8 runs finished\): finish it "
                       r"with run --resume \(its own options and --out\) before merging$"):
        merge_shards([s1, other])
    (other / "sweep.json").write_text(json.dumps({**data, "interrupted": True}))
    with pytest.raises(ConfigError, match="did not finish"):
        merge_shards([s1, other])
    # Its last run interrupted: in the file, not finished ("8 of 8 runs" had been said).
    cut = [*data["runs"][:-1], {**data["runs"][-1], "termination": "interrupted"}]
    for interrupted in (True, False):
        (other / "sweep.json").write_text(
            json.dumps({**data, "runs": cut, "interrupted": interrupted})
        )
        # The interrupted one said apart, as report counts it among the runs made.
        with pytest.raises(ConfigError, match=r"did not finish \(7 of 8 runs finished, and 1 "
                           r"interrupted\)"):
            merge_shards([s1, other])
    # Sampled at another --interval: other figures (a short run's average memory).
    coarse = [{**r, "samples": {**r["samples"], "interval_s": 0.1}} for r in data["runs"]]
    (other / "sweep.json").write_text(json.dumps({**data, "runs": coarse}))
    with pytest.raises(ConfigError, match=r"their sampling intervals differ \(0.01 s, 0.1 s: --"):
        merge_shards([s1, other])


def test_merge_into_a_shard_of_its_own_is_refused(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """``--out`` at a shard's directory (or its sweep.json's, through another path) would
    replace that shard with the merged sweep: refused, the shard left as it was."""
    for i in (1, 2):
        _sweep(tmp_path / f"s{i}", (i, 2))
    before = (tmp_path / "s2" / "sweep.json").read_bytes()
    for out in (tmp_path / "s2", tmp_path / "s1" / ".." / "s2"):
        assert main(["merge", str(tmp_path / "s1"), str(tmp_path / "s2"), "--out", str(out)]) == 2
        err = capfd.readouterr().err
        assert f"--out {out} holds shard 2/2" in err and err.count("\n") == 1, err
    assert (tmp_path / "s2" / "sweep.json").read_bytes() == before
    assert merge_shards([tmp_path / "s1", tmp_path / "s2"]).shards[1].index == 2


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--shard", "4/3"], "--shard 4/3: expected I/N with 1 ≤ I ≤ N"),
        (["--shard", "2"], "--shard 2: expected I/N, e.g. 2/3"),
        (["--shard", "1/4"], "--shard 1/4 with --repeat 3: a shard is a set of rounds"),
        (["--shard", "1/2", "--repeat", "auto"], "--shard splits a fixed number of rounds"),
    ],
)
def test_bad_shards_start_nothing(
    argv: list[str], message: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    repeat = [] if "--repeat" in argv else ["--repeat", "3"]  # given twice is refused
    args = ["run", "--backend", "fake", *repeat, *argv, "--out", str(out), "--", "true"]
    assert main(args) == 2
    err = capfd.readouterr().err
    assert err.startswith("edgeprof: error:") and message in err and err.count("\n") == 1
    assert not out.exists()


def _on(host: HostInfo, name: str, wall: float) -> RunResult:
    return make_result(name=name, wall_s=wall, host=host)


HOST_A = HostInfo("6.1.0", 4, "CPU A", "a1", 8 << 30, "aaaaaaaaaaaa", 20.0)
HOST_A2 = dataclasses.replace(HOST_A, hostname="a2", speed=20.4)  # same kind, another runner
HOST_B = HostInfo("6.12.0", 16, "CPU B", "b1", 64 << 30, "bbbbbbbbbbbb", 30.0)


def test_a_ranking_of_models_measured_on_different_hosts_says_so() -> None:
    split = [_on(HOST_A, "m1", 1.0), _on(HOST_A, "m1", 1.1), _on(HOST_B, "m2", 0.9)]
    split.append(_on(HOST_B, "m2", 0.95))
    note = mixed_hosts_note({"m1": split[:2], "m2": split[2:]})
    assert note is not None and note.startswith(
        "the models were measured on different hosts (m1 on host 1; m2 on host 2; "
        "host 1: CPU A, 4 CPUs, 8.0GiB, Linux 6.1.0"
    )
    text = ranking_tables(summarize_cells(split))[0].plain()
    assert "this ranking compares the hosts as much as the models" in text
    # Blocked: every model on both hosts; or two runners of one kind: nothing to say.
    blocked = [*split, _on(HOST_B, "m1", 0.7), _on(HOST_A, "m2", 1.2)]
    assert "different hosts" not in ranking_tables(summarize_cells(blocked))[0].plain()
    alike = [_on(HOST_A, "m1", 1.0), _on(HOST_A2, "m2", 1.2)]
    assert mixed_hosts_note({"m1": alike[:1], "m2": alike[1:]}) is None


def test_a_ranking_of_models_measured_by_two_edgeprofs_on_one_host_says_so() -> None:
    """Runs made before and after a commit on this very machine had read "measured on
    different hosts … compares the hosts" (a user's)."""
    origin = {c: EdgeprofOrigin(source=f"git {c * 16}", python="CPython 3.11.7") for c in "ab"}
    m1 = [dataclasses.replace(_on(HOST_A, "m1", w), edgeprof_origin=origin["a"])
          for w in (1.0, 1.1)]  # fmt: skip
    m2 = [dataclasses.replace(_on(HOST_A2, "m2", w), edgeprof_origin=origin["b"])
          for w in (0.9, 0.95)]  # fmt: skip
    note = mixed_hosts_note({"m1": m1, "m2": m2})
    assert note is not None and "different hosts" not in note
    assert note.startswith(
        "the models were measured on one host by different edgeprof versions (m1 by "
        "edgeprof 1; m2 by edgeprof 2; edgeprof 1: "
    )
    assert note.endswith(
        "this ranking compares how the versions measure as much as the models; measure "
        "every model with one edgeprof"
    )


def test_compare_and_merge_say_when_hosts_differ() -> None:
    base = [_on(HOST_A, "m", w) for w in (1.0, 1.1, 0.9)]
    cur = [_on(HOST_B, "m", w) for w in (1.0, 1.1, 0.9)]
    _, notes = compare_results(base, cur)
    assert any(n.startswith("the baseline and the current results ran on different hosts")
               for n in notes)  # fmt: skip
    _, same = compare_results(base, [_on(HOST_A2, "m", w) for w in (1.0, 1.1, 0.9)])
    assert not any("different hosts" in n for n in same)
    notes = shard_notes([("shard 1/2", base), ("shard 2/2", cur)])
    assert notes[0].startswith("the shards ran on 2 kinds of host: CPU A")
    assert "(shard 1/2); CPU B" in notes[0]
    assert notes[1].startswith("the hosts' speed probes differ by 50% across the shards")
    assert notes[1].endswith("the absolute figures mix faster and slower hosts")
    assert shard_notes([("shard 1/2", base), ("shard 2/2", [_on(HOST_A2, "m", 1.0)])]) == []
    # One kind of host whose probe differed by its load: a busier host, not a slower one
    # (a user's three shards on one machine had read "faster and slower hosts").
    busy = dataclasses.replace(HOST_A, speed=(HOST_A.speed or 1.0) * 1.5)
    (note,) = shard_notes([("shard 1/2", base), ("shard 2/2", [_on(busy, "m", 1.0)])])
    assert note.startswith("the hosts' speed probes differ by 50% across the shards")
    assert note.endswith(
        "one kind of host, busier for some shards: the absolute figures mix its busy and "
        "quiet times"
    )


@pytest.mark.parametrize(
    ("parts", "merged"),
    [
        ("out/parts/part-{i}", "out"),  # run --executor ray's layout
        ("parts/edgeprof-part-{i}", "sweep"),  # the GitHub recipe's merge job's
    ],
)
def test_a_merged_sweeps_runs_find_their_samples_in_the_shards(
    parts: str, merged: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each part recorded its own scratch directory (a Ray node's, a runner's), gone by the
    merge: the runs' samples.csv are found in the shards' directories, each its own run's
    (``report --html`` had drawn no time series)."""
    work = tmp_path / "work"
    for i in (1, 2):
        _sweep(tmp_path / f"scratch-{i}", (i, 2))
        (work / parts.format(i=i)).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f"scratch-{i}").rename(work / parts.format(i=i))
    monkeypatch.chdir(work)
    given = [parts.format(i=i) for i in (1, 2)]
    assert main(["merge", *given, "--out", merged]) == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    runs = load_runs([work / merged])
    assert len(runs) == 20
    for run in runs:
        assert run.samples.path is not None and Path(run.samples.path).is_file(), run
        beside = json.loads((Path(run.samples.path).parent / "result.json").read_text())
        assert beside["started_at"] == run.started_at
    assert main(["report", str(work / merged), "--html", str(tmp_path / "r.html")]) == 0
    assert "samples.csv files are not on disk" not in (tmp_path / "r.html").read_text()


def test_merge_over_a_sweep_of_its_own_is_refused(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """The merged sweep.json had replaced a whole sweep's in silence, beside its runs."""
    for i in (1, 2):
        _sweep(tmp_path / f"s{i}", (i, 2))
    _sweep(tmp_path / "whole")
    before = (tmp_path / "whole" / "sweep.json").read_bytes()
    parts = [str(tmp_path / "s1"), str(tmp_path / "s2")]
    assert main(["merge", *parts, "--out", str(tmp_path / "whole")]) == 2
    err = capfd.readouterr().err
    assert err.count("\n") == 1, err
    assert f"--out {tmp_path / 'whole'} holds a sweep of its own" in err
    assert (tmp_path / "whole" / "sweep.json").read_bytes() == before
    # A merged sweep is merged again in place (the same parts, run again).
    assert main(["merge", *parts, "--out", str(tmp_path / "m")]) == 0
    assert main(["merge", *parts, "--out", str(tmp_path / "m")]) == 0


def test_a_merged_run_never_takes_another_runs_samples(tmp_path: Path) -> None:
    """A merged sweep.json over another sweep's runs (as an earlier merge wrote it), its
    shards gone: the tails of its runs' recorded paths name the other sweep's files, which
    a result.json beside them says are another run's."""
    for i in (1, 2):
        _sweep(tmp_path / f"s{i}", (i, 2))
    _sweep(tmp_path / "whole")
    parts = [str(tmp_path / "s1"), str(tmp_path / "s2")]
    assert main(["merge", *parts, "--out", str(tmp_path / "m")]) == 0
    (tmp_path / "whole" / "sweep.json").write_bytes((tmp_path / "m" / "sweep.json").read_bytes())
    for i in (1, 2):
        (tmp_path / f"s{i}").rename(tmp_path / f"gone-{i}")
    runs = load_runs([tmp_path / "whole"])
    assert len(runs) == 20
    recorded = json.loads((tmp_path / "whole" / "sweep.json").read_text())["runs"]
    for run, d in zip(runs, recorded, strict=True):
        # The recorded path (in its shard, which is gone), not whole's file at that tail.
        assert d["samples"]["path"].startswith("../s")
        assert run.samples.path == str(tmp_path / "whole" / d["samples"]["path"])
        assert not Path(run.samples.path).exists()


def test_shards_measured_by_different_backends_are_refused(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """A cgroup part and a process part had merged as "2 kinds of host", one backend named,
    the peak a mix of a group's charge and a process tree's RSS."""
    for i in (1, 2):
        _sweep(tmp_path / f"s{i}", (i, 2))
    data = json.loads((tmp_path / "s2" / "sweep.json").read_text())
    runs = [{**r, "backend": "process", "mechanism": "process"} for r in data["runs"]]
    (tmp_path / "s2" / "sweep.json").write_text(json.dumps({**data, "runs": runs}))
    out = tmp_path / "m-process"
    assert main(["merge", str(tmp_path / "s1"), str(tmp_path / "s2"), "--out", str(out)]) == 2
    err = capfd.readouterr().err
    assert err.count("\n") == 1 and "were measured differently: with the fake backend" in err
    assert "and the process backend;" in err, err
    assert not out.exists()
    # Another cgroup version is another kind of host, merged and said: both charge a group.
    runs = [{**r, "mechanism": "cgroup1"} for r in data["runs"]]
    (tmp_path / "s2" / "sweep.json").write_text(json.dumps({**data, "runs": runs}))
    out = tmp_path / "m-cgroup1"
    assert main(["merge", str(tmp_path / "s1"), str(tmp_path / "s2"), "--out", str(out)]) == 0
    assert out.exists()


def test_compare_of_two_backends_on_one_host_names_the_backends() -> None:
    """A Docker sweep against a cgroup sweep of the same machine: the old note called them
    different hosts (they differ only in ``mechanism``)."""
    base = [_on(HOST_A, "m", w) for w in (1.0, 1.1, 0.9)]
    cur = [
        dataclasses.replace(r, backend="docker", mechanism="docker+cgroup1")
        for r in (_on(HOST_A, "m", w) for w in (1.0, 1.1, 0.9))
    ]
    changes, notes = compare_results(base, cur)
    assert changes  # the verdicts stand, with the note beside them
    assert not any("different hosts" in n for n in notes)
    (note,) = [n for n in notes if n.startswith("the baseline and the current")]
    assert note.startswith(
        f"the baseline and the current results ran on the same host by different backends "
        f"({base[0].backend} ({base[0].mechanism}) → docker (docker+cgroup1)): a Docker run's "
        "command is the image's"
    )
    assert note.endswith("a change may be the backends', not the model's")
    newer = [dataclasses.replace(r, edgeprof_version="99.0") for r in base]
    (note,) = [n for n in compare_results(base, newer)[1] if n.startswith("the baseline")]
    assert "same host by different edgeprof versions" in note and "→ 99.0)" in note


def test_a_merges_host_notes_are_in_every_report_of_it(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Parts on another CPU, at another speed, by another edgeprof: the notes had been on
    merge's stdout alone, in no sweep.json, report.md, summary, JUnit file, HTML page or
    later ``report``."""
    for i in (1, 2):
        _sweep(tmp_path / f"s{i}", (i, 2))
    for i, changed in ((1, {"speed": 20.0}), (2, {"cpu_model": "CPU B", "speed": 30.0})):
        data = json.loads((tmp_path / f"s{i}" / "sweep.json").read_text())
        version = {"edgeprof_version": "0.2.0"} if i == 2 else {}
        runs = [{**r, "host": {**r["host"], **changed}, **version} for r in data["runs"]]
        (tmp_path / f"s{i}" / "sweep.json").write_text(json.dumps({**data, "runs": runs}))
    s1 = json.loads((tmp_path / "s1" / "sweep.json").read_text())["runs"]
    version = s1[0]["edgeprof_version"]
    step = tmp_path / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    m = tmp_path / "m"
    files = [f"--{o}={tmp_path / f}" for o, f in
             (("summary", "sum.md"), ("junit", "j.xml"), ("html", "m.html"))]  # fmt: skip
    capfd.readouterr()
    parts = [str(tmp_path / "s1"), str(tmp_path / "s2")]
    assert main(["merge", *parts, "--out", str(m), *files]) == 0
    out = capfd.readouterr().out
    notes = json.loads((m / "sweep.json").read_text())["notes"]
    assert [n.split(":")[0] for n in notes] == [
        "the shards ran on 2 kinds of host",
        "the shards were measured by 2 edgeprof versions",
        "the hosts' speed probes differ by 50% across the shards (shard 1/2 20, shard 2/2 30 M "
        "loops/s)",
    ]
    kinds = notes[0]
    assert kinds.startswith("the shards ran on 2 kinds of host: ") and "edgeprof" not in kinds
    assert "(shard 1/2); CPU B, " in kinds
    assert notes[1] == (
        f"the shards were measured by 2 edgeprof versions: {version} (shard 1/2); 0.2.0 "
        "(shard 2/2). A version may measure differently: the figures mix the versions' ways; "
        "run every part with one edgeprof"
    )
    assert [line for line in out.splitlines() if "note:" in line] == [f"note: {n}" for n in notes]
    capfd.readouterr()
    assert main(["report", str(m), "--html", str(tmp_path / "r.html")]) == 0
    reported = capfd.readouterr().out
    for text in (
        (m / "report.md").read_text(),
        (tmp_path / "sum.md").read_text(),
        step.read_text(),
        (tmp_path / "j.xml").read_text(),
        (tmp_path / "m.html").read_text().replace("&#x27;", "'"),
        (tmp_path / "r.html").read_text().replace("&#x27;", "'"),
        reported,
    ):
        assert all(n.split(": ")[0] in text for n in notes), text[-2000:]
    assert f"note: {notes[1]}" in reported
    junit = (tmp_path / "j.xml").read_text()
    assert junit.count("<system-out>note: the shards ran on 2 kinds of host") == 1


def test_a_host_field_an_older_file_did_not_record_is_no_difference() -> None:
    """An upgrading user's 7f83ae4 files (no ``host.memory_bytes``, no ``host.cpu_flags``) of
    this very machine were "different hosts" to ``compare``, "2 kinds of host" to
    ``--resume`` and to a merge, and a ranking's hosts to ``report``."""
    old_a = dataclasses.replace(HOST_A, memory_bytes=None, cpu_flags=None, speed=None)
    base = [_on(old_a, "m", w) for w in (1.0, 1.1, 0.9)]
    # Today's runs record where their code came from; the old files do not: unknown too (a
    # verifier's "different hosts" again, once results recorded their origin).
    origin = EdgeprofOrigin(source="git 0123456789abcdef", python="CPython 3.11.7")
    cur = [dataclasses.replace(_on(HOST_A, "m", w), edgeprof_origin=origin)
           for w in (1.0, 1.1, 0.9)]  # fmt: skip
    _, notes = compare_results(base, cur)
    assert not any("different hosts" in n for n in notes)
    assert resumed_hosts_note(base, cur) is None
    assert shard_notes([("shard 1/2", base), ("shard 2/2", cur)]) == []
    assert mixed_hosts_note({"m1": base, "m2": cur}) is None
    # What both record still tells hosts apart: an old file of another CPU model.
    old_b = dataclasses.replace(HOST_B, memory_bytes=None, cpu_flags=None)
    _, notes = compare_results([_on(old_b, "m", w) for w in (1.0, 1.1, 0.9)], cur)
    assert any(n.startswith(
        "the baseline and the current results ran on different hosts (CPU B, 16 CPUs, Linux "
        "6.12.0, cgroup2, edgeprof 0.1.0 → CPU A, 4 CPUs, 8.0GiB, Linux 6.1.0"
    ) for n in notes)  # fmt: skip
    note = resumed_hosts_note([_on(old_b, "m", 1.0)], cur)
    assert note is not None and note.startswith(
        "the resumed sweep's runs ran on 2 kinds of host: CPU B, 16 CPUs, Linux 6.12.0, "
        "cgroup2, edgeprof 0.1.0 (origin unknown) (runs kept); CPU A, 4 CPUs, 8.0GiB"
    )
