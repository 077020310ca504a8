"""The HTML report's content from results (the browser's view is the host tier's
tests/tooling/test_html_report.py): the same tables as the terminal, escaped, one file."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from edgeprof.model import CoreLease, Limits, RunResult, SampleStats
from edgeprof.report.html import render_html
from edgeprof.report.svg import Bar, bars
from edgeprof.report.table import TextTable

from .conftest import make_result


def test_names_are_text_never_markup() -> None:
    hostile = "<script>alert(1)</script>"
    page = render_html([make_result(name=hostile), make_result(name="b&c")], title=hostile)
    assert "<script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "b&amp;c" in page
    chart = bars("t", [Bar(label=hostile, value=1.0, low=0.5, high=1.5)], str)
    assert "<script>" not in chart and "&lt;script&gt;" in chart


def test_the_tables_are_the_terminals() -> None:
    runs = [make_result(name="a"), make_result(name="b", wall_s=3.0, warnings=("b's",))]
    page = render_html(runs)
    # The rankings' titles and notes, as the terminal prints them.
    assert (
        "Ranking by wall time under cpus=1.5, cpuset=0-1, memory=512.0MiB (smallest first)" in page
    )
    assert page.count("<svg") >= 2  # a chart per ranking (no samples on disk: no timelines)
    # each run's warnings, under the runs, as the text says them
    assert page.count('<li class="warning">warning (a): a warning</li>') == 1
    assert "No time series" in page
    # One that every run had is said once, for all of them, as the text says it.
    page = render_html([make_result(name="a"), make_result(name="b", wall_s=3.0)])
    assert page.count("a warning") == 1
    assert '<li class="warning">warning (every run): a warning</li>' in page


def test_the_page_says_the_limits_and_the_device_the_runs_had() -> None:
    """As the text report's "limits:" line: the page had left them out."""
    page = render_html([make_result(name="a", device="rpi4-2gb"), make_result(name="b")])
    assert "device rpi4-2gb, limits: cpus=1.5, cpuset=0-1, memory=512.0MiB" in page
    assert page.count("limits: cpus=1.5, cpuset=0-1, memory=512.0MiB") == 2


def test_html_table_cells_align_numbers_right() -> None:
    t = TextTable("T", [["NAME", "WALL"], ["x", "12.5ms"], ["y", "n/a"]], ["a note"])
    html = t.html()
    assert re.search(r'<th scope="col">NAME</th><th scope="col" class="num">WALL</th>', html)
    assert '<div class="scroll"><table>' in html  # a wide table scrolls in its box
    assert '<td class="num">12.5ms</td>' in html and "<li>a note</li>" in html


def test_a_calibration_chart_draws_each_point_and_the_curve() -> None:
    from edgeprof.report.svg import scatter

    points = [(0.1, 0.2, "a"), (0.2, 0.41, "b"), (0.4, 0.79, "c<d")]
    chart = scatter("fit", points, lambda x: None if x <= 0 else 2 * x, "profiler", "device", str)
    assert chart.count("<circle") == 3 and "c&lt;d" in chart
    (curve,) = re.findall(r'<polyline points="([^"]+)"', chart)
    assert len(curve.split()) == 40  # x = 0 has no value (a power law there): left out


def test_a_run_that_saw_a_gpu_has_its_gpu_tables_and_one_without_none() -> None:
    from edgeprof.model import GpuDevice, GpuPhase, GpuStats

    device = GpuDevice(
        index=0, uuid="GPU-a", name="NVIDIA H100", memory_total_bytes=80 * 2**30,
        memory_peak_bytes=3 * 2**30, memory_source="processes", utilization_avg_pct=71.5,
        utilization_peak_pct=99.0, utilization_source="processes",
        memory_utilization_avg_pct=20.0, energy_j=412.5, power_avg_w=310.0, power_peak_w=402.0,
        sm_clock_min_mhz=1410, sm_clock_max_mhz=1980, memory_clock_max_mhz=2619,
        temperature_peak_c=64, throttle_reasons=("sw_power_cap",), processes=1,
    )  # fmt: skip
    gpu = GpuStats(driver="550.54.15", selection="all", devices=(device,),
                   memory_peak_bytes=3 * 2**30, energy_j=412.5, samples=12, interval_s=0.1,
                   energy_per_iteration_j=2.5, energy_per_item_j=0.3125,
                   phases=(GpuPhase("infer", 400.0, 3 * 2**30),))  # fmt: skip
    page = render_html([make_result(name="cuda", gpu=gpu)])
    for text in ("0: NVIDIA H100", "3.0GiB", "71.5% / 99%", "412.50J", "310W / 402W",
                 "1410–1980 MHz", "64°C", "sw_power_cap", "2.50J of GPU energy per iteration",
                 "312.5mJ per item", "GPU by phase", "400.00J"):  # fmt: skip
        assert text in page, text
    assert "NVIDIA" not in render_html([make_result(name="cpu")])


def _run_with_samples(tmp_path: Path, name: str, body: str) -> RunResult:
    path = tmp_path / f"{name}.csv"
    path.write_text("t_s,cpu_pct,memory_bytes\n" + body)
    return make_result(name=name, samples=SampleStats(count=3, interval_s=0.1, path=str(path)))


def test_a_corrupt_samples_csv_leaves_its_timeline_out_with_a_note(tmp_path: Path) -> None:
    """A row with an extra field, a field past the csv module's limit, a word: that run's
    timeline is left out and said; the readable run is still drawn."""
    good = _run_with_samples(tmp_path, "good", "0.1,50,1048576\n0.2,60,2097152\n")
    extra = _run_with_samples(tmp_path, "extra", "0.1,50,1048576,9\n")
    huge = _run_with_samples(tmp_path, "huge", "0.1,50," + "1" * 200_000 + "\n")
    word = _run_with_samples(tmp_path, "word", "0.1,fifty,1\n")
    page = render_html([good, extra, huge, word])
    assert page.count("<polyline") == 2  # the good run's CPU and memory lines
    assert "extra: timeline left out" in page and "line 2: more fields than the header" in page
    assert "huge: timeline left out" in page and "field larger than field limit" in page
    assert "word: timeline left out" in page and "line 2: a field is not a number" in page
    assert "fifty" not in page  # a file's contents are never quoted: it may be anyone's


def test_non_finite_samples_are_never_drawn(tmp_path: Path) -> None:
    run = _run_with_samples(
        tmp_path, "a", "0.1,inf,1048576\n0.2,nan,-inf\n0.3,1.7e308,1e308\n0.4,50,2097152\n"
    )
    page = render_html([run])
    coords = " ".join(re.findall(r'(?:points|x1|x2|y1|y2|x|y)="([^"]*)"', page))
    assert "nan" not in coords and "inf" not in coords
    (cpu, memory) = re.findall(r'<polyline points="([^"]+)"', page)
    assert len(cpu.split()) == 2 and len(memory.split()) == 3  # inf, nan and -inf left out


def test_the_header_groups_by_setting_and_the_timelines_say_which_runs(tmp_path: Path) -> None:
    """A sweep of cpus=1,2 had listed "cpus=1, cpuset=0", "cpus=1, cpuset=1" and "cpus=2,
    cpuset=0-1" (the cores leased to each round); its "Over time" charts had not said which
    run each line draws."""
    runs: list[RunResult] = []
    for cpus, cores in ((1, (0,)), (1, (1,)), (2, (0, 1)), (2, (0, 1))):
        rnd = len(runs) % 2 + 1
        path = tmp_path / f"{cpus}-{rnd}.csv"
        path.write_text("t_s,cpu_pct,memory_bytes\n0.1,50,1048576\n0.2,60,2097152\n")
        runs.append(
            make_result(
                name="m.onnx",
                limits=Limits(cpus=cpus, cpuset=",".join(map(str, cores))),
                lease=CoreLease(cores, 0.0, chosen=True),
                samples=SampleStats(count=2, interval_s=0.1, path=str(path)),
            )
        )
    page = render_html(runs)
    header = re.search(r'<p class="meta">([^<]*)</p>', page)
    assert header is not None and header.group(1).startswith(
        "4 run(s) · limits: cpus=1; cpus=2 · "  # "limits:" once (it had been said twice)
    )
    assert "cpuset" not in page
    which = (
        "Each line is one run, the first of its model and setting: 2 of 2 drawn (4 runs in "
        "all), a pair of charts per setting."
    )
    assert f'<h2>Over time</h2>\n<p class="meta">{which}</p>' in page
    for cpus in (1, 2):
        files = f"Under cpus={cpus}: from its samples.csv: m.onnx: {tmp_path}/{cpus}-1.csv"
        assert f'<p class="meta">{files}</p>' in page
    assert page.count("<polyline") == 4  # two runs, CPU and memory each
    assert "<title>CPU % of one core under cpus=2</title>" in page


def test_every_cell_is_drawn_or_named_left_out(tmp_path: Path) -> None:
    """A 24-cell sweep (4 settings x 6 models) had drawn its first 12 cells on one chart, the
    other 12 unsaid; now a pair of charts per setting draws all 24, and past
    :data:`MAX_TIMELINES` the caption names the cells left out."""
    from edgeprof.report import charts

    path = tmp_path / "s.csv"
    path.write_text("t_s,cpu_pct,memory_bytes\n0.1,50,1048576\n0.2,60,2097152\n")
    samples = SampleStats(count=2, interval_s=0.1, path=str(path))
    runs = [
        make_result(name=f"m{i}", limits=Limits(cpus=cpus, memory=memory), samples=samples)
        for cpus in (0.5, 1) for memory in ("64m", "128m") for i in range(6)
    ]  # fmt: skip
    page = render_html(runs)
    assert page.count("<polyline") == 48  # 24 cells, CPU and memory each
    assert page.count("<title>CPU % of one core under") == 4  # one for each setting
    assert page.count("<title>Memory under") == 4
    assert "24 of 24 drawn (24 runs in all), a pair of charts per setting." in page
    assert "left out" not in page
    assert '<p class="meta">Under cpus=0.5, memory=64.0MiB: from its samples.csv: m0: ' in page
    # Each setting's chart draws its CPU share (one chart of every setting had drawn none);
    # cpus=1's 100% is past 1.5 times the 60% drawn, and the memory limits past 2 MiB's.
    assert page.count(">limit cpus=0.5</text>") == 2
    assert "limit cpus=1<" not in page and "limit 64.0MiB" not in page
    ten = [make_result(name=f"m{i}", samples=samples) for i in range(10)]
    page = render_html(ten)
    assert page.count("<title>CPU % of one core</title>") == 2  # 8 lines a chart at most
    assert charts.LINES_PER_CHART == 8
    from unittest import mock

    with mock.patch.object(charts, "MAX_TIMELINES", 4):
        page = render_html(runs)
    assert page.count("<polyline") == 8
    assert (
        "Each line is one run, the first of its model and setting: 4 of 24 drawn (24 runs in "
        "all), a pair of charts per setting; left out (at most 4 drawn): m4 [cpus=0.5, "
        "memory=64.0MiB], m5 [cpus=0.5, memory=64.0MiB], m0 [cpus=0.5, memory=128.0MiB]"
    ) in page
    caption = page.split("<h2>Over time</h2>")[1].split("</p>")[0]
    assert caption.count("[cpus=1, memory=128.0MiB]") == 6  # every cell left out, by name


def test_an_oom_killed_run_has_its_verdict_first_in_words_and_colour() -> None:
    """The terminal's "does not fit: OOM-killed"; the page had no banner, only the third of
    six grey bullets under the table."""
    from dataclasses import replace

    from edgeprof.model import Termination

    base = make_result()
    mib30 = replace(base.memory, peak_bytes=30 * 2**20, limit_bytes=30 * 2**20, oom_kills=1)
    killed = make_result(
        name="m.onnx", limits=Limits(memory="30m"), termination=Termination.OOM,
        exit_code=None, signal=9, memory=mib30,
    )  # fmt: skip
    page = render_html([killed])
    banner = re.search(r'<div class="verdicts"><p class="verdict fail">✗ ([^<]*)</p>', page)
    assert banner is not None, page[:2000]
    assert banner.group(1).startswith(
        "m.onnx (memory=30.0MiB): memory limit 30.0MiB: does not fit: OOM-killed"
    )
    assert page.index('class="verdicts"') < page.index("<h2>Results</h2>")
    fits = render_html([make_result(name="m", limits=Limits(memory="512m"))])
    assert '<p class="verdict pass">✓ m (memory=512.0MiB): memory limit 512.0MiB: fits' in fits
    failed = render_html([make_result(name="x", termination=Termination.TIMEOUT)])
    # What it held until the timeout, then how it ended.
    assert re.search(
        r'verdict fail">✗ x \([^)]*\): memory limit 512.0MiB: held 1.50s until --timeout '
        r"stopped it, peak 120.0MiB, 392.0MiB to spare; 0 of 1 runs succeeded \(timeout\)",
        failed,
    )
    plain = make_result(name="x", termination=Termination.TIMEOUT, limits=Limits(cpus=1))
    plain = dataclasses.replace(plain, memory=dataclasses.replace(plain.memory, limit_bytes=None))
    unlimited = render_html([plain])
    assert re.search(r'verdict fail">✗ x \([^)]*\): 0 of 1 runs succeeded \(timeout\)', unlimited)


def test_the_page_fits_a_phone_and_paper() -> None:
    page = render_html([make_result(name="a"), make_result(name="b", wall_s=3.0)])
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page
    assert ".scroll { overflow-x: auto;" in page and "@media print" in page
    assert "svg { max-width: 100%; height: auto; }" in page
    assert re.search(r'<svg [^>]*role="img"[^>]*viewBox="0 0 \d+ \d+"', page)


def test_ticks_are_round_numbers() -> None:
    from edgeprof.report.svg import ticks

    assert ticks(30) == [0, 10, 20, 30]  # had been 0, 8, 15, 22, 30
    assert ticks(29.1) == [0, 10, 20, 30]
    assert ticks(0.756) == [0, 0.2, 0.4, 0.6, 0.8]
    assert ticks(100) == [0, 20, 40, 60, 80, 100]
    assert ticks(149.7) == [0, 50, 100, 150]
    assert ticks(0.0012) == [0, 0.0002, 0.0004, 0.0006, 0.0008, 0.001, 0.0012]
    assert ticks(0) == [0, 0.2, 0.4, 0.6, 0.8, 1.0]  # nothing drawn: a unit axis
    assert ticks(1.7e308)[-1] == 1.7e308  # a round top would overflow: the top in quarters


def test_a_long_bar_label_fits_its_chart() -> None:
    """``149.7MiB  ≈ previous: within noise`` had been cut at the 720th pixel."""
    from edgeprof.report.svg import text_width

    rows = [
        Bar("infer_mlp bs=32", 148.4, 148.3, 148.4),
        Bar("a much longer model name than most", 149.7, 148.0, 151.0,
            note="≈ previous: within noise", within_noise=True),
    ]  # fmt: skip
    chart = bars("peak memory", rows, lambda v: f"{v:.1f}MiB", key="bar: median")
    width = float(re.search(r'viewBox="0 0 (\d+)', chart).group(1))  # type: ignore[union-attr]
    texts = re.findall(r'<text x="([\d.]+)"[^>]*text-anchor="(\w+)" font-size="(\d+)"[^>]*>'
                       r"([^<]*)</text>", chart)  # fmt: skip
    label = next(t for t in texts if "within noise" in t[3])
    assert label[3] == "149.7MiB  ≈ previous: within noise"
    assert float(label[0]) + text_width(label[3], int(label[2])) <= width
    name = next(t for t in texts if t[3] == "a much longer model name than most")
    assert name[1] == "end" and float(name[0]) - text_width(name[3], int(name[2])) >= 0
    # min … max whiskers: the second bar's (the first's range is under a pixel)
    assert chart.count("<path") == 1


def test_verdict_cells_are_marked_and_the_comparison_comes_first() -> None:
    from edgeprof.analysis.metrics import STAT_METRICS
    from edgeprof.analysis.regression import Change, Verdict
    from edgeprof.report.html import Comparison

    runs = [make_result(name="a"), make_result(name="b", wall_s=3.0)]
    wall = STAT_METRICS["wall_s"]
    changes = [
        Change("a", "cpus=1", wall, (1.0, 1.1), (1.5, 1.6), Verdict.REGRESSION, 0.5,
               low=0.4, high=0.6),
        Change("b", "cpus=1", wall, (1.0, 1.1), (0.5, 0.6), Verdict.IMPROVEMENT, -0.5,
               low=-0.6, high=-0.4, caveat="held off"),
    ]  # fmt: skip
    page = render_html(runs, comparison=Comparison(changes, 0.05))
    assert '<td class="fail">✗ regression</td>' in page
    assert '<td class="pass">✓ improvement</td>' in page
    assert page.index("<h2>Compared with the baseline</h2>") < page.index("<h2>Results</h2>")
    assert re.search(
        r'<p class="verdict warn">⚠ 1 of the improvements compare runs other tasks on the host '
        r"held off their CPUs", page
    )


def test_warnings_alike_but_for_their_figures_are_one_line() -> None:
    """A busy host's 12 "held off its CPUs" warnings had been 12 bullets."""
    from edgeprof.report.note_groups import grouped_notes
    from edgeprof.report.results import NoteLine

    held = "held off its CPUs for {}s ({}% of its wall time)"
    lines = [
        NoteLine(None, "4: cgroup/cgroup2", head=True),
        NoteLine("4", "memory limit 256.0MiB: fits", setting="cpus=1"),
        NoteLine("4", "warning (run 1): " + held.format("0.34", 79), setting="cpus=1"),
        NoteLine("4", "warning (runs 2, 3): " + held.format("0.24", 74), setting="cpus=1"),
        NoteLine("16", "warning: " + held.format("0.77", 83), setting="cpus=1"),
        NoteLine("16", "warning: something else", setting="cpus=1"),
    ]
    assert grouped_notes(lines, settings=False) == [
        ("4: memory limit 256.0MiB: fits", False),
        ("warning (4 runs 1, 2, 3; 16): held off its CPUs for 0.24–0.77s (74–83% of its wall "
         "time)", True),
        ("warning (16): something else", True),
    ]  # fmt: skip
    assert grouped_notes(lines[:3], settings=True)[1] == (
        "warning (4 [cpus=1] run 1): held off its CPUs for 0.34s (79% of its wall time)", True
    )
    # Digits in a name, a CPU list or a call are words, not figures (a reviewer's groups had
    # read "CPUs 0–2,1–3", "rpi4–5-1–8gb" and "set_num_threads(2–4)").
    named = [
        NoteLine("a", "warning: on CPUs 0-1 of rpi4-1gb, set_num_threads(2)"),
        NoteLine("b", "warning: on CPUs 2-3 of rpi5-8gb, set_num_threads(4)"),
    ]
    assert [text for text, _ in grouped_notes(named, settings=False)] == [
        "warning (a): on CPUs 0-1 of rpi4-1gb, set_num_threads(2)",
        "warning (b): on CPUs 2-3 of rpi5-8gb, set_num_threads(4)",
    ]


def test_the_rankings_legend_is_said_once() -> None:
    from edgeprof.report.comparison import RANKING_LEGEND

    runs = [make_result(name=n, wall_s=w) for n, w in (("a", 1.0), ("a", 1.1), ("b", 2.0),
                                                       ("b", 2.2))]  # fmt: skip
    from html import escape

    assert render_html(runs).count(escape(RANKING_LEGEND)) == 1


def test_a_fits_banner_is_amber_where_the_search_stopped_before_an_answer() -> None:
    """An interrupted fit (``fits: null``) had the red banner of one that fits nowhere."""
    from edgeprof.report.saved_notes import answer_kind as _answer_kind

    assert _answer_kind({"min_memory_bytes": 64 << 20, "fits": True}) == "pass"
    assert _answer_kind({"min_memory_bytes": None, "fits": None, "stopped": "interrupted"}) == (
        "warn"
    )
    assert _answer_kind({"min_memory_bytes": None, "fits": False, "stopped": None}) == "fail"


def test_each_line_has_a_colour_and_dash_of_its_own() -> None:
    """The colours and dashes had cycled together (8 each): a sweep's 9th and 10th lines
    were drawn as its 1st and 2nd (#0072B2 solid, #E69F00 "7 3")."""
    from edgeprof.report.svg import Series, lines

    series = [Series(f"s{i}", [(0.0, 1.0), (1.0, 2.0)]) for i in range(64)]
    chart = lines("t", series, "seconds", str)
    styles = re.findall(r'<polyline points="[^"]+" fill="none" (stroke="[^"]+"[^/]*)/>', chart)
    assert len(styles) == 64 and len(set(styles)) == 64
    assert styles[0] == 'stroke="#0072B2" stroke-width="1.8"'
    assert styles[8] == 'stroke="#0072B2" stroke-dasharray="7 3" stroke-width="1.8"'
    assert styles[9] == 'stroke="#E69F00" stroke-dasharray="2 2" stroke-width="1.8"'
    legend = re.findall(r'<line x1="[^"]+" x2="[^"]+" y1="[^"]+" y2="[^"]+" (stroke="[^"]+"'
                        r'(?: stroke-dasharray="[^"]+")?) stroke-width="2"', chart)  # fmt: skip
    assert len(legend) == 64 and len(set(legend)) == 64  # each sample as its line is drawn


def test_a_comparison_with_inconclusive_verdicts_is_no_green_tick() -> None:
    """16 of 18 verdicts inconclusive had been a green ✓ banner; compare exits 0 on them, so
    the banner is amber, its text compare's own."""
    from edgeprof.analysis.metrics import STAT_METRICS
    from edgeprof.analysis.regression import Change, Verdict
    from edgeprof.report.html import Comparison

    wall = STAT_METRICS["wall_s"]
    unsure = Change("a", "cpus=1", wall, (1.0, 1.1), (1.2, 1.3), Verdict.INCONCLUSIVE, 0.178, 0.149)
    same = Change("b", "cpus=1", wall, (1.0, 1.1), (1.0, 1.1), Verdict.NO_CHANGE, 0.0, 0.01)
    page = render_html([make_result(name="a")], comparison=Comparison([unsure, same], 0.05))
    assert (
        '<p class="verdict warn">⚠ 0 regressions, 0 improvements, 1 inconclusive (the interval '
        "reaches past the threshold) against the baseline</p>"
    ) in page
    page = render_html([make_result(name="b")], comparison=Comparison([same], 0.05))
    assert '<p class="verdict pass">✓ 0 regressions, 0 improvements against the baseline' in page
