"""The benchmark script runs in CI in its quick mode, so it cannot rot (figures not asserted)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import require

REPO = Path(__file__).resolve().parents[2]


def quick(
    script: str, out: Path, *extra: str, timeout: int = 300
) -> subprocess.CompletedProcess[str]:
    """``benchmarks/SCRIPT --quick --json OUT EXTRA…`` as root (the benchmarks create
    cgroups), checked to have exited 0."""
    require(os.geteuid() == 0, "the benchmark creates cgroups: needs root")
    proc = subprocess.run(
        [sys.executable, f"benchmarks/{script}", "--quick", "--json", str(out), *extra],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr
    return proc


def test_benchmark_quick_mode_prints_every_table(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    proc = quick("bench.py", out)
    for heading in ("1. Sampling cost", "2. Peak of a 200 MiB spike", "3. Wall time"):
        assert heading in proc.stdout
    data = json.loads(out.read_text())
    assert set(data["sampling"]["rates"]) == {"100", "1000", "10000"}
    assert data["spike"]["methods"] and data["overhead"]["runs"] > 0
    per_file = data["sampling"]["per_file_1khz"]
    assert {"no file (timer wake-ups)", "all per-sample files"} < set(per_file)
    assert all(us > 0 for us in per_file.values())


def test_fit_benchmark_quick_mode_prints_its_rows(tmp_path: Path) -> None:
    """Bisection everywhere; the one-run row is the estimate on cgroup v2 with
    ``memory.reclaim`` and edgeprof's one-line refusal elsewhere."""
    out = tmp_path / "fit.json"
    proc = quick("fit_one_run.py", out)
    [r] = json.loads(out.read_text())["rounds"]
    assert r["bisection"]["answer_bytes"] >= 16 << 20 and r["bisection"]["runs"] >= 4
    reclaim = Path("/sys/fs/cgroup/cgroup.controllers").exists() and any(
        Path("/sys/fs/cgroup").glob("*/memory.reclaim")
    )
    if reclaim:
        assert r["one_run"]["runs"] == 1 and "one-run - bisection" in proc.stdout
    else:
        assert "memory.reclaim" in " ".join(r["one_run"]["error"])
        assert "one-run: not on this kernel" in proc.stdout


def test_process_backend_benchmark_quick_mode_prints_its_rows(tmp_path: Path) -> None:
    """Both backends measure every workload (figures not asserted: they are the table's)."""
    out = tmp_path / "process.json"
    proc = quick("process_backend.py", out)
    data = json.loads(out.read_text())
    assert set(data["medians"]) == {"tree", "hold", "read"}
    assert set(data["sample_us"]) == {"cgroup", "process"}
    assert "one sample() of a 2-process tree" in proc.stdout


def test_overhead_benchmark_quick_mode_prints_its_tables(tmp_path: Path) -> None:
    """Start-up beside runexec (installed from PyPI into the benchmark's own venv, here under
    the test's directory), sampling at three rates beside psutil, and a sweep's per-run
    overhead and memory (figures not asserted: they are the tables')."""
    out = tmp_path / "overhead.json"
    proc = quick("overhead.py", out, "--peers", str(tmp_path / "peers"), timeout=900)
    for heading in ("1. Start-up", "2. Sampling, end to end", "3. A sweep of 30 runs"):
        assert heading in proc.stdout
    data = json.loads(out.read_text())
    assert "edgeprof run -- /bin/true" in data["startup"]["mean_s"]
    assert set(data["sampling"]) == {"10", "100", "1000"}
    assert data["sweep"]["runs"] == 30 and data["sweep"]["exit_status"] == 0
    assert data["sweep"]["tty"]["exit_status"] == 0


def test_outlier_rule_benchmark_quick_mode(tmp_path: Path) -> None:
    """Pure arithmetic, seeded: it runs anywhere, and its rows cover every size."""
    out = tmp_path / "outliers.json"
    proc = subprocess.run(
        [sys.executable, "benchmarks/outlier_rule.py", "--quick", "--json", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "FOUND 1.5x AMONG 2 %" in proc.stdout
    sizes = json.loads(out.read_text())["sizes"]
    assert set(sizes) == {"3", "4", "5", "6", "8", "10", "20", "40"}
    assert all(0 <= v <= 1 for row in sizes.values() for v in row.values())


def test_events_benchmark_quick_mode_prints_its_tables(tmp_path: Path) -> None:
    """The loop bare and under edgeprof, the pipe peer, and the stalls under a quota (figures
    not asserted: they are the tables')."""
    out = tmp_path / "events.json"
    proc = quick("events.py", out)
    assert "1. Per-iteration cost" in proc.stdout and "2. Stalls outside" in proc.stdout
    data = json.loads(out.read_text())
    assert [r["work_us"] for r in data["cost"]] == [0, 100, 8000]
    assert all(r["send_median_us"] > 0 and r["pipe_peer_us"] > 0 for r in data["cost"])
    for r in data["stalls"]:
        # The quota holds the loop to half a CPU; it stalls it where the loop could spend
        # it, which other tasks holding it off its CPU can prevent (throttled 0 had failed
        # this beside other work).
        assert r["cpu_share"] <= 0.5 + 0.05, r
        assert r["throttled_s"] > 0 or (r["held_by_others_s"] or 0) > 0, r
