"""Cells: the runs of one model (``RunResult.label``) under one limit setting
(:func:`setting`).  Every per-model figure (statistics, rankings, budgets, baseline
comparisons, calibration points, the notes under the tables) is computed per cell, from the
groups made here.  Orders are first-seen, so tables follow the order the runs were made in.
A label is not a program: where a report reads two benches whose targets share one (each
file's ``infer bs=1``), :func:`edgeprof.analysis.targets.apart` names their runs apart first.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import TypeVar

from ..cpu_units import CFS_PERIOD_US, format_cpuset, format_period, parse_cpuset
from ..errors import ConfigError
from ..model import CoreLease, Limits, RunResult, Termination
from ..model.results import signal_name

CellKey = tuple[str, str]
"""(label, :func:`setting`)."""

_K = TypeVar("_K", bound=Hashable)


def setting(r: RunResult) -> str:
    """The run's limit setting as a label (``Limits.describe()``), without the cores edgeprof
    chose itself for an integer ``cpus``: those are whichever were free (leased at run
    time), so two rounds of one sweep on cores 0 and 1 are one setting, ``cpus=1``.  An
    explicit ``--cpuset`` stays in the label.  Files from before leases carry no lease:
    there a cpuset of exactly ``cpus`` cores was edgeprof's own choice (the first free
    cores), which a same-sized explicit cpuset cannot be told apart from, and means the
    same device.  Every output that names a cell's setting takes it from here (or from
    :func:`described`), and the cores apart from :func:`leased_cores`."""
    return described(r.limits, r.lease)


def described(limits: Limits, lease: CoreLease | None) -> str:
    """:func:`setting`'s label of ``limits`` as applied under ``lease``: for a label of limits
    other than the run's own (``fit``'s setting, the run's without its memory limit, had
    kept the leased core: ``limits: cpus=1, cpuset=0``)."""
    if lease is None:  # a file from before leases, or a run that pinned nothing
        return without_chosen_cores(limits.describe())
    if lease.chosen:
        return dataclasses.replace(limits, cpuset=None).describe()
    return limits.describe()


def period_in_force(r: RunResult) -> str:
    """``, cpu-period=5ms``: the CFS period of a fractional ``cpus`` quota where the setting
    does not name it (edgeprof chose it: :func:`edgeprof.measure.limits.cpu_period_us`), for
    the heads that say a run's limits; ``""`` otherwise.  The period decides how the quota's
    stalls fall on the iterations, and a head had said ``cpu-period=100ms`` where it was
    given and nothing of the 5 ms default (a tester's ``limits: cpus=0.5, cpuset=0``).  Not
    part of :func:`setting`: the label that groups runs into cells stays the user's.  A whole
    ``cpus`` on more cores than it (``--cpus 1 --cpuset 0-1``) can stall too, and edgeprof
    gave it the short period: said where it is not the kernel's 100 ms (a tester's run
    throttled 82 times under a head that named no period)."""
    cpus, period = r.limits.cpus, r.cpu.period_s
    if cpus is None or r.limits.cpu_period_us is not None or not period:
        return ""
    if cpus.is_integer() and round(period * 1e6) == CFS_PERIOD_US:
        return ""
    return f", cpu-period={format_period(round(period * 1e6))}"


def leased_cores(runs: Sequence[RunResult]) -> str:
    """`` (leased core 0)``, `` (each run leased one core: 0 or 1)``: the cores edgeprof
    chose for the runs of an integer ``cpus``, each run's, said apart from the setting
    (:func:`setting`); ``""`` where it chose none.  A head had given the first run's
    (``cpus=1, cpuset=0``) as the cell's setting while its run 3 ran on CPU 1.  Runs given
    different cores are said per run: their union, "leased cores 0 and 1", had read as two
    cores for a ``--cpus 1`` device (a tester's)."""
    chosen = [c for r in runs if (c := _chosen_cores(r)) is not None]
    if not chosen:
        return ""
    distinct = list(dict.fromkeys(format_cpuset(c) for c in chosen))
    # Files from before leases pinned the first free cores without leasing them.
    how = "leased" if any(r.lease is not None for r in runs) else "pinned to"
    if len(distinct) == 1:
        return f" ({how} core{'s' if len(chosen[0]) > 1 else ''} {distinct[0]})"
    sizes = {len(c) for c in chosen}
    each = "its cores" if len(sizes) > 1 else (
        "one core" if sizes == {1} else f"{sizes.pop()} cores"
    )
    return f" (each run {how} {each}: {', '.join(distinct[:-1])} or {distinct[-1]})"


def _chosen_cores(r: RunResult) -> tuple[int, ...] | None:
    """The cores edgeprof chose for ``r`` (its lease's; in a file from before leases, a
    cpuset :func:`described` takes as edgeprof's choice: an upgrading user's old run had
    read ``limits: cpus=1`` with no word of its core); ``None``: none chosen."""
    if r.lease is not None:
        return r.lease.cores if r.lease.chosen else None
    if r.limits.cpuset is None or "cpuset=" in described(r.limits, None):
        return None
    return tuple(r.limits.cpuset)


def cell_name(key: tuple[str, str]) -> str:
    """A cell as every output names it: ``model (cpus=1)``, its key's label and
    :func:`setting`; the label alone where the key has no setting (``--ignore-limits``)."""
    return f"{key[0]} ({key[1]})" if key[1] else key[0]


def ran_under(r: RunResult, limits: Limits) -> bool:
    """Whether ``r`` ran under the setting ``limits`` as it was asked (a sweep's plan holds
    it so): the cores edgeprof chose for an integer ``cpus`` are the host's choice (whichever
    were free, ``limits.cpuset: [0]``), not part of what was asked.  Compared with them,
    ``run --resume`` had kept 0 of 4 finished ``--cpus 1`` runs.  An explicit ``cpuset`` is
    asked, and compared.  A run without a lease (a remote Docker daemon's) reads as
    :func:`setting` reads it: a cpuset of exactly ``cpus`` cores was edgeprof's choice."""
    if r.limits == limits:
        return True
    chosen = r.lease is None or r.lease.chosen
    return (
        chosen
        and limits.cpuset is None
        and r.limits.cpuset is not None
        and limits.cpus == len(r.limits.cpuset)
        and dataclasses.replace(r.limits, cpuset=None) == limits
    )


def without_chosen_cores(text: str) -> str:
    """A setting label written before leases (``cpus=1, cpuset=0, memory=1.0GiB``) as
    :func:`setting` writes it now: a cpuset of exactly ``cpus`` cores was edgeprof's own
    first-N choice, so it goes.  For files that store labels (calibrations)."""
    parts = text.split(", ")
    kv = dict(p.split("=", 1) for p in parts if "=" in p)
    if "cpus" not in kv or "cpuset" not in kv:
        return text
    try:
        cpus = float(kv["cpus"])
        cores = len(parse_cpuset(kv["cpuset"]))
    except (ValueError, ConfigError):
        return text
    if cpus == cores:
        return ", ".join(p for p in parts if not p.startswith("cpuset="))
    return text


def cell_key(r: RunResult) -> CellKey:
    return (r.label, setting(r))


def run_numbers(runs: Iterable[RunResult]) -> list[int]:
    """Each run's number within its cell (1-based, in the order given): what the cells'
    warnings call it ("run 2 failed") and, in a sweep that ran every round of its cells, the
    round of its directory (``OUT/<label>/<round>/``)."""
    seen: Counter[CellKey] = Counter()
    numbers = []
    for r in runs:
        key = cell_key(r)
        seen[key] += 1
        numbers.append(seen[key])
    return numbers


def group_by(
    runs: Iterable[RunResult], key: Callable[[RunResult], _K]
) -> dict[_K, list[RunResult]]:
    """``key`` → its runs, both in first-seen order."""
    out: dict[_K, list[RunResult]] = {}
    for r in runs:
        out.setdefault(key(r), []).append(r)
    return out


def cells(runs: Iterable[RunResult]) -> dict[CellKey, list[RunResult]]:
    """(label, setting) → the cell's runs, in first-seen order."""
    return group_by(runs, cell_key)


def cells_by_setting(runs: Iterable[RunResult]) -> dict[str, dict[str, list[RunResult]]]:
    """Setting → label → the cell's runs: the cells grouped per limit setting, settings and
    labels each in first-seen order (how the comparison tables are laid out)."""
    out: dict[str, dict[str, list[RunResult]]] = {}
    for (label, setting), group in cells(runs).items():
        out.setdefault(setting, {})[label] = group
    return out


def cell_order(runs: Sequence[RunResult]) -> list[RunResult]:
    """``runs`` grouped for display: by limit setting, then by label (both in first-seen
    order), each cell's runs in execution order."""
    settings: dict[str, int] = {}
    labels: dict[str, int] = {}
    for r in runs:
        settings.setdefault(setting(r), len(settings))
        labels.setdefault(r.label, len(labels))
    return sorted(runs, key=lambda r: (settings[setting(r)], labels[r.label]))


def successful(runs: Sequence[RunResult]) -> list[RunResult]:
    """The runs that exited 0: the only ones whose figures describe the model's work."""
    return [r for r in runs if r.succeeded]


def stopped(r: RunResult) -> bool:
    """``--timeout`` stopped the run (a service, which has no end of its own): no failure,
    and its iterations' figures are as whole as a finished run's (:func:`measured`)."""
    return r.termination is Termination.TIMEOUT


def measured(runs: Sequence[RunResult], per_iteration: bool) -> list[RunResult]:
    """The runs whose figures a cell's statistics, rankings, ``compare`` and budgets count:
    the successful ones, and, for a figure of the workload's iterations (``per_iteration``:
    :attr:`~edgeprof.analysis.metrics.Metric.per_iteration`, a latency percentile, the
    iterations' throughput, or the GPU energy per item, the energy inside the iterations over
    their items), those ``--timeout`` stopped (:func:`stopped`).  A percentile over the
    iterations a run completed, their items per second or their energy per item, is one of each
    iteration, not of the run, so where the run was cut moves it no more than a finished
    run's count of iterations does; a whole-run figure (wall time, CPU time, average memory)
    is of where it was cut, and stays of the successful runs alone.  Peak memory too: a cut
    run's is a lower bound of what a longer run needs (budgets say so of it:
    :mod:`~edgeprof.analysis.budget_checks`).  Before this, a service's sweep
    (``run --timeout 30``) ranked nothing, compared nothing and budgeted nothing, though its
    latency p50/p95/p99 were per-iteration.  Failed runs (exit ≠ 0, OOM, a signal not from
    ``--timeout``) stay out of every figure."""
    return [r for r in runs if r.succeeded or (per_iteration and stopped(r))]


def stopped_words(runs: Sequence[RunResult]) -> str:
    """Where a cell's per-iteration figures include runs ``--timeout`` stopped, said so:
    ``3 runs, --timeout stopped each: per-iteration figures``, ``2 of 3 runs --timeout
    stopped: per-iteration figures``; ``""`` where none was stopped.  One wording for the
    rankings, ``compare`` and budgets."""
    n = sum(map(stopped, runs))
    if not n:
        return ""
    if n == len(runs):
        each = "its run, --timeout stopped it" if n == 1 else f"{n} runs, --timeout stopped each"
    else:
        each = f"{n} of {len(runs)} runs --timeout stopped"
    return f"{each}: per-iteration figures"


def failed(runs: Sequence[RunResult]) -> list[RunResult]:
    """The runs that failed (exit ≠ 0, OOM, a signal not from ``--timeout``): those
    :func:`measured` counts in no figure.  A run ``--timeout`` stopped is none: JUnit had
    failed a service's cell on it ("0 of 3 runs succeeded (failed: timeout, …)"), and the
    CI summary headed it "❌ 3 of 3 runs failed"."""
    counted = {id(r) for r in measured(runs, per_iteration=True)}
    return [r for r in runs if id(r) not in counted]


def stopped_count(runs: Sequence[RunResult]) -> str:
    """How many of ``runs`` ``--timeout`` stopped, and what of them counts: ``1 stopped by
    --timeout: its per-iteration figures count``; ``""`` where none was.  The run counts'
    words (JUnit, the CI summary, ``--repeat auto``'s table), beside "N of M runs
    succeeded"."""
    n = sum(map(stopped, runs))
    if not n:
        return ""
    return f"{n} stopped by --timeout: {'its' if n == 1 else 'their'} per-iteration figures count"


def ending(r: RunResult) -> str:
    """How a run ended, in a word or two: ``exit 1``, ``oom``, ``timeout``, ``SIGSEGV``."""
    if r.termination is Termination.EXITED:
        return f"exit {r.exit_code}"
    if r.termination is Termination.SIGNALED and r.signal is not None:
        return signal_name(r.signal)
    return str(r.termination.value)


def endings(runs: Sequence[RunResult]) -> str:
    """How ``runs`` ended, each ending once with its count, in first-seen order:
    ``oom``, ``oom ×3``, ``oom ×2, exit 1``."""
    counts = Counter(ending(r) for r in runs)
    return ", ".join(e if n == 1 else f"{e} ×{n}" for e, n in counts.items())


_SETTING_KEYS = {
    "cpus": "cpus",
    "cpuset": "cpuset",
    "memory": "memory",
    "pids": "pids",
    "cpu-period": "cpu_period_us",
    "read": "read_bps",
    "write": "write_bps",
    "read-iops": "read_iops",
    "write-iops": "write_iops",
}


def setting_spec(text: str) -> dict[str, str] | None:
    """``compare --setting``'s text (``cpus=2``, ``cpus=1,memory=1g``, ``none``) as the
    parts of a setting label, each value spelt as :func:`setting` spells it (``memory=1g``
    is ``memory=1.0GiB``); ``None`` for ``none``, the setting of no limits.  Bad input is a
    :class:`ConfigError` naming the option."""
    if text.strip() == "none":
        return None
    items: list[str] = []
    for piece in text.split(","):
        if "=" not in piece and items:  # a cpuset's own comma: cpuset=0,2
            items[-1] += "," + piece.strip()
        else:
            items.append(piece.strip())
    kwargs: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or key.strip() not in _SETTING_KEYS or not value.strip():
            raise ConfigError(
                f"--setting {text!r}: expected limits as the LIMITS column writes them, e.g. "
                f"cpus=2 or cpus=1,memory=1g (keys: {', '.join(_SETTING_KEYS)}), or none"
            )
        kwargs[_SETTING_KEYS[key.strip()]] = value.strip()
    try:
        label = Limits(**kwargs).describe()
    except ConfigError as exc:
        raise ConfigError(f"--setting {text!r}: {exc}") from None
    return _parts(label)


def _parts(label: str) -> dict[str, str]:
    return dict(p.split("=", 1) for p in label.split(", ") if "=" in p)


def in_setting(label: str, spec: dict[str, str] | None) -> bool:
    """Whether the setting ``label`` (:func:`setting`) has every limit of ``spec``
    (:func:`setting_spec`) as it says: ``cpus=2`` picks ``cpus=2`` and ``cpus=2,
    memory=1.0GiB``; ``None`` picks the setting of no limits."""
    if spec is None:
        return label == "none"
    parts = _parts(label)
    return all(parts.get(k) == v for k, v in spec.items())


def pick_setting(
    runs: Sequence[RunResult], text: str, where: str, hint: str = ""
) -> list[RunResult]:
    """The runs of ``runs`` (``where``'s) measured under ``text`` (:func:`setting_spec`);
    none is a :class:`ConfigError` that lists the settings ``where`` holds (and ``hint``)."""
    spec = setting_spec(text)
    kept = [r for r in runs if in_setting(setting(r), spec)]
    if not kept:
        held = "; ".join(dict.fromkeys(setting(r) for r in runs))
        raise ConfigError(
            f"--setting {text}: no run of {where} has it (its settings: {held}){hint}"
        )
    return kept
