"""PNG charts (optional extra ``plot``: ``pip install 'edgeprof[plot]'``, matplotlib).

* a run's CPU % and memory over time, from its ``samples.csv``;
* a metric per model across limit settings: the median with the min … max range;
* ``edgeprof fit``'s curve: time against the memory limit, per model.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import sys
import tempfile
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from ..analysis.cells import cell_key, cells, endings, leased_cores
from ..analysis.cells import setting as setting_of
from ..analysis.compare import summarize_cells
from ..analysis.fit_times import median_time
from ..analysis.metrics import STAT_METRICS, Kind
from ..errors import ConfigError
from ..model import RunResult, Termination
from ..samplefiles import read_samples
from ..storage import prepare_out_dir, write_output
from ..units import counted, format_binary
from .missing_timelines import missing_timelines, samples_on_disk

if TYPE_CHECKING:
    from ..sweeps.fit_outcome import FitOutcome

PLOTTED_METRICS = tuple(STAT_METRICS)
"""A chart each, when some run has the figure (the GPU ones: runs that saw a GPU; the
iterations' ones: runs that reported iterations, with items for items/s).  Every statistic,
taken from the metric table: a hand copy had to be kept equal to it, and a new metric had
no chart until someone remembered it."""


def _pyplot() -> Any:
    with _config_dir():
        try:
            import matplotlib
        except ImportError:
            raise ConfigError("plots need matplotlib: pip install 'edgeprof[plot]'") from None
        matplotlib.use("Agg")  # files only: never a window, works without a display
        import matplotlib.pyplot as plt  # its font cache is made here, in the directory

    return plt


@contextlib.contextmanager
def _config_dir() -> Iterator[None]:
    """``MPLCONFIGDIR`` while matplotlib loads, where the directories it would use cannot be
    written (a read-only ``HOME``): matplotlib then made a temporary one itself, but said so
    in two lines of its own on stderr ("mkdir -p failed … Matplotlib created a temporary
    cache directory", a tester's).  A directory of edgeprof's instead, removed at its exit;
    the variable is set only while matplotlib reads it (it keeps the answer), so no
    workload started later inherits it."""
    if "MPLCONFIGDIR" in os.environ or "matplotlib" in sys.modules or _mpl_dirs_writable():
        yield
        return
    made = tempfile.mkdtemp(prefix="edgeprof-matplotlib-")
    atexit.register(shutil.rmtree, made, ignore_errors=True)
    os.environ["MPLCONFIGDIR"] = made
    try:
        yield
    finally:
        os.environ.pop("MPLCONFIGDIR", None)


def _mpl_dirs_writable() -> bool:
    """matplotlib's configuration and cache directories (XDG's, as it finds them on Linux)
    exist or can be made, and can be written."""
    try:
        home = Path.home()
    except RuntimeError:  # no home at all
        return False
    bases = [
        os.environ.get("XDG_CONFIG_HOME") or str(home / ".config"),
        os.environ.get("XDG_CACHE_HOME") or str(home / ".cache"),
    ]
    for base in bases:
        d = Path(base) / "matplotlib"
        try:
            d.mkdir(parents=True, exist_ok=True)
        except OSError:
            return False
        if not os.access(d, os.W_OK):
            return False
    return True


_GLYPH = re.compile(r"Glyph (\d+) .*missing from font\(s\) (.+?)\.?$")


class MissingGlyphs:
    """The characters of the names that the plots' font lacks, from matplotlib's warnings
    while drawing: a legend's ``modèle 日本`` drew as ``modèle ☐☐``, with 12
    ``UserWarning: Glyph 26085 (…) missing from font(s) DejaVu Sans.`` lines on stderr,
    each with a source line of edgeprof's (a tester's).  Said in one line instead."""

    def __init__(self) -> None:
        self.chars: dict[str, None] = {}
        self.fonts = ""

    @contextlib.contextmanager
    def caught(self) -> Iterator[None]:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            yield
        for w in seen:
            m = _GLYPH.match(str(w.message))
            if m is None:  # not ours to hold: shown as it would have been
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
                continue
            self.chars[chr(int(m[1]))] = None
            self.fonts = m[2]

    def warning(self) -> str | None:
        if not self.chars:
            return None
        return (
            f"the plots' font ({self.fonts}) has no {' '.join(self.chars)} of the names: "
            "they show as empty boxes; install a font that has them (for Chinese, Japanese "
            "and Korean: fonts-noto-cjk)"
        )


def _scale(key: str) -> tuple[float, str]:
    kind = STAT_METRICS[key].kind
    if kind is Kind.MEMORY:
        return 2**20, "MiB"
    if kind is Kind.PERCENT:
        return 1.0, "% of one CPU" if key == "cpu_pct" else "%"
    if kind is Kind.ENERGY:
        return 1.0, "J"
    if kind is Kind.RATE:
        return 1.0, "items/s"
    return 1.0, "s"


def run_title(result: RunResult) -> str:
    """``infer — cpus=1 (leased core 0)``, ``oom1 — memory=96.0MiB — oom (137)``: a run's
    timeline title, how it ended where it failed, its setting as asked and
    the core edgeprof leased it apart, as the text report's head says them (the title had
    read ``cpus=1, cpuset=0``, a setting nobody asked for)."""
    title = f"{result.label} — {setting_of(result)}{leased_cores([result])}"
    # A failed run's ending, as the runs' table's END says it: the title had not said that
    # oom1's run was OOM-killed.
    return title if result.succeeded else f"{title} — {result.end}"


def plot_run(result: RunResult, path: Path) -> Path | None:
    """CPU % and memory over time of one run; ``None`` when its samples are not on disk.
    A file cut short or edited raises ``ValueError`` (or ``OSError``) naming why."""
    if not samples_on_disk(result):
        return None
    plt = _pyplot()
    s = read_samples(str(result.samples.path))
    t = [x or 0.0 for x in s.get("t_s", [])]
    fig, (ax_cpu, ax_mem) = plt.subplots(2, 1, sharex=True, figsize=(8, 5))
    cpu = s.get("cpu_pct", [])
    ax_cpu.plot([a for a, c in zip(t, cpu, strict=False) if c is not None],
                [c for c in cpu if c is not None], color="tab:blue")  # fmt: skip
    ax_cpu.set_ylabel("CPU % (100 = one CPU)")
    if result.limits.cpus is not None:
        ax_cpu.axhline(100 * result.limits.cpus, color="grey", linestyle="--", label="limit")
        ax_cpu.legend(loc="upper right")
    for key, label in (("memory_bytes", "usage"), ("working_set_bytes", "working set")):
        col = s.get(key, [])
        pts = [(a, m / 2**20) for a, m in zip(t, col, strict=False) if m is not None]
        if pts:
            ax_mem.plot([p[0] for p in pts], [p[1] for p in pts], label=label)
    if result.memory.peak_bytes is not None:
        ax_mem.axhline(result.memory.peak_bytes / 2**20, color="tab:red", linestyle=":",
                       label=f"peak ({result.memory.peak_source})")  # fmt: skip
    if result.memory.limit_bytes is not None:  # the CPU panel drew its limit; this had not
        ax_mem.axhline(result.memory.limit_bytes / 2**20, color="grey", linestyle="--",
                       label=f"limit {format_binary(result.memory.limit_bytes)}")  # fmt: skip
    ax_mem.set_ylabel("memory (MiB)")
    ax_mem.set_xlabel("seconds since start")
    ax_mem.legend(loc="upper right")
    fig.suptitle(run_title(result))
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)
    return path


def plot_metric(results: Sequence[RunResult], key: str, path: Path) -> Path | None:
    """``key`` per model (one line each) across the limit settings: median, min … max bars.
    ``None`` when no run has the figure."""
    cells = summarize_cells(results)
    settings = list(cells)
    series: dict[str, dict[int, Any]] = {}
    for i, setting in enumerate(settings):
        for m in cells[setting]:
            st = m.stat(key)
            if st is not None:
                series.setdefault(m.name, {})[i] = st
    if not series:
        return None
    plt = _pyplot()
    div, unit = _scale(key)
    fig, ax = plt.subplots(figsize=(max(8, 1.8 * len(settings) + 4), 5))
    for name, points in series.items():
        xs = sorted(points)
        med = [points[x].median / div for x in xs]
        lo = [(points[x].median - points[x].min) / div for x in xs]
        hi = [(points[x].max - points[x].median) / div for x in xs]
        ax.errorbar(xs, med, yerr=[lo, hi], marker="o", capsize=4, label=name)
    ax.set_xticks(range(len(settings)))
    ax.set_xticklabels(settings, rotation=15, ha="right")
    title = STAT_METRICS[key].title
    ax.set_ylabel(f"{title} ({unit})")
    ax.set_title(f"{title} per model (median, min … max)")
    ax.legend()
    ax.grid(alpha=0.3)
    if note := left_out(results):
        fig.text(0.01, 0.01, note, fontsize="small", wrap=True)
    fig.tight_layout(rect=(0, 0.12 if note else 0, 1, 1))
    save_figure(fig, path)
    plt.close(fig)
    return path


def left_out(results: Sequence[RunResult]) -> str | None:
    """``left out, no run succeeded: fail1 [cpus=0.5] (exit 4 ×2); …``: the models and
    settings a metric's chart has no point for because every run failed (a chart had left
    fail1, oom1 and hang1 out unsaid); ``None`` where there are none."""
    failed = [
        f"{label} [{setting}] ({endings(runs)})"
        for (label, setting), runs in cells(results).items()
        if not any(r.succeeded for r in runs)
    ]
    return "left out, no run succeeded: " + "; ".join(failed) if failed else None


def _file_part(text: str) -> str:
    cleaned = "".join(c if c.isalnum() or c in "._-=" else "_" for c in text).lstrip(".")
    return cleaned[:80] or "x"


def save_figure(fig: Any, path: Path, dpi: int = 100) -> None:
    """``fig`` as ``path`` (its suffix names the format), rendered in memory and written by
    :func:`edgeprof.storage.write_output`: never through a link, owned by the sudo
    user.  A failure is one :class:`ConfigError` line."""
    import io

    buf = io.BytesIO()
    try:
        fig.savefig(buf, dpi=dpi, format=path.suffix.lstrip(".") or "png")
    except ValueError as exc:  # an unknown format: matplotlib's own message
        raise ConfigError(f"cannot write plot {path}: {exc}") from exc
    write_output(path, buf.getvalue())


class Plots(NamedTuple):
    """What :func:`write_plots` did."""

    written: list[Path]
    notes: list[str]
    """One per run whose samples could not be read as a table."""
    missing: str | None
    """The runs with no samples.csv on disk, and why (:func:`missing_timelines`)."""
    glyphs: str | None = None
    """The characters of the names the font lacks (:class:`MissingGlyphs`)."""


def write_plots(out: Path, results: Sequence[RunResult], timelines: bool = True) -> Plots:
    """``<metric>.png`` per metric and ``timeline-<label>-<setting>-<n>.png`` per run whose
    samples are on disk, in ``out``; with a note per run whose samples could not be read as
    a table (its timeline is left out, the rest stands: the HTML report says the same), and
    which runs had none on disk."""
    _pyplot()  # a missing matplotlib is bad input: say so before writing anything
    prepare_out_dir(out)
    glyphs = MissingGlyphs()
    with glyphs.caught():
        plots = _write_plots(out, results, timelines)
    return plots._replace(glyphs=glyphs.warning())


def _write_plots(out: Path, results: Sequence[RunResult], timelines: bool) -> Plots:
    written = [p for key in PLOTTED_METRICS if (p := plot_metric(results, key, out / f"{key}.png"))]
    notes: list[str] = []
    absent: list[tuple[str, RunResult]] = []
    if timelines:
        counts: dict[tuple[str, str], int] = {}
        for r in results:
            cell = cell_key(r)
            counts[cell] = counts.get(cell, 0) + 1
            name = f"timeline-{_file_part(cell[0])}-{_file_part(cell[1])}-run{counts[cell]}.png"
            try:
                p = plot_run(r, out / name)
            except (OSError, ValueError) as exc:
                notes.append(f"{name}: left out, {r.samples.path} is unreadable ({exc})")
                continue
            if p is not None:
                written.append(p)
            else:  # named as the run's progress line names it
                absent.append((f"{cell[0]} [{cell[1]}] run {counts[cell]}", r))
    return Plots(written, notes, missing_timelines(absent))


def plot_fit(outcomes: Sequence[FitOutcome], path: Path) -> tuple[Path, str | None]:
    """``edgeprof fit --plot``: per model, each probe's time against its limit (passed,
    slower, or ended: OOM at the foot) with the unlimited time, the tolerance, the floor, the
    peak and the answer; a one-run fit shows its squeezed run's usage over time instead.
    With the file, the characters of the names its font lacks (:class:`MissingGlyphs`)."""
    glyphs = MissingGlyphs()
    with glyphs.caught():
        _plot_fit(outcomes, path)
    return path, glyphs.warning()


def _plot_fit(outcomes: Sequence[FitOutcome], path: Path) -> None:
    plt = _pyplot()
    fig, axes = plt.subplots(len(outcomes), 1, figsize=(8, 4.5 * len(outcomes)), squeeze=False)
    for ax, o in zip(axes[:, 0], outcomes, strict=True):
        if o.method == "one-run":
            _squeezed_panel(ax, o)
        else:
            _curve_panel(ax, o)
        ax.grid(alpha=0.3)
        ax.legend(loc="best", fontsize="small")
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)


def _curve_panel(ax: Any, o: FitOutcome) -> None:
    mib = 2**20
    b = o.bounds
    ref = o.time.seconds
    ok = [(p.limit / mib, median_time(p.runs).seconds) for p in o.probes if p.verdict.ok]
    slow = [
        (p.limit / mib, median_time(p.runs).seconds)
        for p in o.probes
        if not p.verdict.ok and p.runs[-1].termination is Termination.EXITED
    ]
    ended = [p.limit / mib for p in o.probes if p.runs[-1].termination is not Termination.EXITED]
    if ok:
        ax.plot(*zip(*ok, strict=True), "o", color="tab:green", label="fits")
    if slow:
        ax.plot(*zip(*slow, strict=True), "o", color="tab:orange", label="too slow")
    if ended:
        ax.plot(ended, [0.0] * len(ended), "x", color="tab:red", markersize=9, clip_on=False,
                label="OOM / ended")  # fmt: skip
    ax.axhline(ref, color="grey", label=f"unlimited {o.time.metric}")
    ax.axhline(ref * (1 + o.tolerance), color="grey", linestyle="--",
               label=f"+{100 * o.tolerance:.0f}% tolerance")  # fmt: skip
    ax.axvline(b.floor / mib, color="tab:purple", linestyle=":", label="floor (anon+shmem+kernel)")
    ax.axvline(b.peak / mib, color="tab:red", linestyle=":", label="unlimited peak")
    if b.ceiling is not None:
        ax.axvline(b.ceiling / mib, color="black", linestyle="-.", label="ceiling")
    if o.answer is not None:
        ax.axvline(o.answer / mib, color="tab:green", label="smallest memory")
    ax.set_xlabel("memory limit (MiB)")
    ax.set_ylabel(f"{o.time.metric} (s)")
    ax.set_ylim(bottom=0)
    ax.set_title(f"{o.label}: time against the memory limit ({counted(len(o.probes), 'probe')})")


def _squeezed_panel(ax: Any, o: FitOutcome) -> None:
    mib = 2**20
    r = o.reference[-1] if o.reference else None
    if r is not None and r.samples.path is not None and Path(r.samples.path).is_file():
        try:
            s = read_samples(r.samples.path)
        except ValueError:
            s = {}  # a file edited since: the panel keeps its lines without the usage
        pts = [
            (t or 0.0, m / mib)
            for t, m in zip(s.get("t_s", []), s.get("memory_bytes", []), strict=False)
            if m is not None
        ]
        if pts:
            ax.plot(*zip(*pts, strict=True), color="tab:blue", label="usage (squeezed)")
    if o.answer is not None:
        ax.axhline(o.answer / mib, color="tab:green", label="estimated need")
    ax.axhline(o.bounds.peak / mib, color="tab:red", linestyle=":", label="peak of the run")
    ax.set_xlabel("seconds since start")
    ax.set_ylabel("memory (MiB)")
    ax.set_title(f"{o.label}: one squeezed run")
