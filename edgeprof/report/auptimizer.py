"""The older profiler's output files, for users who read or parse them.

Auptimizer's Profiler wrote, per model, ``<model>_<OUTPUTFILE>``: a ``Profiling script:``
line, one row per sample (``NAME  AVG CPU %  AVG MEM USAGE / LIMIT  NET I/O  BLOCK I/O
TIMESTAMP``, timestamps in epoch milliseconds), ``FINISHED``, and a ``Usage Stats:`` table;
and it appended to ``OUTPUTFILE`` a ``Usage stats for Experiment ran on : <date>`` block with
one row per model (the "Final Usage Stats" columns).  Without a model list the sample log
*is* ``OUTPUTFILE``.  edgeprof writes the same layout, with its own (exact) figures, and fixes
the old defects: I/O in decimal units as Docker prints them (the old summary printed 1024
multiples labelled ``kB``), a row for every model even when one failed (its STATUS column
says why), appends under a lock (:func:`~edgeprof.storage.append_locked`), and a name of its
own for each model: ``<model>`` is the file name without its extension, as before, unless
two models would share it (``m.onnx`` and ``m.tflite``, whose runs the old profiler merged
into one log and two rows of one name): those keep their extension, or more of their path
(:func:`~edgeprof.sweeps.envtemplate.log_names` has the rule).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from pathlib import Path

from ..analysis.cells import setting
from ..model import RunResult, Termination
from ..samplefiles import read_samples
from ..storage import append_locked, write_output
from ..sweeps.envtemplate import log_names, model_log_path
from ..units import format_binary, format_decimal
from .results import COLUMNS
from .table import Align, plain_lines

HEADERS = COLUMNS[:8]
"""The seeds' summary columns (edgeprof's table adds its own after them)."""
SAMPLE_HEADERS = ("NAME", "AVG CPU %", "AVG MEM USAGE / LIMIT", "NET I/O", "BLOCK I/O", "TIMESTAMP")
MIN_PADDING = 2
"""Header cells are this much wider than their text (the old tables' ``tabulate`` rule)."""

Cell = str | int | float


def _human(n: float | None, base: int, units: tuple[str, ...]) -> str:
    """``742.0 B``, ``117.9 MiB``, ``12.0 MB``: one decimal and a space, as the old summary."""
    if n is None:
        return "n/a"
    value = float(n)
    for unit in units:
        if unit == units[-1] or abs(value) < base:
            return f"{value:.1f} {unit}"
        value /= base
    raise AssertionError("unreachable")


def memory(n: float | None) -> str:
    return _human(n, 1024, ("B", "KiB", "MiB", "GiB", "TiB"))


def io(n: float | None) -> str:
    return _human(n, 1000, ("B", "kB", "MB", "GB", "TB"))


def _pair(a: int | None, b: int | None) -> str:
    return "n/a" if a is None and b is None else f"{io(a)} / {io(b)}"


def _numeric(v: Cell) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def table(headers: Sequence[str], rows: Sequence[Sequence[Cell]]) -> str:
    """A plain table in the layout of the old files (``tabulate``'s "simple" format): two
    spaces between columns, dashes under the headers, text left-aligned, numbers
    right-aligned on their decimal point."""
    cols = list(zip(*rows, strict=True)) if rows else [() for _ in headers]
    texts: list[list[str]] = []
    align: list[Align] = []
    for col in cols:
        is_num = bool(col) and all(_numeric(v) for v in col)
        align.append("right" if is_num else "left")
        if not is_num:
            texts.append([str(v) for v in col])
            continue
        # Padded on the right to line the decimal points up once right-aligned.
        strs = [str(v) for v in col]
        frac = max((len(s) - s.index(".") if "." in s else 0) for s in strs)
        texts.append([s + " " * (frac - (len(s) - s.index(".") if "." in s else 0)) for s in strs])
    text_rows = [[col[i] for col in texts] for i in range(len(rows))]
    return "\n".join(plain_lines(headers, text_rows, align=align, header_padding=MIN_PADDING))


def status(r: RunResult) -> str:
    if r.termination is Termination.EXITED:
        return "ok" if not r.exit_code else f"exit {r.exit_code}"
    if r.termination is Termination.SIGNALED and r.signal is not None:
        return f"signaled ({r.signal})"
    return str(r.termination.value)


def usage_row(name: str, r: RunResult, host_memory: int | None) -> list[Cell]:
    """One row of the usage stats: the old columns with edgeprof's figures (the limit is the
    host's memory when the run had none, as ``docker stats`` shows it).  The memory is the
    working set, usage less inactive file, as ``docker stats`` counts it and as the sample
    rows above it already were: the old tool logged ``docker stats``, and the group's whole
    usage had put a container's page cache in these columns (169.3 MiB average, 188.4 MiB
    peak where ``docker stats`` showed 38.16 MiB for a container that wrote a 150 MiB file).
    The total where no working set was read (the process backend).  The working set's peak
    is the samples' highest: ``n/a`` where fewer than two fell while the run ran, as the
    average is (a 1.7 MiB "peak" had ranked a model holding 60 MiB under one holding 20,
    read every 3 s, a user's ``SAMPLETIME=3``)."""
    limit = r.memory.limit_bytes if r.memory.limit_bytes is not None else host_memory
    m = r.memory
    avg = m.avg_working_set_bytes if m.avg_working_set_bytes is not None else m.avg_bytes
    peak = m.peak_working_set_bytes if m.peak_working_set_bytes is not None else m.peak_bytes
    if m.peak_working_set_bytes is not None and m.avg_working_set_bytes is None:
        peak = None  # too few samples while it ran: their highest is no peak
    avg_cpu = r.cpu.avg_pct
    peak_cpu = r.cpu.peak_pct
    return [
        name,
        "n/a" if avg_cpu is None else f"{round(avg_cpu, 3)}%",
        "n/a" if peak_cpu is None else round(peak_cpu, 3),
        f"{memory(avg)} / {memory(limit)}",
        memory(peak),
        _pair(r.io.net_rx_bytes, r.io.net_tx_bytes),
        _pair(r.io.read_bytes, r.io.write_bytes),
        round(r.wall_s * 1000),
    ]


def usage_table(named: Sequence[tuple[str, RunResult]], host_memory: int | None) -> str:
    """The usage stats of ``(name, result)`` rows; a STATUS column is added when any run
    failed, so a failed model keeps its row and says why."""
    rows = [usage_row(n, r, host_memory) for n, r in named]
    headers: list[str] = list(HEADERS)
    if any(status(r) != "ok" for _, r in named):
        headers.append("STATUS")
        for row, (_, r) in zip(rows, named, strict=True):
            row.append(status(r))
    return table(headers, rows)


def summary_block(
    named: Sequence[tuple[str, RunResult]],
    host_memory: int | None,
    when: _dt.datetime | None = None,
) -> str:
    """The block appended to OUTPUTFILE after a run of several models.  Its date is local
    time with no zone, as the older profiler's ``datetime.now()`` wrote it (a reader that
    parses the line expects that form); docs/results.md says so beside ``started_at``."""
    when = when or _dt.datetime.now()
    return f"Usage stats for Experiment ran on : {when}\n{usage_table(named, host_memory)}\n\n"


def _epoch_ms(r: RunResult) -> float:
    return _dt.datetime.fromisoformat(r.started_at).timestamp() * 1000


def sample_rows(r: RunResult, name: str, host_memory: int | None) -> list[list[str]]:
    """The run's samples (from its ``samples.csv``, read as ``report`` reads it:
    :func:`~edgeprof.samplefiles.read_samples`) as ``docker stats`` rows."""
    if r.samples.path is None or not Path(r.samples.path).is_file():
        return []
    limit = r.memory.limit_bytes if r.memory.limit_bytes is not None else host_memory
    t0 = _epoch_ms(r)
    cols = read_samples(r.samples.path)
    count = max(map(len, cols.values()), default=0)

    def col(key: str) -> list[float | None]:
        return cols.get(key) or [None] * count

    cpus, t_s = col("cpu_pct"), col("t_s")
    working_set = zip(col("working_set_bytes"), col("memory_bytes"), strict=True)
    memory = [ws if ws is not None else m for ws, m in working_set]
    net = zip(col("net_rx_bytes"), col("net_tx_bytes"), strict=True)
    io = zip(col("io_read_bytes"), col("io_write_bytes"), strict=True)
    return [
        [
            name,
            "--" if cpu is None else f"{cpu:.2f}%",
            f"{format_binary(mem)} / {format_binary(limit)}".replace("n/a", "--"),
            _sample_pair(rx, tx),
            _sample_pair(rd, wr),
            str(round(t0 + (t or 0.0) * 1000)),
        ]
        for cpu, mem, (rx, tx), (rd, wr), t in zip(cpus, memory, net, io, t_s, strict=True)
    ]


def _sample_pair(a: float | None, b: float | None) -> str:
    return "--" if a is None and b is None else f"{format_decimal(a)} / {format_decimal(b)}"


def run_log(
    r: RunResult, name: str, script: str, host_memory: int | None, model: str | None = None
) -> str:
    """One run's section of a sample log, as the old per-model file held it."""
    samples = sample_rows(r, name, host_memory)
    head = f"Profiling script: {script}" + (f" {model}" if model is not None else "")
    # ``column -t`` of the rows, as the old log was made: no rule under the header.
    parts = [head, "", *plain_lines(SAMPLE_HEADERS, samples, rule=False)]
    if not samples:
        parts.append("(no samples: the run was shorter than SAMPLETIME)")
    parts += [
        "FINISHED ",
        "********************************************************* ",
        "",
        "Usage Stats: ",
        usage_table([(name, r)], host_memory),
        "Refer to the documentation on how to interpret the results.",
        "",
        "",
    ]
    return "\n".join(parts)


class AuptimizerFiles:
    """Writes the old files as a sweep goes: pass :meth:`result` as ``run_sweep``'s
    ``on_result`` and call :meth:`finish` at the end (also after a failure or an interrupt:
    the summary then holds the runs that finished).

    With models, each model's log ``<name>_<OUTPUTFILE>`` is rewritten after each of its
    runs (this invocation's runs, one section each) and the summary block is appended to
    ``OUTPUTFILE`` by :meth:`finish`; without, each run's section is appended to OUTPUTFILE.
    A model's name is :func:`~edgeprof.sweeps.envtemplate.log_names`' over the sweep's
    ``models``, fixed before the first run so that no log ever holds two models' runs.
    """

    def __init__(
        self,
        output_file: Path,
        script: str,
        host_memory: int | None,
        several_settings: bool,
        models: Sequence[str] = (),
    ) -> None:
        self.output_file = output_file
        self.script = script
        self.host_memory = host_memory
        self.several_settings = several_settings
        self.names = log_names(models)
        self.named: list[tuple[str, RunResult]] = []
        self._logs: dict[str, list[str]] = {}

    def row_name(self, stem: str, r: RunResult, round_: int, repeat: int) -> str:
        name = stem
        if self.several_settings:
            # The cell's setting: with its leased core, each round of one setting had read
            # as another ("[cpus=1, cpuset=0]", "[cpus=1, cpuset=1]").
            name += f" [{setting(r)}]"
        if repeat > 1:
            name += f" #{round_}"
        return name

    def result(self, stem: str, model: str | None, r: RunResult, round_: int, repeat: int) -> None:
        """Record a run and write its section.  ``stem`` names a run without a model; a
        model's name is :attr:`names`' (a model the sweep did not list is a ValueError)."""
        if model is not None:
            if model not in self.names:
                raise ValueError(f"{model!r} is not one of the sweep's models")
            stem = self.names[model]
        name = self.row_name(stem, r, round_, repeat)
        self.named.append((name, r))
        section = run_log(r, name, self.script, self.host_memory, model)
        if model is None:
            append_locked(self.output_file, section)
            return
        sections = self._logs.setdefault(stem, [])
        sections.append(section)
        write_output(model_log_path(self.output_file, stem), "".join(sections))

    def finish(self, with_models: bool) -> None:
        if with_models and self.named:
            append_locked(self.output_file, summary_block(self.named, self.host_memory))
