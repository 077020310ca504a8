"""A bench's results read back: ``compare`` pairs only runs of the same target, ``report``
ranks batch sizes by the ``infer`` phase, and names the per-layer profiles it skips."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgeprof.cli import main

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
    assert first > 4 * second  # 8× at equal sleeps: 400 items/s against 50
    assert second <= 50 and rows[1][4] == f"{second / first:.2f}×"
    assert "ranked by the infer phase (the timed calls; load and warm-up left out)" in table
    assert "Ranking by peak memory" in text  # the memory rankings stay

    for f in out.rglob("result.json"):  # a bench's files from before targets: the same
        doc = json.loads(f.read_text())
        del doc["target"]
        f.write_text(json.dumps(doc))
    assert main(["report", str(out)]) == 0
    again = capfd.readouterr().out
    assert "Ranking by infer throughput" in again and "Ranking by wall time" not in again


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
