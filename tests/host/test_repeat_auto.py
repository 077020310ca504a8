"""``--repeat auto`` on real runs: a clearly different model stops at the fewest runs, two
close ones go on to the most, and the report says why and how many runs would settle them."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from edgeprof.cli import main

pytestmark = pytest.mark.not_in_vm  # orchestration, not cgroup mechanics

WORKLOAD = Path(__file__).resolve().parent.parent / "workloads" / "designed_noise.py"
MIN_RUNS, MAX_RUNS = 4, 7


def test_repeat_auto_stops_early_on_clear_differences_and_runs_on_close_ones(
    mechanism: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """``a`` and ``b`` have the same mean work with a designed ~15 % spread (no number of
    runs up to 8 separates them or shows them within 1 %); ``far`` does 4× the work and
    holds 64 MiB more.  Four runs, not three, are the floor: among three, one run slowed 2×
    by a neighbour keeps even a 4× difference inside Welch's interval (t = 3.2, and 3.9 at
    40×, against 4.3 at ~2 degrees of freedom; among four, t = 4.0 against 3.2)."""
    counters = tmp_path / "counters"
    counters.mkdir()
    out = tmp_path / "sweep"
    code = main(
        [
            "run", "--backend", "cgroup", "--cpus", "1", "--repeat", "auto",
            "--min-runs", str(MIN_RUNS), "--max-runs", str(MAX_RUNS), "--target", "1%",
            "--warmup", "1", "-m", "a,b,far", "--out", str(out),
            # ~0.1 s runs read every 10 ms: each has an average memory (at 0.1 s most had
            # none, and far's pair in it stayed open to --max-runs on a busy machine).
            "--interval", "0.01",
            "--", sys.executable, str(WORKLOAD), str(counters),
        ]
    )  # fmt: skip
    stdout, stderr = capfd.readouterr()
    assert code == 0, stderr
    data = json.loads((out / "sweep.json").read_text())
    assert data["repeat"] == "auto"
    assert data["auto"] == {"min_runs": MIN_RUNS, "max_runs": MAX_RUNS, "target": 0.01}
    runs = {c["label"]: c["runs"] for c in data["cells"]}
    assert runs["a"] == runs["b"] == MAX_RUNS, runs  # close: every round it may run
    assert MIN_RUNS <= runs["far"] < MAX_RUNS, runs  # clearly different: stopped early
    # The first rounds interleave every model; the later ones only the unresolved, judged
    # again after each round: a and b every time, far while a pair of its is open (its
    # neighbour in a ranking can change with a round, and a pair resolved can open again).
    names = [r["name"] for r in data["runs"]]
    assert names[: 3 * MIN_RUNS] == ["a", "b", "far"] * MIN_RUNS
    later = " ".join(names[3 * MIN_RUNS :]).replace(" a ", " | a ").split(" | ")
    assert len(later) == MAX_RUNS - MIN_RUNS, names
    assert all(rnd in ("a b", "a b far") for rnd in later), names
    assert sum(rnd == "a b far" for rnd in later) == runs["far"] - MIN_RUNS, names
    # The counter files saw every run, warm-ups included: nothing ran that is not reported.
    for label in ("a", "b", "far"):
        assert int((counters / label).read_text()) == runs[label] + 1
    report = stdout.split("Repeats (--repeat auto: 4 to 7 runs a model, precision ±1%)")[1]
    lines = report.splitlines()
    assert [ln.split()[0::2] for ln in lines[3:6]] == [
        ["a", str(MAX_RUNS)], ["b", str(MAX_RUNS)], ["far", str(runs["far"])]
    ], report  # fmt: skip
    unresolved = [ln for ln in lines if ln.startswith("unresolved: ")]
    assert any(" in CPU time under cpus=1" in ln for ln in unresolved), report
    for ln in unresolved:  # only the close pair stays open, with the runs that would settle it
        assert ln.startswith(("unresolved: a ≈ b", "unresolved: b ≈ a")), report
        # Every run has a CPU time; a run over before its second reading has no average
        # memory, and the counts are then of the runs with one (the note says so).
        counts = re.search(r"after (\d+) and (\d+) runs( with [a-z ]+)?;", ln)
        assert counts is not None, ln
        seen = (int(counts[1]), int(counts[2]))
        if counts[3] is None:
            assert seen == (MAX_RUNS, MAX_RUNS), ln
        else:
            assert max(seen) <= MAX_RUNS and " in avg memory " in ln, ln
        assert "runs each would resolve it" in ln or "no number of runs" in ln
