"""Budgets: parsing (options and YAML file), precedence, and breach detection per cell."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from edgeprof.analysis.budget_checks import Status, check_budgets, unused_models
from edgeprof.analysis.budgets import (
    METRICS,
    Budgets,
    budgets_from_dict,
    budgets_from_options,
    load_budget_file,
)
from edgeprof.errors import ConfigError
from edgeprof.model import MemoryParts, RunResult, Termination, Throttling
from tests.unit.gating_helpers import MIB, run

NO_OPTIONS: dict[str, str | None] = {k: None for k in METRICS}


def test_option_values_parse_to_base_units() -> None:
    b = budgets_from_options(
        None,
        {
            **NO_OPTIONS,
            "wall": "2m",
            "cpu_time": "250ms",
            "peak_memory": "512m",
            "avg_memory": "1.5g",
            "latency_p95": "40ms",
            "latency_p99": "0.06s",
            "latency_max": "80ms",
        },
    )
    assert b.for_label("any") == {
        "wall": 120.0,
        "cpu_time": 0.25,
        "peak_memory": 512 * MIB,
        "avg_memory": 1.5 * 2**30,
        "latency_max": 0.08,
        "latency_p99": 0.06,
        "latency_p95": 0.04,
    }
    assert not budgets_from_options(None, NO_OPTIONS)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("wall", "ten", "--max-wall: invalid wall time 'ten'"),
        ("cpu_time", "-1s", "--max-cpu-time: invalid CPU time '-1s'"),
        ("peak_memory", "lots", "--max-peak-memory: invalid size 'lots'"),
        ("latency_p95", "0ms", "--max-latency-p95: invalid latency p95 '0ms': must be greater"),
        ("latency_p95", "0", "--max-latency-p95: '0' has no unit \\(it would be 0 seconds\\)$"),
    ],
)
def test_bad_option_names_the_option(key: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError, match="^" + message):
        budgets_from_options(None, {**NO_OPTIONS, key: value})


def test_budget_file_default_models_and_precedence(tmp_path: Path) -> None:
    f = tmp_path / "budgets.yml"
    f.write_text(
        "# CI budgets\n"
        "default:\n"
        "  wall: 10s\n"
        "  peak_memory: 512m\n"
        "models:\n"
        "  big.onnx:\n"
        "    wall: 20\n"
        "    cpu_time: 4s\n"
    )
    b = load_budget_file(f)
    assert b.source == str(f)
    assert b.for_label("small.onnx") == {"wall": 10.0, "peak_memory": 512 * MIB}
    assert b.for_label("big.onnx") == {"wall": 20.0, "cpu_time": 4.0, "peak_memory": 512 * MIB}
    # The command line wins over the model's entry and the default.
    b2 = budgets_from_options(f, {**NO_OPTIONS, "wall": "1s"})
    assert b2.for_label("big.onnx")["wall"] == 1.0 and b2.for_label("x")["wall"] == 1.0
    assert b2.for_label("big.onnx")["cpu_time"] == 4.0
    # Both named where the checks are headed: the 1s came from the command line.
    assert (b.sources, b2.sources) == (str(f), f"{f}, command line")
    assert budgets_from_options(None, {**NO_OPTIONS, "wall": "1s"}).sources == "command line"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("default:\n  wal: 10s\n", r":2: unknown budget 'wal' \(known: wall, cpu_time"),
        ("default:\n  wall: 10s\n  peak_memory: big\n", r":3: peak_memory: invalid size 'big'"),
        ("models:\n  a.onnx:\n    wall: [1, 2]\n", r":3: wall: expected a single value"),
        ("default:\n  wall: true\n", r":2: wall: expected a duration"),
        ("limits:\n  wall: 1\n", r":1: unknown section 'limits' \(expected default or models\)"),
        ("default: 5\n", r":1: default must be a mapping"),
        ("default:\n  wall: 1\n bad", r":3: "),
        ("", r": the budget file is empty"),
        ("default: {}\n", r": the budget file sets no budget"),
    ],
)
def test_budget_file_errors_name_file_and_line(tmp_path: Path, text: str, message: str) -> None:
    f = tmp_path / "b.yml"
    f.write_text(text)
    with pytest.raises(ConfigError, match="^" + str(f).replace(".", r"\.") + message):
        load_budget_file(f)


def test_missing_budget_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read budget file"):
        load_budget_file(tmp_path / "nope.yml")


def test_breach_is_judged_on_the_median_of_the_cell() -> None:
    # One disturbed repeat (3.0 s) neither fails the cell nor moves its value much.
    results = [run(wall=w) for w in (1.0, 3.0, 1.1)] + [run(wall=1.5, cpus=0.5)] * 3
    checks = check_budgets(results, Budgets(default={"wall": 1.2}))
    assert [(c.setting, c.value, c.runs, c.status) for c in checks] == [
        ("cpus=1, memory=1.0GiB", 1.1, 3, Status.PASS),
        ("cpus=0.5, memory=1.0GiB", 1.5, 3, Status.BREACH),
    ]
    assert checks[1].describe() == (
        "m.onnx (cpus=0.5, memory=1.0GiB): wall time 1.50s exceeds the budget 1.20s "
        "(median of 3 runs)"
    )


def test_value_equal_to_budget_passes_and_metrics_are_in_table_order() -> None:
    checks = check_budgets(
        [run(cpu=0.5, peak_mib=100, avg_mib=90)],
        Budgets(default={"avg_memory": 80 * MIB, "peak_memory": 100 * MIB, "cpu_time": 0.5}),
    )
    assert [(c.metric.key, c.status) for c in checks] == [
        ("cpu_time", Status.PASS),
        ("peak_memory", Status.PASS),
        ("avg_memory", Status.BREACH),
    ]
    assert checks[2].describe().endswith("avg memory 90.0MiB exceeds the budget 80.0MiB (1 run)")


def test_a_median_equal_to_the_budget_but_for_float_rounding_passes() -> None:
    # (0.2 + 0.4) / 2 is 0.30000000000000004: a run of exactly the budget is within it.
    [check] = check_budgets([run(wall=0.2), run(wall=0.4)], Budgets(default={"wall": 0.3}))
    assert check.value == 0.30000000000000004 and check.status is Status.PASS
    assert check.describe().startswith("m.onnx (cpus=1, memory=1.0GiB): wall time 300.0ms within")
    [check] = check_budgets([run(wall=0.2), run(wall=0.4002)], Budgets(default={"wall": 0.3}))
    assert check.status is Status.BREACH  # a tenth of a millisecond over is over


def test_per_model_budgets_apply_to_their_model_only() -> None:
    results = [run(name="a", wall=2.0), run(name="b", wall=2.0)]
    b = Budgets(default={"wall": 3.0}, models={"b": {"wall": 1.0}, "typo": {"wall": 1.0}})
    assert [(c.label, c.ok) for c in check_budgets(results, b)] == [("a", True), ("b", False)]
    assert unused_models(results, b) == ["typo"]


def test_failed_runs_do_not_count_and_a_cell_without_success_is_not_judged() -> None:
    results = [
        run(name="a", wall=9.0, exit_code=1),
        run(name="a", wall=1.0),
        run(name="b", termination=Termination.OOM, exit_code=137),
    ]
    checks = check_budgets(results, Budgets(default={"wall": 2.0}))
    assert [(c.label, c.value, c.status) for c in checks] == [
        ("a", 1.0, Status.PASS),
        ("b", None, Status.NOT_JUDGED),
    ]
    assert not checks[1].ok
    # The failed run's figure is shown, not called "not measured" beside a table showing it.
    said = "wall time not judged: its one run failed (oom; 1.00s); budget 2.00s"
    assert said in checks[1].describe()
    assert checks[1].value_text == "1.00s (1 failed run)" and checks[0].value_text == "1.00s"


def test_a_cell_whose_runs_all_failed_names_the_last_runs_figure_in_every_view() -> None:
    """The tester's fail1: runs of 120 ms and 91.9 ms, both exit 4.  The page and the
    summary had read "❌ not measured" beside 91.9 ms, the terminal "not judged", and none
    said whose figure it was."""
    from edgeprof.report.budget_table import budget_lines, budget_rows

    runs = [run(name="fail1", wall=w, exit_code=4) for w in (0.120, 0.0919)]
    [check] = check_budgets(runs, Budgets(default={"wall": 1.0}))
    assert (check.status, check.ok, check.failed, check.made) == (Status.NOT_JUDGED, False, 2, 2)
    assert check.describe() == (
        "fail1 (cpus=1, memory=1.0GiB): wall time not judged: every run failed (exit 4 ×2; "
        "the last run's 91.9ms); budget 1.00s"
    )
    row = ["fail1", "cpus=1, memory=1.0GiB", "wall time", "91.9ms (last of 2 failed runs)", "1.00s"]
    assert budget_rows([check]) == [[*row, "❌ not judged"]]
    assert budget_rows([check], emoji=False) == [[*row, "not judged"]]
    assert budget_lines([check])[-1] == f"- {check.describe()}"


def test_an_average_memory_budget_on_runs_too_short_for_one_says_why() -> None:
    short = run()
    short = dataclasses.replace(short, memory=dataclasses.replace(short.memory, avg_bytes=None))
    (check,) = check_budgets([short], Budgets(default={"avg_memory": 100 * MIB}))
    assert check.status is Status.NOT_MEASURED and not check.ok
    assert check.reason == (
        "fewer than two of each run's readings (every 0.1s) fell while it ran: --interval "
        "0.01 reads them finer"
    )


def test_latency_budget_fails_when_latency_was_not_measured() -> None:
    b = Budgets(overrides={"latency_p95": 0.040})
    missing = check_budgets([run()], b)
    assert [c.status for c in missing] == [Status.NOT_MEASURED]
    # No event at all: the reason is why (tests/unit/test_instrumentation.py has the rest).
    assert missing[0].reason.startswith("no run reported an iteration, a phase or a mark: ")
    measured = check_budgets([run(p95_s=s) for s in (0.030, 0.050, 0.035)], b)
    assert [(c.value, c.status) for c in measured] == [(0.035, Status.PASS)]
    slow = check_budgets([run(p95_s=0.041)], b)
    assert slow[0].status is Status.BREACH



def test_a_latency_budget_says_the_iterations_that_raised() -> None:
    """Its percentile is of the completed iterations: a run 9 of whose 10 raised had passed
    on the one that completed, with no word of the nine."""
    b = Budgets(overrides={"latency_p95": 0.040})
    r = run(p95_s=0.030)
    assert r.latency is not None
    raised = dataclasses.replace(r, latency=dataclasses.replace(r.latency, count=1, raised=9))
    (check,) = check_budgets([raised], b)
    assert check.status is Status.PASS  # the completed iterations' p95, as documented
    assert check.caveat == (
        "^ p95 of fewer iterations than it needs (20) in 1 of 1 run(s) (1 iteration): a point "
        "near the maximum, not an estimate of that percentile; "
        "9 of its 10 iterations raised and are not in the p95 (ITER ... (+N raised) under the "
        "run)"
    )
    assert check.value_text == "30.0ms^"
    assert check.describe().endswith(check.caveat)
    (plain,) = check_budgets([r], b)
    assert plain.caveat == ""


def test_a_breach_by_less_than_a_shown_digit_shows_the_digits_that_differ() -> None:
    """26.2 MiB over a 26.2 MiB budget had read "peak memory 26.2MiB exceeds the budget
    26.2MiB": both figures take the digits that tell them apart, and only where needed."""
    peak = 26.2 * MIB + 20 * 1024  # 20 KiB over: 26.22 MiB
    checks = check_budgets(
        [run(peak_mib=peak / MIB, wall=1.204)],
        Budgets(default={"peak_memory": 26.2 * MIB, "wall": 1.2, "cpu_time": 2.0}),
    )
    by_key = {c.metric.key: c for c in checks}
    assert by_key["peak_memory"].describe().endswith(
        "peak memory 26.22MiB exceeds the budget 26.20MiB (1 run)"
    )
    assert "wall time 1.204s exceeds the budget 1.200s" in by_key["wall"].describe()
    assert "CPU time 800.0ms within the budget 2.00s" in by_key["cpu_time"].describe()
    assert METRICS["peak_memory"].format_apart(100.0, 100.4) == "100B"  # no digit to show


def test_a_check_on_the_runs_left_says_how_many_failed() -> None:
    """3 of 4 runs failed had read "CPU time 126.5ms within the budget 1.00s (1 run)"."""
    results = [run(cpu=1.0, exit_code=1)] * 3 + [run(cpu=0.1265)]
    [check] = check_budgets(results, Budgets(default={"cpu_time": 1.0}))
    assert (check.runs, check.failed, check.made) == (1, 3, 4)
    assert check.describe().endswith(
        "CPU time 126.5ms within the budget 1.00s (1 of 4 runs; 3 failed)"
    )
    results = [run(wall=w) for w in (1.0, 1.1)] + [run(wall=0.5, exit_code=1)]
    [check] = check_budgets(results, Budgets(default={"wall": 2.0}))
    assert check.describe().endswith("(median of 2 of 3 runs; 1 failed)")


def test_the_noise_caveats_mean_takes_the_digits_that_tell_it_from_the_budget() -> None:
    """"peak memory 5.49MiB within the budget 5.50MiB …; … of the mean (5.5MiB ± 58.1KiB)":
    the mean read as the budget itself."""
    peaks = (5.49, 5.45, 5.58, 5.49, 5.52)  # mean 5.506 MiB ± 61.4 KiB (t 2.776), median 5.49
    results = [run(peak_mib=p) for p in peaks]
    [check] = check_budgets(results, Budgets(default={"peak_memory": 5.5 * MIB}))
    assert check.describe().endswith(
        "peak memory 5.49MiB within the budget 5.50MiB (median of 5 runs); the budget lies "
        "within the 95% interval of the geometric mean (5.51MiB [5.4MiB, 5.6MiB]): a re-run "
        "could turn the check; more repeats decide it"
    )
    # A mean that reads apart from the budget keeps its one decimal; so do the bounds, but
    # the one that reads as the budget (5.57 MiB beside 5.56).
    [check] = check_budgets(results, Budgets(default={"peak_memory": 5.56 * MIB}))
    said = (
        "5.6MiB (median of 5 runs); the budget lies within the 95% interval of the geometric "
        "mean (5.5MiB [5.4MiB, 5.57MiB])"
    )
    assert said in check.describe()


def test_budgets_round_trip_through_their_record() -> None:
    """What sweep.json records (``budgets``) reads back to the same checks, headed by where
    they were recorded."""
    from edgeprof.analysis.budgets import budgets_from_dict

    b = Budgets({"wall": 2.0}, {"a.onnx": {"peak_memory": 64.0 * MIB}}, {"cpu_time": 0.3}, "b.yml")
    back = budgets_from_dict(b.to_dict(), "s/sweep.json")
    assert (back.default, back.models, back.overrides) == (b.default, b.models, b.overrides)
    assert back.for_label("a.onnx") == {"wall": 2.0, "cpu_time": 0.3, "peak_memory": 64.0 * MIB}
    assert back.sources == "b.yml, command line, recorded in s/sweep.json"
    with pytest.raises(ConfigError, match=r"^s/sweep.json: budgets: models: a: unknown budget 'x'"):
        budgets_from_dict({"models": {"a": {"x": 1}}}, "s/sweep.json")
    with pytest.raises(ConfigError, match=r"^x: budgets: default: wall: expected a number"):
        budgets_from_dict({"default": {"wall": -1}}, "x")


def _checkpointed(mechanism: str = "cgroup1", file_mib: float = 208.4) -> RunResult:
    """The tester's ``train.py --hidden 4096`` under 1 GiB: a 550.5 MiB peak, 208.4 MiB of
    it the three checkpoints' page cache at the peak sample, anon + shmem + kernel 341.9."""
    r = run(name="python", peak_mib=550.5)
    parts = MemoryParts(
        total=round(550.3 * MIB), anon=round(335.2 * MIB), file=round(file_mib * MIB),
        shmem=0, kernel=round(6.7 * MIB),
    )  # fmt: skip
    memory = dataclasses.replace(r.memory, at_peak=parts, floor_bytes=round(341.9 * MIB))
    return dataclasses.replace(r, memory=memory, mechanism=mechanism)


def test_a_peak_breach_says_how_much_was_page_cache_and_what_gates_on_the_need() -> None:
    budgets = budgets_from_options(None, {**NO_OPTIONS, "peak_memory": "450m"})
    [check] = check_budgets([_checkpointed()], budgets)
    assert check.status is Status.BREACH
    assert check.describe() == (
        "python (cpus=1, memory=1.0GiB): peak memory 550.5MiB exceeds the budget 450.0MiB "
        "(1 run); of which 208.4MiB was page cache (file) at the peak sample, anon + shmem + "
        "kernel 341.9MiB: the kernel drops page cache under a limit rather than fail the run, "
        "so this peak is no need; edgeprof fit --memory 450m gates on what it needs (exit 3 "
        "where it does not fit)"
    )
    # On cgroup v2 a squeezed run's need is a budget of its own too.
    [v2] = check_budgets([_checkpointed("cgroup2")] * 3, budgets)
    assert v2.caveat.endswith(
        "anon + shmem + kernel 341.9MiB (medians): the kernel drops page cache under a limit "
        "rather than fail the run, so this peak is no need; edgeprof fit --memory 450m gates "
        "on what it needs (exit 3 where it does not fit), as run --squeeze "
        "--max-memory-need 450m does"
    )
    # Less page cache than the kernel's charging slack is not worth a word, nor a pass.
    assert check_budgets([_checkpointed(file_mib=0.5)], budgets)[0].caveat == ""
    within = budgets_from_options(None, {**NO_OPTIONS, "peak_memory": "600m"})
    assert check_budgets([_checkpointed()], within)[0].caveat == ""


def test_a_page_cache_median_counts_runs_that_had_none() -> None:
    """One run of three with 10.1 MiB of cache at its peak: the median is 0, no caveat (a
    user's had read "the median … 10.1MiB … this peak is no need")."""
    budgets = budgets_from_options(None, {**NO_OPTIONS, "peak_memory": "300m"})
    runs = [_checkpointed(file_mib=10.1), _checkpointed(file_mib=0), _checkpointed(file_mib=0)]
    [check] = check_budgets(runs, budgets)
    assert check.status is Status.BREACH
    assert check.caveat == ""
    # Two of three: the median is theirs, and a floor beyond the budget is said as such,
    # with no word that the peak is no need.
    [two] = check_budgets([_checkpointed(), _checkpointed(), _checkpointed(file_mib=0)], budgets)
    assert two.caveat == (
        "of which 208.4MiB was page cache (file) at the peak sample, anon + shmem + kernel "
        "341.9MiB (medians), beyond the budget without it"
    )


def test_a_throughput_budget_is_a_floor_and_a_p50_budget_a_ceiling() -> None:
    """The tester's wider model: 2542 → 1443 items/s at the median, p50 24.2 → 42.2 ms, which
    no budget could hold."""
    b = budgets_from_options(
        None, {**NO_OPTIONS, "throughput": "2000/s", "latency_p50": "30ms"}
    )
    assert b.overrides == {"latency_p50": 0.030, "throughput": 2000.0}
    base = [run(p95_s=0.040, p50_s=0.0242, items_per_s=v) for v in (2541.8, 2500.0, 2600.0)]
    wide = [run(p95_s=0.068, p50_s=0.0422, items_per_s=v) for v in (1442.6, 1400.0, 1500.0)]
    ok = check_budgets(base, b)
    assert [(c.metric.key, c.value, c.status) for c in ok] == [
        ("latency_p50", 0.0242, Status.PASS),
        ("throughput", 2541.8, Status.PASS),
    ]
    assert "2542 items/s meets the budget 2000 items/s" in ok[1].describe()
    bad = check_budgets(wide, b)
    assert [(c.value, c.status) for c in bad] == [
        (0.0422, Status.BREACH),
        (1442.6, Status.BREACH),
    ]
    assert "latency p50 (all phases) 42.2ms exceeds the budget 30.0ms" in bad[0].describe()
    assert "throughput (all phases) 1443 items/s falls short of the budget 2000 items/s" in (
        bad[1].describe()
    )
    # Equal to the floor meets it.
    assert check_budgets([run(p95_s=0.04, items_per_s=2000.0)], b)[1].status is Status.PASS


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("0", "--min-throughput: invalid throughput '0': must be a finite number above 0"),
        ("fast", "--min-throughput: invalid throughput 'fast': expected items a second"),
    ],
)
def test_a_bad_throughput_budget_names_the_option(value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        budgets_from_options(None, {**NO_OPTIONS, "throughput": value})


def test_a_tail_over_the_deadline_fails_the_p99_and_max_budgets_the_p95_passes() -> None:
    """A tester's 150 frames, 3 over a 20 ms deadline (own stamps: p95 2.93, p99 20.36, max
    20.74 ms): ``--max-latency-p95 5ms`` passed, and nothing could gate the tail."""
    frames = run(p95_s=0.00293, p99_s=0.02036, max_s=0.02074, iterations=150)
    b = Budgets(overrides={"latency_p95": 0.005, "latency_p99": 0.020, "latency_max": 0.020})
    checks = check_budgets([frames], b)
    assert [(c.metric.key, c.value, c.status) for c in checks] == [
        ("latency_max", 0.02074, Status.BREACH),
        ("latency_p99", 0.02036, Status.BREACH),
        ("latency_p95", 0.00293, Status.PASS),
    ]
    assert checks[1].describe() == (
        "m.onnx (cpus=1, memory=1.0GiB): latency p99 (all phases) 20.4ms exceeds the budget "
        "20.0ms (1 run)"
    )


def test_a_max_budget_is_judged_on_the_largest_run_and_says_so() -> None:
    """The median of three runs' maxima (13.51 ms) had hidden the run that missed its
    deadlines (42.62 ms); a maximum's figure is the cell's largest, with no noise caveat
    about a mean it is not."""
    runs = [run(p95_s=0.005, max_s=m) for m in (0.01003, 0.04262, 0.01351)]
    (check,) = check_budgets(runs, Budgets(default={"latency_max": 0.020}))
    assert (check.value, check.runs, check.status) == (0.04262, 3, Status.BREACH)
    assert check.describe() == (
        "m.onnx (cpus=1, memory=1.0GiB): latency max (all phases) 42.6ms exceeds the budget "
        "20.0ms (largest of 3 runs)"
    )
    # The p99 of 20 iterations each is marked as the latency table marks it.
    (p99,) = check_budgets(runs, Budgets(default={"latency_p99": 0.020}))
    assert p99.few and p99.value_text == "5.0ms^"


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        (
            "latency_p95",
            "20",
            "--max-latency-p95: '20' has no unit (it would be 20 seconds): write 20ms, or 20s "
            "for seconds",
        ),
        (
            "latency_max",
            "1e-2",
            "--max-latency-max: '1e-2' has no unit (it would be 1e-2 seconds): 1e-2 is 10ms in "
            "seconds: write 10ms, or 1e-2ms if you meant milliseconds",
        ),
        (
            "latency_p50",
            " 0.5 ",
            "--max-latency-p50: ' 0.5 ' has no unit (it would be 0.5 seconds): 0.5 is 500ms in "
            "seconds: write 500ms, or 0.5ms if you meant milliseconds",
        ),
        (
            "latency_p95",
            "0.04",
            "--max-latency-p95: '0.04' has no unit (it would be 0.04 seconds): 0.04 is 40ms in "
            "seconds: write 40ms, or 0.04ms if you meant milliseconds",
        ),
        (
            "latency_p95",
            "1.5",
            "--max-latency-p95: '1.5' has no unit (it would be 1.5 seconds): write 1.5ms, or "
            "1.5s for seconds",
        ),
    ],
)
def test_a_latency_budget_without_its_unit_is_refused(key: str, value: str, message: str) -> None:
    """``--max-latency-p95=20`` had been 20 s, passed by every frame ("within the budget
    20.00s"); a whole run's time stays seconds bare, as the budget file documents."""
    with pytest.raises(ConfigError) as info:
        budgets_from_options(None, {**NO_OPTIONS, key: value})
    assert str(info.value) == message
    bare_wall = budgets_from_options(None, {**NO_OPTIONS, "wall": "20", "latency_p95": "20ms"})
    assert bare_wall.for_label("m") == {"wall": 20.0, "latency_p95": 0.02}


def test_a_latency_budget_file_entry_without_its_unit_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "budgets.yml"
    f.write_text("default:\n  wall: 20\n  latency_p95: 20\n")
    with pytest.raises(ConfigError) as info:
        load_budget_file(f)
    assert str(info.value) == (
        f"{f}:3: latency_p95: 20 has no unit (it would be 20 seconds): write 20ms, or 20s for "
        "seconds"
    )
    f.write_text("default:\n  wall: 20\n  latency_p99: 20ms\n  latency_max: 0.1s\n")
    assert load_budget_file(f).default == {"wall": 20.0, "latency_p99": 0.02, "latency_max": 0.1}


def test_a_p50_or_throughput_budget_without_iterations_says_the_latencys_reason() -> None:
    """It had said "the cgroup backend did not measure it" of a workload that reported no
    iterations: only the p95's reason was the latency's."""
    quiet, timed = run(name="quiet"), run(name="timed", p95_s=0.01)
    b = Budgets(default={"latency_p50": 0.04, "latency_max": 0.04, "throughput": 10.0})
    reasons = {(c.label, c.metric.key): c.reason for c in check_budgets([quiet, timed], b)}
    no_latency = "the runs reported no per-iteration latency"
    assert reasons == {
        ("quiet", "latency_max"): no_latency,
        ("quiet", "latency_p50"): no_latency,
        ("quiet", "throughput"): no_latency,
        ("timed", "latency_max"): "",
        ("timed", "latency_p50"): "",
        ("timed", "throughput"): (
            "the iterations gave no items (edgeprof.iteration(items=N) counts them)"
        ),
    }


def _phased(warmup_p95: float = 0.02438, infer_p95: float = 0.00311) -> RunResult:
    """The tester's run: 20 warm-up iterations (p95 24.38 ms) and 100 inferences (p95
    3.11 ms) in phases ``warmup`` and ``infer``, 14.11 ms over all 120."""
    from edgeprof.model import PhaseStats

    def phase(name: str, p95: float, count: int) -> PhaseStats:
        latency = run(p95_s=p95, iterations=count).latency
        return PhaseStats(name, 1, 0.0, 1.0, None, None, None, None, None, latency=latency)

    r = run(p95_s=0.01411, iterations=120)
    phases = (phase("warmup", warmup_p95, 20), phase("infer", infer_p95, 100))
    return dataclasses.replace(r, phases=phases)


def test_a_latency_budget_gates_the_phase_named_and_says_which_rows() -> None:
    """The run-wide p95 (14.11 ms, warm-up included) had passed a 15 ms budget as "latency
    p95 14.1ms": the phase named is gated, and every check names its rows."""
    runs = [_phased()]
    (infer,) = check_budgets(runs, Budgets(overrides={"latency_p95": 0.015}, phase="infer"))
    assert (infer.value, infer.status, infer.phase) == (0.00311, Status.PASS, "infer")
    assert infer.describe() == (
        "m.onnx (cpus=1, memory=1.0GiB): latency p95 of phase infer 3.1ms within the budget "
        "15.0ms (1 run)"
    )
    (warm,) = check_budgets(runs, Budgets(overrides={"latency_p95": 0.015}, phase="warmup"))
    assert (warm.value, warm.status) == (0.02438, Status.BREACH)
    (whole,) = check_budgets(runs, Budgets(overrides={"latency_p95": 0.015}))
    assert (whole.value, whole.status, whole.phase) == (0.01411, Status.PASS, "")
    assert whole.subject == "latency p95 (all phases)"
    assert whole.caveat == (
        "the iterations of phase 'warmup' are in it: --latency-phase (a budget file's "
        "latency_phase) gates one phase"
    )
    # A metric not of iterations is unchanged by the phase.
    (wall,) = check_budgets(runs, Budgets(overrides={"wall": 2.0}, phase="infer"))
    assert (wall.phase, wall.subject, wall.value) == (None, "wall time", 1.0)


def test_a_phase_without_iterations_or_misspelt_is_not_measured() -> None:
    b = Budgets(overrides={"latency_p95": 0.015}, phase="infr")
    (typo,) = check_budgets([_phased()], b)
    assert typo.status is Status.NOT_MEASURED
    assert typo.reason == "no run has a phase 'infr'; its phases: warmup, infer"
    r = _phased()
    empty = dataclasses.replace(r, phases=(dataclasses.replace(r.phases[1], latency=None),))
    (none,) = check_budgets([empty], dataclasses.replace(b, phase="infer"))
    assert none.reason == "phase 'infer' reported no iterations"
    assert check_budgets([empty], dataclasses.replace(b, phase=""))[0].caveat == ""


def test_the_latency_phase_from_the_file_the_options_and_the_record(tmp_path: Path) -> None:
    f = tmp_path / "b.yml"
    f.write_text(
        "default:\n  latency_p95: 15ms\n  latency_phase: infer\n"
        "models:\n  a.py:\n    latency_phase: steady\n    wall: 2s\n"
    )
    b = budgets_from_options(f, {})
    assert (b.phase_for("a.py"), b.phase_for("m.onnx")) == ("steady", "infer")
    assert b.for_label("a.py") == {"wall": 2.0, "latency_p95": 0.015}
    over = budgets_from_options(f, {"latency_phase": "warmup"})
    assert (over.phase_for("a.py"), over.phase_for("m.onnx")) == ("warmup", "warmup")
    back = budgets_from_dict(over.to_dict(), "s/sweep.json")
    assert (back.default_phase, back.model_phases, back.phase) == (
        "infer", {"a.py": "steady"}, "warmup"
    )
    assert "latency_phase" not in Budgets(overrides={"wall": 1.0}).to_dict()
    with pytest.raises(ConfigError) as info:
        budgets_from_options(None, {"wall": "1s", "latency_phase": "infer"})
    # Every option the phase gates, the p99 and max ones too (they had been left out).
    assert str(info.value) == (
        "--latency-phase names the phase of the latency and throughput budgets, and none is "
        "set (--max-latency-max, --max-latency-p99, --max-latency-p95, --max-latency-p50, "
        "--min-throughput)"
    )
    f.write_text("default:\n  latency_p95: 15ms\n  latency_phase: ''\n")
    with pytest.raises(ConfigError, match=r"b.yml:3: latency_phase: expected a phase name"):
        budgets_from_options(f, {})
    with pytest.raises(ConfigError, match=r"^x: budgets: latency_phase: default: expected"):
        budgets_from_dict({"latency_phase": {"default": 3}}, "x")


def test_a_figure_of_every_phases_iterations_is_labelled_where_they_lie_in_several() -> None:
    """A CI summary had ``Latency p95`` 25.8 ms (warm-up included) above the budget row
    ``latency p95 of phase infer`` 9.9 ms, and the terminal's Statistics ``latency p50``
    likewise: both now say ``(all phases)``, as the budget's all-phases check does."""
    from edgeprof.analysis.compare import summarize_cells
    from edgeprof.analysis.metrics import BY_KEY, phases_apart, titled
    from edgeprof.report.ci_summary import render_run_summary
    from edgeprof.report.statistics_tables import statistics_tables

    apart, plain = _phased(), run(p95_s=0.01411, iterations=120)
    assert phases_apart([apart]) and not phases_apart([plain])
    one = dataclasses.replace(apart, phases=apart.phases[1:2])  # infer alone: 100 of 120
    assert phases_apart([one])
    assert apart.latency is not None
    every = dataclasses.replace(one, latency=dataclasses.replace(apart.latency, count=100))
    assert not phases_apart([every])  # one phase holds them all: its figures are the run's
    p95, wall = BY_KEY["latency_p95"], BY_KEY["wall"]
    assert (titled(p95, True), titled(p95, False)) == ("latency p95 (all phases)", "latency p95")
    assert titled(wall, True) == wall.title
    header = render_run_summary([apart], []).splitlines()[2]
    assert "| Latency p95 (all phases) |" in header and "| Wall time |" in header
    assert "| Latency p95 |" in render_run_summary([plain], []).splitlines()[2]
    (table,) = statistics_tables(summarize_cells([apart, apart]))
    metrics = [row[1] for row in table.rows[1:]]
    assert "latency p95 (all phases)" in metrics or "latency p50 (all phases)" in metrics
    assert "wall time" in metrics


def test_compare_holds_the_phase_both_sides_budgets_gate_and_names_its_rows() -> None:
    """Two sweeps gated on ``infer`` had been compared over every phase, warm-up included
    (p95 25.8 ms → 37.3 ms, "+44.8% regression"), with no word of it and no option."""
    from edgeprof.analysis.budgets import compared_phase, recorded_phase
    from edgeprof.analysis.regression import compare_results

    gated = Budgets(default_phase="infer")
    assert recorded_phase(gated) == "infer"
    assert recorded_phase(Budgets(default_phase="infer", model_phases={"a": "x"})) == ""
    assert recorded_phase(Budgets(default_phase="infer", phase="w")) == "w"
    phase, note = compared_phase(gated, gated)
    assert phase == "infer"
    assert note == (
        "latency and throughput are of phase infer, the phase both sides' budgets gate "
        "(sweep.json); --latency-phase '' compares every phase's iterations"
    )
    assert compared_phase(gated, Budgets()) == (
        "",
        "latency and throughput are of every phase's iterations: the baseline's budgets gate "
        "phase infer, the current's all phases; --latency-phase picks one",
    )
    assert compared_phase(Budgets(), Budgets()) == ("", None)
    base = [_phased(), _phased()]
    now = [_phased(infer_p95=0.0062), _phased(infer_p95=0.0063)]
    changes, _ = compare_results(base, now, phase="infer")
    p95 = next(c for c in changes if c.metric.key == "latency_p95")
    assert (p95.subject, p95.base, p95.current) == (
        "latency p95 of phase infer", (0.00311, 0.00311), (0.0062, 0.0063)
    )
    wall = next(c for c in changes if c.metric.key == "wall")
    assert wall.subject == "wall time"
    changes, _ = compare_results(base, now)
    p95 = next(c for c in changes if c.metric.key == "latency_p95")
    assert (p95.subject, p95.base) == ("latency p95 (all phases)", (0.01411, 0.01411))


def test_the_noise_caveats_interval_is_of_the_geometric_mean_never_below_0() -> None:
    """A verifier's p99 budget of 20 ms over runs of 6.59, 20.14 and 6.11 ms had read "the
    budget lies within the 95% interval of the mean (10.9ms ± 19.8ms)", reaching −8.9 ms.
    On the logarithms: the geometric mean 9.3 ms, its interval gm · exp(±h) [1.8, 49.0] ms."""
    p99s = (0.006587889342627022, 0.020137642798435985, 0.006114886514478708)
    results = [run(p95_s=0.005, p50_s=0.002, p99_s=p, iterations=200) for p in p99s]
    [check] = check_budgets(results, Budgets(default={"latency_p99": 0.020}))
    assert check.caveat.startswith(
        "the budget lies within the 95% interval of the geometric mean (9.3ms [1.8ms, 49.0ms]): "
        "a re-run could turn the check"
    )


def test_a_latency_budget_on_a_host_speed_figure_says_so() -> None:
    """A paced loop under --cpus 0.5 ran at this host's core's speed (the table's ``!``): its
    p50 of 1.35 ms passed a 2 ms budget with nothing said, where the run's warning gave
    2.70 ms for a core at half the speed (a user's)."""
    fast = run(cpus=0.5, p95_s=0.004, p50_s=0.00135, iterations=100)
    assert fast.latency is not None
    t = Throttling(99, 0, 0.0, 0.0, 0.00135, 0.004, 0.004, (), share=0.5, at_host_speed=True)
    fast = dataclasses.replace(fast, latency=dataclasses.replace(fast.latency, throttling=t))
    [check] = check_budgets([fast, run(cpus=0.5, p95_s=0.004, p50_s=0.0014, iterations=100)],
                            Budgets(default={"latency_p50": 0.002}))  # fmt: skip
    assert check.status is Status.PASS
    assert (
        "! p50 is this host's core's speed, not the quota's, in 1 of 2 run(s): CPU-bound "
        "iterations would be about 2× slower on a core at 0.5 of this one's speed (see the "
        "warnings)"
    ) in check.describe()
    [plain] = check_budgets([run(cpus=0.5, p95_s=0.004, p50_s=0.0014, iterations=100)],
                            Budgets(default={"latency_p50": 0.002}))  # fmt: skip
    assert "host's core's speed" not in plain.describe()


def test_a_peak_within_its_budget_only_by_files_cached_elsewhere_says_so() -> None:
    """A user's 214.0 MiB peak passed a 220 MiB budget beside run's own verdict "fits here
    only because 13.2MiB of the files it mapped were cached before it … 7.1MiB over"."""
    r = run(name="python", peak_mib=214.0)
    r = dataclasses.replace(
        r, memory=dataclasses.replace(r.memory, mapped_elsewhere_bytes=round(13.2 * MIB))
    )
    budgets = budgets_from_options(None, {**NO_OPTIONS, "peak_memory": "220m"})
    [check] = check_budgets([r], budgets)
    assert check.status is Status.PASS
    assert check.caveat == (
        "but 13.2MiB of files it mapped were cached before it (shared libraries, weights), "
        "which no peak here counts: on a device they are its own, 227.2MiB with them, beyond "
        "the budget"
    )
    # With them still within: nothing said.
    roomy = budgets_from_options(None, {**NO_OPTIONS, "peak_memory": "240m"})
    assert check_budgets([r], roomy)[0].caveat == ""


def test_a_phase_is_named_as_the_workload_wrote_it() -> None:
    """``phase("a b")`` is sent as ``a␣b``; ``--latency-phase 'a b'`` had been "no run has a
    phase 'a b'" (a user's), and a name over 200 characters had to be pasted cut."""
    from edgeprof.analysis.budgets import PHASE_KEY
    from edgeprof.workload import instrument

    with instrument.phase("x" * 250) as sent:  # outside a run: nothing is sent
        pass
    for given, held in (("a b", "a␣b"), ("infer", "infer"), ("x" * 250, sent.name)):
        budgets = budgets_from_options(None, {"latency_p50": "10ms", PHASE_KEY: given})
        assert budgets.phase == held, given
    assert len(sent.name) < 250 and sent.name[-9] == "~"
