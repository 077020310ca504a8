"""``edgeprof fit`` of a workload that fails: a command that exits non-zero without a limit
has no memory it fits in (no search, ``fit`` exits with its code, as ``run`` does), and one
that exits non-zero only under a tight limit does not fit at that limit (with no OOM kill).

On the scripted backend: its runs are real processes, so their exit codes are real."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from edgeprof.analysis.fit_times import LATENCY, UNCONTENDED, Timing, median_time
from edgeprof.analysis.need import Verdict
from edgeprof.backends import register_backend, unregister_backend
from edgeprof.cli import main
from edgeprof.cli.fit import fit_exit_code
from edgeprof.model import RunSpec, Termination
from edgeprof.report.fit import CURVE, format_time, probe_row
from edgeprof.report.results import row
from edgeprof.sweeps.fit import FitRequest, _one_run
from edgeprof.sweeps.fit_outcome import Probe
from edgeprof.sweeps.request import RunRequest
from edgeprof.units import format_binary
from tests.fakes import FakeBackend, FakeRun, linear

from .conftest import make_result
from .test_memory_need import latency

MIB = 1 << 20
NO_SEARCH = "no search: the unlimited run exited with code {}: the command fails without a "
FAILS = ": the command fails without a memory limit, so there is no limit it fits in"


def _fit(capfd: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["fit", *args])
    out, err = capfd.readouterr()
    return code, out, err


@pytest.mark.parametrize(("command", "code"), [(["false"], 1), (["sh", "-c", "exit 5"], 5)])
def test_a_command_that_fails_unlimited_is_not_fitted(
    capfd: pytest.CaptureFixture[str], command: list[str], code: int
) -> None:
    rc, out, err = _fit(capfd, "--backend", "fake", "--", *command)
    assert rc == code, (out, err)
    assert NO_SEARCH.format(code) in out
    assert [line for line in out.splitlines() if line.startswith("no search:")] == [
        NO_SEARCH.format(code) + "memory limit, so there is no limit it fits in"
    ]
    assert "smallest memory" not in out and "margin" not in out and "LIMIT" not in out
    assert "edgeprof fit: false: 6.0MiB" not in err  # no probe was made
    # The failed warm-up ended the unlimited runs: the rest would only repeat it.
    assert "(1 run); " in out and f"{command[0]}: unlimited, 1 run\n" in err


def test_the_unlimited_runs_stop_at_their_first_failure(
    capfd: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    count = tmp_path / "count"
    # Succeeds once (the warm-up), then fails: the second measured run is never made.
    script = f"n=$(cat {count} 2>/dev/null || echo 0); echo $((n + 1)) > {count}; [ $n -lt 1 ]"
    out_dir = tmp_path / "f"
    rc, out, _ = _fit(capfd, "--backend", "fake", "--out", str(out_dir), "--", "sh", "-c", script)
    assert rc == 1
    assert count.read_text() == "2\n"
    assert NO_SEARCH.format(1) in out
    sweep = json.loads((out_dir / "reference" / "sweep.json").read_text())
    assert sweep["stopped"] == "a run failed (exit 1)"
    assert len(sweep["runs"]) == 1 and len(sweep["warmup_runs"]) == 1


def test_a_failing_command_in_json_and_out(
    capfd: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rc, out, err = _fit(capfd, "--backend", "fake", "--json", "--out", str(tmp_path / "f"),
                        "--", "false")  # fmt: skip
    assert rc == 1
    # Why it exited 1, in the log: the report on stderr (it had said only its progress).
    assert NO_SEARCH.format(1) in err
    doc = json.loads(out)
    assert doc == json.loads((tmp_path / "f" / "fit.json").read_text())
    assert doc["stopped"].startswith("the unlimited run exited with code 1: ")
    # No answer: `fits` is unknown, not "does not fit" (false had read so to a script).
    assert (doc["min_memory_bytes"], doc["recommended_bytes"], doc["fits"]) == (None, None, None)
    assert doc["probes"] == []
    assert (doc["reference"]["termination"], doc["reference"]["exit_code"]) == ("exited", 1)


def test_the_workloads_failure_takes_precedence_over_a_budget(
    capfd: pytest.CaptureFixture[str],
) -> None:
    rc, out, _ = _fit(capfd, "--backend", "fake", "--max-memory-need", "1g", "--", "false")
    assert rc == 1 and "budget" not in out


class LimitSeen(FakeBackend):
    """The scripted backend, with the run's memory limit in the workload's environment
    (``FAKE_MEMORY_LIMIT``, bytes; empty: none) and a 64 MiB peak over an 8 MiB floor."""

    def __init__(self) -> None:
        super().__init__(linear(memory_bytes=8 * MIB, peak_bytes=64 * MIB))

    def launch(self, spec: RunSpec) -> FakeRun:
        limit = spec.limits.memory
        env = {**spec.env, "FAKE_MEMORY_LIMIT": "" if limit is None else str(limit)}
        return super().launch(dataclasses.replace(spec, env=env))


@pytest.fixture
def limit_seen() -> Iterator[str]:
    register_backend("fake-limit-seen", LimitSeen)
    yield "fake-limit-seen"
    unregister_backend("fake-limit-seen")


NEEDS_32M = f'sleep 0.05; [ -z "$FAKE_MEMORY_LIMIT" ] || [ "$FAKE_MEMORY_LIMIT" -ge {32 * MIB} ]'
"""Exits 1 under a limit below 32 MiB: as a script that catches ``MemoryError`` does, with no
OOM kill; without a limit it succeeds."""


def test_an_exit_under_a_tight_limit_does_not_fit_there(
    capfd: pytest.CaptureFixture[str], limit_seen: str
) -> None:
    rc, out, err = _fit(capfd, "--backend", limit_seen, "--json", "--tolerance", "1000%",
                        "--", "sh", "-c", NEEDS_32M)  # fmt: skip
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["stopped"] is None
    answer = doc["min_memory_bytes"]
    assert 32 * MIB <= answer <= 32 * MIB + doc["resolution_bytes"]
    failing = [p for p in doc["probes"] if p["limit_bytes"] < 32 * MIB]
    assert failing  # the floor (8 MiB) at least
    for p in failing:
        assert not p["ok"] and p["verdict"] == "exit 1 (unlimited: 0)", p
        assert (p["termination"], p["exit_code"], p["oom_kills"]) == ("exited", 1, 0)
        assert len(p["wall_s"]) == 1  # a failed run is not repeated "in doubt"
    assert all(p["ok"] for p in doc["probes"] if p["limit_bytes"] >= 32 * MIB)


REFUSES_A_SMALL_LIMIT = (
    f'sleep 0.05; [ -z "$FAKE_MEMORY_LIMIT" ] || [ "$FAKE_MEMORY_LIMIT" -ge {100 * MIB} ]'
)
"""Exits 1 under a limit below 100 MiB, whatever it uses (a 64 MiB peak), as a script that
reads its limit and refuses a small one does; without a limit it succeeds."""


def test_a_command_that_fails_under_any_limit_has_no_answer(
    capfd: pytest.CaptureFixture[str], limit_seen: str, tmp_path: Path
) -> None:
    """The peak is probed after a failure other than an OOM kill; it had been answered
    untried ("smallest memory: 27.1MiB (the unlimited run's peak, not probed …)", exit 0)."""
    rc, out, err = _fit(capfd, "--backend", limit_seen, "--out", str(tmp_path / "f"),
                        "--", "sh", "-c", REFUSES_A_SMALL_LIMIT)
    assert rc == 3, (out, err)
    doc = json.loads((tmp_path / "f" / "fit.json").read_text())
    assert (doc["min_memory_bytes"], doc["fits"]) == (None, False)
    top = doc["probes"][-1]
    assert (top["limit_bytes"], top["verdict"]) == (64 * MIB, "exit 1 (unlimited: 0)")
    assert all(not p["ok"] for p in doc["probes"])
    assert len(doc["probes"]) == doc["max_probes"]
    assert "smallest memory" not in out
    assert (
        "no memory limit found: the command fails under a limit for a reason other than "
        "memory: at 64.0MiB (the unlimited run's peak) it ended exit 1 (unlimited: 0)"
    ) in out


def test_the_curve_shows_a_probes_exit_code_as_run_does(
    capfd: pytest.CaptureFixture[str], limit_seen: str
) -> None:
    rc, out, _ = _fit(capfd, "--backend", limit_seen, "--tolerance", "1000%",
                      "--", "sh", "-c", NEEDS_32M)  # fmt: skip
    assert rc == 0
    # The first probe: the 8 MiB floor and the room a limit must leave over it (1 MiB of
    # slack, 1 MiB a reading may lag on the fake host's 2 CPUs).
    floor = next(line for line in out.splitlines() if line.startswith("10.0MiB "))
    assert "exited (1)" in floor and "exit 1 (unlimited: 0)" in floor
    assert "smallest memory: 32.8MiB" in out  # bisected from 10 MiB to 32 MiB + 1.3 MiB


def test_probe_row_end_is_the_results_tables() -> None:
    for r, end in (
        (make_result(exit_code=1), "exited (1)"),
        (make_result(exit_code=0), "exited"),
        (make_result(termination=Termination.OOM, exit_code=137), "oom (137)"),
    ):
        cells = probe_row(Probe(16 * MIB, (r,), Verdict(False, "x")), 1.5)
        assert r.end == end
        assert cells[CURVE.index("END")] == r.end == row(r)[-1]
    # One OOM kill of three runs: said with its count, not as the last run's plain end.
    oom = make_result(termination=Termination.OOM, exit_code=137)
    mixed = (make_result(exit_code=0), oom, make_result(exit_code=0))
    cells = probe_row(Probe(16 * MIB, mixed, Verdict(False, "oom")), 1.5)
    assert cells[CURVE.index("END")] == "oom (137) in 1 of 3"
    cells = probe_row(Probe(16 * MIB, (oom, oom), Verdict(False, "oom")), 1.5)
    assert cells[CURVE.index("END")] == "oom (137)"  # every run the same: the end alone
    timeout = make_result(termination=Termination.TIMEOUT, exit_code=143)
    cells = probe_row(Probe(16 * MIB, (oom, timeout, oom), Verdict(False, "oom")), 1.5)
    assert cells[CURVE.index("END")] == "oom (137) in 2 of 3, timeout (143) in 1 of 3"
    failed_row = probe_row(Probe(16 * MIB, (make_result(exit_code=1),), Verdict(False, "x")), 1.5)
    assert failed_row[CURVE.index("END")] == "exited (1)"
    assert failed_row[CURVE.index("VS UNLIMITED")] == "-"  # a failure's time is no speed


def test_succeeded_and_failed() -> None:
    from edgeprof.sweeps.fit_reference import failed, succeeded

    assert succeeded(make_result())
    assert not succeeded(make_result(exit_code=1))
    assert not succeeded(make_result(exit_code=None))
    assert not succeeded(make_result(termination=Termination.OOM, exit_code=137))
    assert failed(make_result(exit_code=2)).startswith("the unlimited run exited with code 2: ")
    oom = make_result(termination=Termination.OOM, exit_code=137)
    assert failed(oom) == "the unlimited run was OOM-killed" + FAILS
    # The signal by its name, and why no limit fits (it had read "ended: signaled").
    segv = make_result(termination=Termination.SIGNALED, exit_code=None, signal=11)
    assert failed(segv) == "the unlimited run was killed by SIGSEGV" + FAILS


def test_a_squeezed_run_that_fails_gives_no_estimate() -> None:
    req = FitRequest(run=RunRequest(command=("false",)), one_run=True)
    o = _one_run([make_result(exit_code=1)], None, req, None, None)
    assert o.answer is None and o.stopped is not None
    assert o.stopped.startswith("the squeezed run exited with code 1: ")
    assert fit_exit_code([o]) == 1


def test_two_one_model_fits_compare_by_their_need(
    capfd: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A one-model ``fit.json`` is the fit itself, its ``fits`` the verdict (a bool): compare
    reads it as a fit, by the file or by its ``--out`` directory (it had refused the file as
    "not an edgeprof result" and compared the directory's unlimited runs instead)."""
    for name in ("base", "cur"):
        rc, out, err = _fit(capfd, "--backend", "fake", "--out", str(tmp_path / name), "--", "true")
        assert rc == 0, (out, err)
        assert isinstance(json.loads((tmp_path / name / "fit.json").read_text())["fits"], bool)
    for base, cur in [("base/fit.json", "cur/fit.json"), ("base", "cur")]:
        rc, out, err = _fit_compare(capfd, tmp_path / base, tmp_path / cur)
        assert rc == 0, (out, err)
        assert "memory need" in out and "true" in out
        assert "wall time" not in out  # the fits' needs, not the unlimited runs
    # A fit of a later schema is refused in one line, not read as if it were this one's; a
    # fit written before the version was published (none) is read as version 1.
    later = tmp_path / "cur" / "fit.json"
    doc = json.loads(later.read_text())
    assert doc["schema_version"] == 1
    for version, rc_expected in ((None, 0), (2, 2), (True, 2)):
        later.write_text(json.dumps({**doc, "schema_version": version}))
        rc, out, err = _fit_compare(capfd, tmp_path / "base", later)
        assert rc == rc_expected, (version, out, err)
        if rc_expected:
            assert err == (
                f"edgeprof: error: {later}: fit 1: unsupported fit schema_version "
                f"{version} (this edgeprof reads 1)\n"
            )
    later.write_text(json.dumps(doc))  # the tier's conftest validates every fit.json left


def _fit_compare(
    capfd: pytest.CaptureFixture[str], base: Path, cur: Path
) -> tuple[int, str, str]:
    code = main(["compare", str(base), str(cur)])
    out, err = capfd.readouterr()
    return code, out, err


def test_a_fit_interrupted_before_its_first_unlimited_run_ends_as_interrupted(
    capfd: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C in the reference's warm-up leaves no unlimited run: fit says it was interrupted
    and exits 130, with its fit.json (it had ended in an IndexError traceback)."""
    import edgeprof.sweeps.fit as fit_module
    from edgeprof.sweeps.request import RunJob, RunOutcome
    from edgeprof.sweeps.sweep import SweepResult

    def interrupted(job: RunJob, **kw: object) -> RunOutcome:
        return RunOutcome(SweepResult(job.plan, interrupted=True), [])

    monkeypatch.setattr(fit_module, "execute", interrupted)
    rc, out, err = _fit(capfd, "--backend", "fake", "--out", str(tmp_path / "f"), "--", "true")
    assert rc == 130, (out, err)
    assert "no search: the unlimited run ended: interrupted" in out
    assert f"edgeprof: wrote {tmp_path / 'f' / 'fit.json'}\n" in err  # as run's files say it
    doc = json.loads((tmp_path / "f" / "fit.json").read_text())
    assert (doc["stopped"], doc["reference"], doc["probes"]) == (
        "the unlimited run ended: interrupted", None, []
    )


def test_the_reference_is_capped_where_the_backend_holds_a_memory_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``MemAvailable`` of the runs' machine, where the backend can hold a memory limit: not
    on the process backend (it cannot), nor where the figure is unknown."""
    from edgeprof.backends import host_resources
    from edgeprof.backends.host_resources import Ceiling
    from edgeprof.backends.process import ProcessBackend
    from edgeprof.sweeps.fit_reference import AVAILABLE, reference_cap
    from edgeprof.sweeps.request import RunJob

    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:  8000000 kB\nMemFree:  1 kB\nMemAvailable:    50000 kB\n")
    monkeypatch.setattr(host_resources, "MEMINFO", meminfo)
    job = RunJob(RunRequest(command=("true",)), plan=None, budgets=None)  # type: ignore[arg-type]
    assert reference_cap(job) is None  # no backend yet
    fake = FakeBackend()
    assert reference_cap(dataclasses.replace(job, backend=fake)) == (50000 * 1024, AVAILABLE)
    # In whole pages, as the kernel holds it (MemAvailable is in KiB): a reference run's limit
    # in part of a page would have been warned of as a --memory the user never gave.
    meminfo.write_text("MemTotal:  8000000 kB\nMemAvailable:    50001 kB\n")
    monkeypatch.setattr(fake, "page_size", lambda: 4096)
    assert reference_cap(dataclasses.replace(job, backend=fake)) == (50000 * 1024, AVAILABLE)
    # A group the runs are made under with less room (a CI container's --memory): its room.
    group = Path("/sys/fs/cgroup/memory/ci")
    monkeypatch.setattr(fake, "memory_ceilings", lambda: [Ceiling(group, 40 * MIB, 30 * MIB)])
    assert reference_cap(dataclasses.replace(job, backend=fake)) == (
        30 * MIB,
        f"all the room left under the memory limit of {group} (40.0MiB)",
    )
    assert reference_cap(dataclasses.replace(job, backend=ProcessBackend())) is None
    meminfo.write_text("MemTotal:  8000000 kB\nMemAvailable:    5000 kB\n")  # under 6 MiB
    assert reference_cap(dataclasses.replace(job, backend=FakeBackend())) is None
    meminfo.write_text("MemTotal:  8000000 kB\n")  # a kernel before 3.14 has no MemAvailable
    assert reference_cap(dataclasses.replace(job, backend=FakeBackend())) is None


def test_an_oom_kill_at_the_cap_says_the_host_is_too_small() -> None:
    from edgeprof.model import Limits
    from edgeprof.sweeps.fit_reference import Cap, failed

    cap = Cap(48 * MIB, "all the room left under the memory limit of /g (64.0MiB)")
    oom = make_result(termination=Termination.OOM, exit_code=137, limits=Limits(memory=cap.bytes))
    assert failed(oom, cap=cap) == (
        "the unlimited run was OOM-killed at 48.0MiB, all the room left under the memory "
        "limit of /g (64.0MiB) when it started: the command needs more than it can have here"
    )
    assert failed(oom) == "the unlimited run was OOM-killed" + FAILS  # no cap: nothing of the host


def test_a_reference_the_timeout_stopped_names_the_fix_not_a_failure() -> None:
    """``fit --timeout 3 -- python leak.py --iterations 100000`` (a tester's service): the
    command did not fail, the user's --timeout stopped it; it had been said to "fail
    without a memory limit" (exit 143), with no way out."""
    from edgeprof.model import LatencyStats, Limits
    from edgeprof.sweeps.fit_reference import Cap, failed

    cap = Cap(48 * MIB, "all the room left under the memory limit of /g (64.0MiB)")
    timeout = make_result(termination=Termination.TIMEOUT, exit_code=143, wall_s=3.0178,
                          limits=Limits(memory=cap.bytes))  # fmt: skip
    fix = (
        ": fit needs a command that ends by itself: give it a fixed number of "
        "requests/iterations, or raise --timeout"
    )
    assert failed(timeout, cap=cap) == (
        "--timeout stopped the unlimited run at 3.02s (peak 120.0MiB)" + fix
    )
    lat = LatencyStats(count=331, mean_s=0.009, p50_s=0.009, p90_s=0.01, p95_s=0.01,
                       p99_s=0.01, max_s=0.02, per_s=110.0)  # fmt: skip
    served = dataclasses.replace(timeout, latency=lat)
    assert failed(served, "squeezed") == (
        "--timeout stopped the squeezed run at 3.02s (peak 120.0MiB, 331 iterations completed)"
        + fix
    )
    unknown = dataclasses.replace(
        timeout, memory=dataclasses.replace(timeout.memory, peak_bytes=None)
    )
    assert failed(unknown) == "--timeout stopped the unlimited run at 3.02s" + fix


def test_report_of_a_fit_says_what_its_runs_are(
    capfd: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The unlimited runs ran under the cap fit sets, which their rows show as a memory
    limit: the report says so, with the answer; the answer alone has no runs to show."""
    out_dir = tmp_path / "f"
    rc, _, _ = _fit(capfd, "--backend", "fake", "--out", str(out_dir), "--", "true")
    assert rc == 0
    doc = json.loads((out_dir / "fit.json").read_text())
    cap, answer = doc["reference"]["memory_cap_bytes"], doc["min_memory_bytes"]
    assert isinstance(cap, int) and isinstance(answer, int)
    assert main(["report", str(out_dir)]) == 0
    out, _ = capfd.readouterr()
    notes = [line for line in out.splitlines() if line.startswith(f"note: {out_dir} ")]
    assert notes == [
        f"note: {out_dir} is edgeprof fit's true: smallest memory {format_binary(answer)} "
        f"({format_binary(doc['recommended_bytes'])} with its margin); its unlimited runs are "
        f"the rows at memory={format_binary(cap)}, the cap fit sets (the room this host had), "
        "not a device's limit"
    ]
    assert f"true (memory={format_binary(cap)})" in out  # the rows the note explains
    assert main(["report", str(out_dir / "fit.json")]) == 2
    _, err = capfd.readouterr()
    assert err.strip() == (
        f"edgeprof: error: {out_dir / 'fit.json'} is edgeprof fit's answer, not runs: report "
        "reads the runs of fit --out's directory; compare reads two fit.json"
    )


def test_a_backend_that_cannot_limit_memory_is_refused_before_any_run(
    capfd: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The process backend: its unlimited runs had all been made, then the first probe was
    refused as "--memory: …" (never given), exit 2, leaving DIR/reference and no fit.json."""
    out = tmp_path / "f"
    rc, stdout, err = _fit(capfd, "--backend", "process", "--out", str(out), "--", "true")
    assert rc == 2 and stdout == ""
    assert err.startswith(
        "edgeprof: error: edgeprof fit searches with memory limits: the process backend "
        "cannot limit memory: "
    )
    assert err.count("\n") == 1 and "unlimited" not in err
    assert not out.exists()


def test_a_ceiling_over_the_hosts_memory_is_refused_as_run_refuses_it(
    capfd: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``fit --memory 100g`` on a 23.5 GiB host had said "fits in 100.0GiB with 100.0GiB to
    spare"; ``run --memory 100g`` refuses it, and so does fit now (--allow-over-host lets it
    through, and the spare reads as what it is)."""
    monkeypatch.setattr(FakeBackend, "memory_total", lambda self: 300 * MIB)
    out = tmp_path / "f"
    rc, stdout, err = _fit(capfd, "--backend", "fake", "--memory", "1g", "--out", str(out),
                           "--", "true")
    assert (rc, stdout) == (2, "")
    assert err.endswith(
        "edgeprof: error: --memory 1.0GiB exceeds the memory a run may have here, 300.0MiB "
        "(MemTotal); --allow-over-host to run anyway\n"
    )
    assert not out.exists()
    rc, stdout, err = _fit(capfd, "--backend", "fake", "--memory", "100g", "--allow-over-host",
                           "--", "true")
    assert rc == 0, err
    # true's 6 MiB (the least limit edgeprof sets) and its 2 MiB of room in 100 GiB: 99.99 GiB
    # would print 100.0GiB.  The answer's line, wherever it is: the times of a few-ms `true`
    # may spread past the tolerance, and that warning then follows it.
    assert "fits in 100.0GiB with all but 8.0MiB to spare" in stdout.splitlines(), stdout


def test_a_reference_spread_wider_than_the_tolerance_is_warned_of(
    capfd: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``unlimited: wall 0.470s (2 runs, spread 90%)`` under a 10 % tolerance had gone on
    silently.  The second measured run (after the warm-up and the first) is the slow one."""
    count = tmp_path / "count"
    slow_second = (
        f'n=$(cat {count} 2>/dev/null || echo 0); echo $((n + 1)) > {count}; '
        'if [ "$n" -eq 2 ]; then sleep 1; else sleep 0.01; fi'  # a 0.01 s run as slow: 0.9 s late
    )
    out = tmp_path / "f"
    rc, _, err = _fit(capfd, "--backend", "fake", "--out", str(out), "--",
                      "sh", "-c", slow_second)
    assert rc == 0, err
    walls = json.loads((out / "fit.json").read_text())["reference"]["wall_s"]
    noise = (max(walls) - min(walls)) / min(walls)
    assert noise > 0.10
    warning = (
        f"edgeprof: warning: sh: the unlimited runs' times spread {100 * noise:.0f}%, more than "
        "the 10% tolerance: a probe's verdict may be that noise, not its limit; give more "
        "reference runs (--repeat N), a quieter host, or a larger --tolerance\n"
    )
    assert warning in err
    # Said once, before the first probe.
    assert err.index(warning) < err.index("edgeprof fit: sh: 8.0MiB")
    # Within the tolerance: not said (runs of 0.1 s spread 1000 % only past 1.1 s, which a
    # stalled host could make them: then it is said, as it must be).
    rc, stdout, err = _fit(capfd, "--backend", "fake", "--tolerance", "1000%",
                      "--json", "--", "sleep", "0.1")
    walls = json.loads(stdout)["reference"]["wall_s"]
    assert rc == 0 and ("times spread" in err) == (max(walls) > 11 * min(walls)), err


def test_a_command_killed_by_a_signal_unlimited_names_the_signal(
    capfd: pytest.CaptureFixture[str],
) -> None:
    rc, out, err = _fit(capfd, "--backend", "fake", "--", "sh", "-c", "kill -SEGV $$")
    assert rc == 128 + 11, (out, err)
    assert "no search: the unlimited run was killed by SIGSEGV" + FAILS + "\n" in out


def _interrupted_in(where: str, after: int = 0) -> Callable[..., Any]:
    """``execute``, but the sweep whose directory is ``where`` is Ctrl-C'd after ``after``
    complete runs, between two runs: the sweep is flagged, no run's termination says so."""
    from edgeprof.sweeps.request import RunJob, RunOutcome, execute
    from edgeprof.sweeps.sweep import SweepResult

    def run(job: RunJob, **kw: Any) -> RunOutcome:
        if job.request.out is None or job.request.out.name != where:
            return execute(job, **kw)
        if not after:
            return RunOutcome(SweepResult(job.plan, interrupted=True, stopped="interrupted"), [])
        done = execute(dataclasses.replace(job, plan=dataclasses.replace(job.plan,
                                                                         repeat=after)), **kw)
        result = SweepResult(job.plan, runs=done.sweep.runs, interrupted=True,
                             stopped="interrupted")  # fmt: skip
        return RunOutcome(result, list(done.results))

    return run


def test_a_search_interrupted_after_its_probes_says_what_they_showed(
    capfd: pytest.CaptureFixture[str], limit_seen: str, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ctrl-C in the third probe: fit had said "no search: interrupted" with 2 probes in
    fit.json."""
    import edgeprof.sweeps.fit as fit_module

    # By the probe's directory, not a count of calls: a probe in doubt (a slow run on a busy
    # host) makes a second batch, and the fourth call had been that batch's.
    monkeypatch.setattr(fit_module, "execute", _interrupted_in("probe-03"))
    out = tmp_path / "f"
    rc, stdout, err = _fit(capfd, "--backend", limit_seen, "--tolerance", "1000%", "--out",
                           str(out), "--", "sh", "-c", NEEDS_32M)
    assert rc == 130, (stdout, err)
    doc = json.loads((out / "fit.json").read_text())
    first, second = doc["probes"]
    assert (first["limit_bytes"], first["ok"]) == (10 * MIB, False)  # the floor + room: exit 1
    assert second["ok"] and second["limit_bytes"] >= 32 * MIB
    said = (
        f"the search was interrupted after 2 probes: it fits in "
        f"{format_binary(second['limit_bytes'])}, not in 10.0MiB (exit 1 (unlimited: 0)); "
        "no answer"
    )
    assert doc["stopped"] == said and doc["fits"] is None  # an interrupted tester's `false`
    assert stdout.splitlines()[-1] == said and "no search" not in stdout
    assert "10.0MiB " in stdout  # the curve of the probes made


def test_a_ctrl_c_between_a_doubted_probes_batches_stops_the_search(
    capfd: pytest.CaptureFixture[str], limit_seen: str, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A probe in doubt makes a second batch; Ctrl-C before it had been lost (no run was
    interrupted) and the probe judged on its first run."""
    import edgeprof.sweeps.fit as fit_module

    monkeypatch.setattr(fit_module, "in_doubt", lambda *a, **kw: True)
    monkeypatch.setattr(fit_module, "execute", _interrupted_in("probe-02-again"))
    out = tmp_path / "f"
    rc, stdout, err = _fit(capfd, "--backend", limit_seen, "--tolerance", "1000%", "--out",
                           str(out), "--", "sh", "-c", NEEDS_32M)  # fmt: skip
    assert rc == 130, (stdout, err)
    doc = json.loads((out / "fit.json").read_text())
    assert [p["limit_bytes"] for p in doc["probes"]] == [10 * MIB]  # the second not judged
    assert doc["stopped"].startswith("the search was interrupted after 1 probe"), doc["stopped"]
    assert doc["fits"] is None and not (out / "probe-03").exists()


def test_a_ctrl_c_between_the_unlimited_runs_stops_before_the_search(
    capfd: pytest.CaptureFixture[str], limit_seen: str, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import edgeprof.sweeps.fit as fit_module

    monkeypatch.setattr(fit_module, "execute", _interrupted_in("reference", after=1))
    out = tmp_path / "f"
    rc, stdout, err = _fit(capfd, "--backend", limit_seen, "--tolerance", "1000%", "--out",
                           str(out), "--", "sh", "-c", NEEDS_32M)  # fmt: skip
    assert rc == 130, (stdout, err)
    doc = json.loads((out / "fit.json").read_text())
    assert doc["probes"] == [] and doc["fits"] is None, doc
    assert doc["stopped"] == "the unlimited run ended: interrupted", doc["stopped"]
    assert doc["reference"]["termination"] == "exited"  # the one run made, complete
    assert not (out / "probe-01").exists()


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ["--memory", "512m,1g"],
            "--memory 512m,1g: edgeprof fit takes one memory limit: fit once without --memory "
            "for the need and read each board's memory against it, or fit once per value "
            "(--memory 512m, then --memory 1g)",
        ),
        (
            ["--cpus", "1,2"],
            "--cpus 1,2: edgeprof fit takes one CPU setting: fit once per value (--cpus 1, then "
            "--cpus 2)",
        ),
    ],
)
def test_a_list_of_settings_is_one_line_before_any_run(
    capfd: pytest.CaptureFixture[str], tmp_path: Path, args: list[str], said: str
) -> None:
    """``fit --memory 512m,1g`` and ``fit --cpus 1,2`` had been a traceback ("too many values
    to unpack" at sweeps/fit.py:97), exit 1 (a tester's)."""
    out = tmp_path / "f"
    rc, stdout, err = _fit(capfd, "--backend", "fake", "--out", str(out), *args, "--", "true")
    assert (rc, stdout, err) == (2, "", f"edgeprof: error: {said}\n")
    assert not out.exists()


def test_a_probes_time_is_shown_in_the_run_reports_unit() -> None:
    """A latency to two decimals in the unit format_seconds picks, as ``run``'s latency table
    shows it; a wall time to one.  Seconds to three decimals had shown a tester's 1.04 ms
    p50 as ``0.001`` beside the unlimited ``0.002s`` and "-14%"."""
    p50 = [make_result(latency=latency(s)) for s in (0.00104, 0.00098, 0.00131)]
    cells = probe_row(Probe(16 * MIB, tuple(p50), Verdict(True, "fits")), 0.00121)
    assert cells[CURVE.index("TIME")] == "1.04ms (3 runs)"
    assert cells[CURVE.index("VS UNLIMITED")] == "-14%"
    assert format_time(Timing(LATENCY, 0.0000076)) == "7.60µs"
    assert format_time(Timing(LATENCY, 2.5)) == "2.500s"
    walls = (make_result(wall_s=0.4123),)
    assert format_time(median_time(walls)) == "412.3ms"
    assert probe_row(Probe(16 * MIB, walls, Verdict(True, "fits")), 0.4)[1] == "412.3ms"
    assert format_time(Timing(UNCONTENDED, 1.5)) == "1.50s"
    # A probe timed otherwise than the unlimited runs (an OOM kill reports no latency) names
    # its time's metric; one timed alike does not.
    oom = (make_result(wall_s=1.39, termination=Termination.OOM),)
    assert probe_row(Probe(16 * MIB, oom, Verdict(False, "oom")), 0.00121, LATENCY)[1] == (
        "1.39s wall"
    )
    assert probe_row(Probe(16 * MIB, tuple(p50), Verdict(True, "fits")), 0.00121, LATENCY)[
        1
    ] == "1.04ms (3 runs)"


def test_fit_of_a_command_the_timeout_stops_says_so(capfd: pytest.CaptureFixture[str]) -> None:
    """The whole command: one ``no search`` line that blames the timeout, not the command."""
    rc, out, _ = _fit(capfd, "--backend", "fake", "--timeout", "0.3", "--", "sleep", "5")
    assert rc == 143, out
    said = [line for line in out.splitlines() if line.startswith("no search:")]
    assert len(said) == 1, out
    assert said[0].startswith("no search: --timeout stopped the unlimited run at 0.")
    assert said[0].endswith(
        ": fit needs a command that ends by itself: give it a fixed number of "
        "requests/iterations, or raise --timeout"
    )
    assert "fails without a memory limit" not in out


def test_fit_of_a_service_that_shuts_down_cleanly_exits_143(
    capfd: pytest.CaptureFixture[str],
) -> None:
    """A service that traps --timeout's SIGTERM and exits 0 (a soak tester's ``until_term``):
    no search, and the code of the SIGTERM that stopped it, 143, as ``sleep`` gets; it had
    been 130, "interrupted", though nothing interrupted edgeprof."""
    service = "trap 'exit 0' TERM; sleep 5 & wait"
    rc, out, _ = _fit(capfd, "--backend", "fake", "--timeout", "0.3", "--", "sh", "-c", service)
    assert rc == 143, out
    assert "no search: --timeout stopped the unlimited run at 0." in out
    # Its own code stays its own: one that exits 5 on SIGTERM gets 5.
    rc, out, _ = _fit(capfd, "--backend", "fake", "--timeout", "0.3", "--", "sh", "-c",
                      "trap 'exit 5' TERM; sleep 5 & wait")  # fmt: skip
    assert rc == 5, out
