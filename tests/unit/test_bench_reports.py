"""A bench's results read back: ``compare`` pairs only runs of the same target, ``report``
ranks batch sizes by the ``infer`` phase, and names the per-layer profiles it skips."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from edgeprof.cli import main
from edgeprof.model import RunResult
from edgeprof.units import format_factor

MODEL = "def load(bs):\n    return bs\n\ndef infer(bs):\n    pass\n"


def _bench(cwd: Path, target: str, out: Path, *args: str) -> None:
    argv = ["bench", target, "--iterations", "3", "--warmup", "0", "--backend", "fake",
            "--cwd", str(cwd), "--out", str(out), *args]  # fmt: skip
    assert main(argv) == 0


def test_compare_pairs_only_runs_of_the_same_bench_target(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Two files' ``infer`` were both labelled ``infer bs=1``, and compare held one to the
    other (a tester's +5251 %): refused now, exit 2; ``--ignore-target`` pairs them and says
    so; files without the target (older) pair as before."""
    for name in ("small", "big"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "model.py").write_text(MODEL)
        _bench(tmp_path, f"./{name}/model.py:infer", tmp_path / f"out_{name}", "--repeat", "2")
    small, big = tmp_path / "out_small", tmp_path / "out_big"
    saved = json.loads((small / "bs1" / "1" / "result.json").read_text())
    assert saved["name"] == "infer bs=1"
    assert saved["target"] == "small/model.py:infer, loader load"
    capfd.readouterr()

    assert main(["compare", str(small), str(big)]) == 2
    err = capfd.readouterr().err
    assert err.splitlines() == [
        "edgeprof: error: the baseline and the current results bench different targets "
        "(small/model.py:infer, loader load → big/model.py:infer, loader load): their runs "
        "infer bs=1 (none) share labels, not code; compare a bench with one of the same "
        "target, or give --ignore-target to hold one target against the other"
    ]

    assert main(["compare", str(small), str(big), "--ignore-target"]) in (0, 3)
    out = capfd.readouterr().out
    assert (
        "different targets (small/model.py:infer, loader load → big/model.py:infer, "
        "loader load; --ignore-target)" in out
    )
    assert "infer bs=1" in out and "latency p95" in out

    assert main(["compare", str(small), str(small)]) == 0  # the same target: paired
    assert "different targets" not in capfd.readouterr().out

    for f in big.rglob("result.json"):  # as written before targets were recorded
        doc = json.loads(f.read_text())
        del doc["target"]
        f.write_text(json.dumps(doc))
    assert main(["compare", str(small), str(big)]) in (0, 3)
    out = capfd.readouterr().out
    assert "different targets" not in out and "latency p95" in out


def test_report_of_a_bench_ranks_batch_sizes_by_the_infer_phase(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """``report`` had ranked a bench's batch sizes by their whole runs' wall time, load
    included (here bs=8 loads for 0.4 s, bs=1 not at all), and never by the infer phase the
    bench measures.  Each call sleeps 20 ms: bs=8 serves 8× the items a second; a loaded
    host lengthens a sleep, never by 8×."""
    model = (
        "import time\n\ndef load(bs):\n    time.sleep(0.4 if bs == 8 else 0)\n    return bs\n\n"
        "def infer(bs):\n    time.sleep(0.02)\n"
    )
    (tmp_path / "m.py").write_text(model)
    out = tmp_path / "out"
    _bench(tmp_path, "m.py:infer", out, "--batch-size", "1,8")
    capfd.readouterr()
    assert main(["report", str(out)]) == 0
    text = capfd.readouterr().out
    assert "Ranking by wall time" not in text and "Ranking by CPU time" not in text
    table = text[text.index("Ranking by infer throughput with no limits (largest first)") :]
    rows = [line.split() for line in table.splitlines()[3:5]]
    assert [r[:3] for r in rows] == [["1", "infer", "bs=8"], ["2", "infer", "bs=1"]]
    first, second = float(rows[0][3]), float(rows[1][3])
    # Each figure is its run's infer phase's items/s (400 and 50 at equal 20 ms sleeps; a
    # loaded host lengthens the sleeps, by how much per batch size it cannot be told:
    # "over 4×" had failed once beside other work), never the whole run's.
    ips = {}
    for bs, shown in (("8", first), ("1", second)):
        doc = json.loads((out / f"bs{bs}" / "result.json").read_text())
        (infer,) = [p for p in doc["phases"] if p["name"] == "infer"]
        ips[bs] = infer["latency"]["items_per_s"]
        assert shown == round(ips[bs], 1)
    # × FIRST from the unrounded figures, as the report takes it: near 0.125, the printed
    # ones' ratio rounds the other way about a third of the time.
    # The report's own format: two decimals, two figures under 0.1 (a loaded host's 0.097×).
    assert second <= 50 and rows[1][4] == format_factor(ips["1"] / ips["8"])
    assert "ranked by the infer phase (the timed calls; load and warm-up left out)" in table
    assert "Ranking by peak memory" in text  # the memory rankings stay

    for f in out.rglob("result.json"):  # a bench's files from before targets: the same
        doc = json.loads(f.read_text())
        del doc["target"]
        f.write_text(json.dumps(doc))
    assert main(["report", str(out)]) == 0
    again = capfd.readouterr().out
    assert "Ranking by infer throughput" in again and "Ranking by wall time" not in again


def test_report_of_two_benches_keeps_their_targets_apart(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """``report`` of a directory holding two benches of different files, each labelled
    ``infer bs=1`` and ``infer bs=2``, had pooled each label's runs of both files into one
    cell: one row of 4 runs, whose statistics and rankings mixed two programs.  Each run
    is named with its target now, each cell holds one target's 2 runs, and a note says
    why; one bench's report is as it was."""
    for name in ("small", "big"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "model.py").write_text(MODEL)
        out = tmp_path / "out" / name
        _bench(tmp_path, f"./{name}/model.py:infer", out, "--repeat", "2", "--batch-size", "1,2")
    capfd.readouterr()
    assert main(["report", str(tmp_path / "out"), "--out", str(tmp_path / "rep")]) == 0
    text = capfd.readouterr().out
    with (tmp_path / "rep" / "cells.csv").open() as f:
        cells = [(row["label"], row["runs"]) for row in csv.DictReader(f)]
    names = sorted(f"infer bs={bs} ({name}/model.py)" for name in ("big", "small") for bs in (1, 2))
    assert sorted(cells) == [(n, "2") for n in names]
    stats = text[text.index("Statistics with no limits") :]
    for n in names:
        assert re.search(rf"^{re.escape(n)} +wall time +2 ", stats, re.M)  # 2 runs, not 4
    ranking = text[text.index("Ranking by infer throughput") :].split("\n\n")[0]
    rows = [line for line in ranking.splitlines()[3:] if line[:1].isdigit()]
    ranked = [line.split("  ")[1].strip() for line in rows]
    assert sorted(ranked) == names
    assert (
        "note: these runs bench 2 targets (big/model.py:infer, loader load; small/model.py:"
        "infer, loader load) under the same labels (infer bs=1, infer bs=2): each such run "
        "is named with its target, and no cell pools two targets" in text
    )

    assert main(["report", str(tmp_path / "out" / "small")]) == 0
    alone = capfd.readouterr().out
    assert "model.py)" not in alone and "these runs bench" not in alone
    assert "infer bs=1  " in alone and "infer bs=2  " in alone


def test_compare_keeps_a_sides_two_targets_apart(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """A side holding two benches under the same labels had each label's runs of both
    files pooled into one cell, the statistics of two programs mixed: named apart now, as
    report names them, on both sides.  Each file's cells are paired with the same file's,
    also where one side holds one file's bench."""
    for name in ("small", "big"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "model.py").write_text(MODEL)
        for side in ("base", "cur"):
            out = tmp_path / side / name
            _bench(tmp_path, f"./{name}/model.py:infer", out, "--repeat", "2")
    capfd.readouterr()
    assert main(["compare", "--json", str(tmp_path / "base"), str(tmp_path / "cur")]) in (0, 3)
    data = json.loads(capfd.readouterr().out)
    wall = {c["label"]: c for c in data["changes"] if c["metric"] == "wall"}
    assert sorted(wall) == ["infer bs=1 (big/model.py)", "infer bs=1 (small/model.py)"]
    assert all(len(c["baseline"]) == 2 and len(c["current"]) == 2 for c in wall.values())
    named_apart = (
        "the baseline and current results bench 2 targets (big/model.py:infer, loader load; "
        "small/model.py:infer, loader load) under the same labels (infer bs=1): each such run "
        "is named with its target, and no cell pools two targets"
    )
    assert data["notes"][0] == named_apart

    # One file's bench against both files': paired with the same file's runs.
    argv = ["compare", "--json", str(tmp_path / "base" / "small"), str(tmp_path / "cur")]
    assert main(argv) in (0, 3)
    data = json.loads(capfd.readouterr().out)
    wall = {c["label"]: c for c in data["changes"] if c["metric"] == "wall"}
    assert list(wall) == ["infer bs=1 (small/model.py)"]
    assert len(wall["infer bs=1 (small/model.py)"]["current"]) == 2
    assert data["notes"][:2] == [
        "the baseline and current results bench 2 targets (small/model.py:infer, loader load; "
        "big/model.py:infer, loader load) under the same labels (infer bs=1): each such run "
        "is named with its target, and no cell pools two targets",
        "infer bs=1 (big/model.py) (none): new (not in the baseline)",  # (no limits)
    ]


def test_runs_of_a_shared_label_are_named_by_what_tells_their_targets_apart() -> None:
    """Two loaders of one function: the file tells nothing apart, so the loader names the
    run; a label no two targets share, and a run without a target, keep their names."""
    from edgeprof.analysis.apart import apart
    from edgeprof.analysis.cells import cells

    from .conftest import make_result

    a, b = "m.py:infer, loader load", "m.py:infer, loader load_small"
    runs = [
        make_result(name="infer bs=1", target=a),
        make_result(name="infer bs=1", target=b),
        make_result(name="infer bs=1", target=None),
        make_result(name="infer bs=8", target=a),
    ]
    named, note = apart(runs)
    want = ["infer bs=1 (loader load)", "infer bs=1 (loader load_small)", "infer bs=1",
            "infer bs=8"]  # fmt: skip
    assert [r.label for r in named] == want
    assert [r.target for r in named] == [r.target for r in runs]
    assert [len(group) for group in cells(named).values()] == [1, 1, 1, 1]
    assert len(note) == 1 and note[0].startswith(f"these runs bench 2 targets ({a}; {b})")
    assert apart(runs[2:]) == (runs[2:], [])  # nothing shared: as they were


def test_a_benchs_loader_is_said_once_by_its_target_not_again_by_its_command() -> None:
    """A tester's two loaders of one file were named "infer bs=1 (bench_variants.py:infer,
    loader load_fp32, --loader load_fp32)" (the command's --loader beside the target's) and
    noted twice, as two targets and as two commands.  Two functions of one file keep their
    whole target; two files, their file."""
    import dataclasses

    from edgeprof.analysis.apart import apart

    from .conftest import make_result

    def bench_run(target: str) -> RunResult:
        loader = target.rpartition("loader ")[2]
        command = ("python", "-c", "BOOT", target, "--batch-size", "1", "--loader", loader,
                   "--warmup", "5", "--iterations", "50")  # fmt: skip
        return dataclasses.replace(
            make_result(name="infer bs=1", target=target), command=command
        )

    a, b = "v.py:infer, loader load_fp32", "v.py:infer, loader load_int8"
    named, notes = apart([bench_run(a), bench_run(a), bench_run(b)])
    assert [r.label for r in named] == [
        "infer bs=1 (loader load_fp32)", "infer bs=1 (loader load_fp32)",
        "infer bs=1 (loader load_int8)",
    ]  # fmt: skip
    assert notes == [
        f"these runs bench 2 targets ({a}; {b}) under the same labels (infer bs=1): each such "
        "run is named with its target, and no cell pools two targets"
    ]
    c = "v.py:infer_small, loader load_fp32"
    named, _ = apart([bench_run(a), bench_run(c)])
    assert [r.label for r in named] == [f"infer bs=1 ({a})", f"infer bs=1 ({c})"]


def test_report_of_a_bench_says_the_first_batch_sizes_page_cache_by_peak_memory() -> None:
    """``bench`` said "infer_mlp bs=1 ran first: its peak memory counts 220.5MiB of page
    cache … compare their anonymous memory, not their peaks"; ``report`` of its directory
    ranked that peak (367.2MiB, 2.48×) by peak memory with no word of it.  The same note
    (:func:`edgeprof.report.bench.first_reads_note`) is said under that ranking."""
    import dataclasses

    from edgeprof.model import MemoryParts
    from edgeprof.report.bench import first_reads_note
    from edgeprof.report.summary import summary_tables

    from .conftest import make_result

    mib = 1 << 20

    def run(bs: int, file: int) -> RunResult:
        r = make_result(name=f"infer bs={bs}", target="m.py:infer, loader load")
        parts = MemoryParts(total=None, anon=100 * mib, file=file * mib, shmem=0, kernel=mib)
        memory = dataclasses.replace(r.memory, peaks=parts, peak_bytes=(101 + file) * mib)
        return dataclasses.replace(r, memory=memory)

    runs = [run(1, 220), run(8, 4), run(32, 6)]
    note = first_reads_note(runs)
    assert note is not None
    assert note.startswith("infer bs=1 ran first: its peak memory counts 220.0MiB of page cache")
    tables = {t.title: t for t in summary_tables(runs)}
    (peak,) = [t for title, t in tables.items() if title.startswith("Ranking by peak memory")]
    assert note in peak.notes
    assert [row[1] for row in peak.rows[1:]] == ["infer bs=8", "infer bs=32", "infer bs=1"]
    # Said once, and only under the peak: the average memory ranking is not about the peak.
    assert sum(note in t.notes for t in tables.values()) == 1
    # Without a first run's page cache (within 16 MiB), no such note.
    even = [run(1, 10), run(8, 4), run(32, 6)]
    assert not any("ran first" in n for t in summary_tables(even) for n in t.notes)


LAYERS_YAML = "batch_size: 1\nmodel_name: vit\nprofile_data:\n  - layer: 1\n"


def test_report_names_the_layer_profiles_it_skips(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """A directory of result files and ``edgeprof layers`` YAML had its YAML skipped in
    silence: one note line names it and what reads it."""
    (tmp_path / "m.py").write_text(MODEL)
    out = tmp_path / "out"
    _bench(tmp_path, "m.py:infer", out)
    (out / "vit.yml").write_text(LAYERS_YAML)
    (out / "settings.yml").write_text("cpus: 1\n")  # not a profile: not named
    capfd.readouterr()
    assert main(["report", str(out)]) == 0
    captured = capfd.readouterr()
    assert "infer bs=1" in captured.out
    assert captured.err.splitlines() == [
        f"edgeprof: note: skipped a per-layer profile: {out / 'vit.yml'} is a per-layer "
        "profile from `edgeprof layers`, not a run result: `edgeprof layers export "
        f"models|device-types -i "
        f"{out / 'vit.yml'}` reads it (report and compare read result.json and sweep.json)"
    ]
    (out / "sub").mkdir()
    (out / "sub" / "bert.yaml").write_text(LAYERS_YAML)
    assert main(["report", str(out)]) == 0
    assert capfd.readouterr().err.splitlines() == [
        f"edgeprof: note: skipped 2 per-layer profiles from `edgeprof layers`, not run results "
        f"({out / 'sub' / 'bert.yaml'}, {out / 'vit.yml'}): `edgeprof layers export "
        "models|device-types -i FILE` reads each"
    ]


def test_a_targets_file_is_named_from_its_checkouts_root_however_it_was_typed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``bench models/a.py:infer`` from the checkout and ``bench a.py:infer`` from models/
    record one target (a reviewer's reading: compare refused the same code); outside a
    checkout the path is kept as given."""
    from edgeprof.sweeps.bench import target_identity

    (tmp_path / "repo" / ".git").mkdir(parents=True)
    models = tmp_path / "repo" / "models"
    models.mkdir()
    monkeypatch.chdir(tmp_path / "repo")
    from_root = target_identity("models/a.py", "infer", "load")
    from_models = target_identity("a.py", "infer", "load", models)
    absolute = target_identity(str(models / "a.py"), "infer", "load")
    assert from_root == from_models == absolute == "models/a.py:infer, loader load"
    monkeypatch.chdir(tmp_path)
    assert target_identity("./b.py", "f", "load") == "b.py:f, loader load"
    assert target_identity("pkg.mod", "f", "load") == "pkg.mod:f, loader load"


def test_the_bench_ranking_carries_the_tables_host_speed_and_stall_marks() -> None:
    """A tester's ``report b1``: bs=1 at this host's speed (``49.06µs!`` in the bench's own
    table) ranked first over bs=4 (``149.04µs*``) with neither mark, though at half this
    core's speed it would rank below it."""
    import dataclasses

    from edgeprof.model import Throttling
    from edgeprof.report.bench_ranking import HOST_SPEED_RANKED, bench_rankings
    from edgeprof.report.latency_cells import HELD_NOTE, HOST_SPEED_NOTE, STALLED_NOTE
    from tests.unit.gating_helpers import run

    def throttled(r: RunResult, host: bool = False, distorted: tuple[str, ...] = ()) -> RunResult:
        t = Throttling(49, 0, 0.0, 0.0, 1e-4, 1e-4, 1e-4, distorted=distorted, share=0.5,
                       at_host_speed=host)  # fmt: skip
        assert r.latency is not None
        return dataclasses.replace(r, latency=dataclasses.replace(r.latency, throttling=t))

    one = run("infer bs=1", p50_s=49e-6, p95_s=65e-6, items_per_s=17564.0)
    four = run("infer bs=4", p50_s=149e-6, p95_s=210e-6, items_per_s=12641.0)
    runs = [throttled(one, host=True), throttled(four, distorted=("p95",))]
    [table] = bench_rankings(runs)
    assert [row[4:6] for row in table.rows[1:]] == [["49.00µs!", "65.00µs!"],
                                                    ["149.00µs", "210.00µs*"]]  # fmt: skip
    assert {HOST_SPEED_NOTE, STALLED_NOTE, HOST_SPEED_RANKED} <= set(table.notes)
    [plain] = bench_rankings([one, four])
    assert not {HOST_SPEED_NOTE, STALLED_NOTE, HOST_SPEED_RANKED} & set(plain.notes)
    # Held off its CPUs for half its wall time (a verifier's 4.59ms# in the bench's table).
    off = dataclasses.replace(four, cpu=dataclasses.replace(four.cpu, held_s=0.5, throttled_s=0.0))
    [table] = bench_rankings([one, off])
    assert [row[4:6] for row in table.rows[1:]] == [["49.00µs", "65.00µs"],
                                                    ["149.00µs#", "210.00µs#"]]  # fmt: skip
    assert HELD_NOTE in table.notes
