"""A sweep's plan: its models, limit settings, rounds and shard, and the steps they make, in
a stable interleaved order (the rounds are the outer loop: round 1 runs every cell once,
then round 2 …, so a slow drift of the machine hits every model alike)."""

from __future__ import annotations

import dataclasses
import itertools
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..analysis.difference import DEFAULT_TARGET
from ..errors import ConfigError
from ..model import Limits
from ..names import printable
from .labels import model_labels


@dataclass(frozen=True)
class Step:
    """One run of a sweep, as the progress callbacks see it."""

    index: int
    """1-based position in the sweep (warm-up runs included)."""
    total: int
    model: str | None
    """The model argument appended to the command (``None``: the command as given)."""
    label: str | None
    limits: Limits
    round: int
    """1-based round among the warm-up rounds (``warmup``) or among the measured ones."""
    warmup: bool
    program: str = "run"
    """The command's file name: what a run without a model or ``--name`` is called, as its
    result's :attr:`~edgeprof.model.RunResult.label` calls it."""

    @property
    def name(self) -> str:
        """The run as progress lines name it: its label, else its program."""
        return self.label or self.program


@dataclass(frozen=True)
class AutoRepeat:
    """``--repeat auto``: measured rounds go on, past ``min_runs``, only for the cells of
    ranking neighbours not yet resolved (:mod:`edgeprof.analysis.repeats`), up to
    ``max_runs`` rounds."""

    min_runs: int = 3
    max_runs: int = 10
    target: float = DEFAULT_TARGET
    """Precision: neighbours whose difference is within this fraction of the better one's
    mean (at the per-look level of :func:`edgeprof.analysis.repeats.look_confidence`) are
    resolved as equivalent."""

    def __post_init__(self) -> None:
        if self.min_runs < 2:
            raise ConfigError(
                f"--min-runs {self.min_runs}: must be at least 2 (one run has no noise to test)"
            )
        if self.max_runs < self.min_runs:
            raise ConfigError(
                f"--max-runs {self.max_runs}: must be at least --min-runs ({self.min_runs})"
            )
        if not 0 < self.target < 1:
            raise ConfigError(f"--target {self.target * 100:g}%: must be above 0% and below 100%")


@dataclass(frozen=True)
class SweepPlan:
    """What a sweep runs: ``command`` (+ each model as one last argument) × ``limits``, with
    ``warmup`` discarded and ``repeat`` measured rounds."""

    command: tuple[str, ...]
    models: tuple[str, ...] = ()
    limits: tuple[Limits, ...] = (Limits(),)
    repeat: int = 1
    warmup: int = 0
    name: str | None = None
    """Label of the runs (``--name``): of the command's, or of its one model's; several
    models are labelled by :func:`model_labels`."""
    allow_over_host: bool = False
    """``--allow-over-host``: limits beyond the host's CPUs or memory are not refused
    (:func:`edgeprof.measure.limits.resolve`)."""
    auto: AutoRepeat | None = None
    """``--repeat auto``: ``repeat`` is then ``auto.max_runs``, the most rounds it may run."""
    _labels: dict[str, str] = field(init=False, repr=False, compare=False, default_factory=dict)
    """Each model's label (:func:`model_labels`), made once the models are checked."""
    shard: tuple[int, int] | None = None
    """``--shard I/N``: this part runs the measured rounds I, I + N, I + 2N … (and every
    warm-up round): every shard measures every model, so each host is a block of the design
    and rankings compare like with like (:mod:`edgeprof.sweeps.merge`)."""
    stop_on_failure: bool = False
    """A run that does not exit 0 by itself ends the sweep (``fit``'s unlimited runs: a
    command that fails without a limit fails in each, so the rest would only repeat it)."""
    workdir: str | None = field(default=None, compare=False)
    """The directory the workload runs in (``--cwd``, else edgeprof's own, resolved), which
    its command's relative paths name files from; ``sweep.json`` records it, and ``run
    --resume`` refuses another (``sh w2.sh`` resumed from ``/tmp`` had run the absent
    ``/tmp/w2.sh``: 6 runs ``exited (2)``, pooled with the 2 good ones).  ``None``: not known
    here (a container without ``--cwd`` runs in its image's; a plan made in Python)."""
    budgets: Mapping[str, Any] | None = field(default=None, compare=False)
    """The budgets the sweep is gated on, as ``sweep.json`` records them
    (:meth:`~edgeprof.analysis.budgets.Budgets.to_dict`): ``report DIR`` checks them again
    (its Markdown and page had shown no verdict of a gate that failed)."""

    def __post_init__(self) -> None:
        if self.auto is not None and self.repeat != self.auto.max_runs:
            raise ValueError("an automatic plan repeats up to auto.max_runs")
        if self.shard is not None:
            index, count = self.shard
            if not 1 <= index <= count:
                raise ConfigError(f"--shard {index}/{count}: expected I/N with 1 ≤ I ≤ N")
            if self.auto is not None:
                raise ConfigError(
                    "--shard splits a fixed number of rounds: give --repeat N, not auto"
                )
            if count > self.repeat:
                raise ConfigError(
                    f"--shard {index}/{count} with --repeat {self.repeat}: a shard is a set "
                    f"of rounds, so --repeat must be at least {count}"
                )
        if self.repeat < 1:
            raise ConfigError(f"--repeat {self.repeat}: must be at least 1")
        if self.warmup < 0:
            raise ConfigError(f"--warmup {self.warmup}: must be 0 or more")
        if not self.limits:
            raise ConfigError("a sweep needs at least one limit setting")
        described = [lim.describe() for lim in self.limits]
        dup = next((d for d in described if described.count(d) > 1), None)
        if dup is not None:
            raise ConfigError(f"the limit setting {dup!r} is listed twice")
        if self.name is not None and len(self.models) > 1:
            # One label for every model made them one model's repeats, each run's files
            # over the last's.
            raise ConfigError(
                f"--name {self.name} with {len(self.models)} models: each model is labelled "
                "by its file name (by as much of its path as tells it apart)"
            )
        labels = dict(zip(self.models, model_labels(self.models), strict=True))
        object.__setattr__(self, "_labels", labels)  # frozen: set once, here

    @property
    def is_single(self) -> bool:
        """One run only: its files go straight into ``--out``, as a plain ``run`` writes."""
        return (
            not self.models
            and len(self.limits) == 1
            and self.repeat == 1
            and not self.warmup
            and self.auto is None
            and self.shard is None
        )

    def rounds(self) -> list[int]:
        """The measured rounds this plan runs (1-based): all, or its shard's."""
        every = range(1, self.repeat + 1)
        if self.shard is None:
            return list(every)
        index, count = self.shard
        return [k for k in every if (k - 1) % count == index - 1]

    def recorded(self) -> dict[str, Any]:
        """The plan as ``sweep.json`` records it (its keys, in its order): what ``--resume``
        holds the earlier sweep to."""
        auto = None if self.auto is None else dataclasses.asdict(self.auto)
        shard = None
        if self.shard is not None:
            index, count = self.shard
            shard = {"index": index, "count": count, "rounds": self.rounds()}
        return {
            "command": list(self.command),
            "models": list(self.models),
            "limits": [lim.describe() for lim in self.limits],
            "repeat": self.repeat if self.auto is None else "auto",
            **({} if auto is None else {"auto": auto}),
            **({} if shard is None else {"shard": shard}),
            "warmup": self.warmup,
        }

    def label(self, model: str | None) -> str | None:
        return self.name if model is None else (self.name or self._labels[model])

    def steps(self) -> list[Step]:
        """Every run in execution order: rounds outermost, then limit settings, then models
        (with ``auto``, every run it may make: :func:`run_sweep` skips the resolved)."""
        models: list[str | None] = [*self.models] if self.models else [None]
        rounds = [(True, k + 1) for k in range(self.warmup)]
        rounds += [(False, k) for k in self.rounds()]
        order = list(itertools.product(rounds, self.limits, models))
        program = printable(Path(self.command[0]).name) if self.command else "run"
        return [
            Step(i + 1, len(order), model, self.label(model), lim, rnd, warm, program)
            for i, ((warm, rnd), lim, model) in enumerate(order)
        ]

    def measured_steps(self) -> list[Step]:
        """:meth:`steps` but the warm-ups: the runs a sweep's statistics are made of."""
        return [s for s in self.steps() if not s.warmup]


def plan_difference(key: str, theirs: Any, mine: Any, whose: str = "their", now: str = "") -> str:
    """How two sweeps' plans (or their runs' ways of measuring) differ in ``key``, as text:
    ``their models are in another order (a, b; b, a)``, ``its repeat differs (2, now 3)``
    (``whose``, and ``now`` before the second, for ``run --resume``'s earlier sweep against
    this one).  The values had been printed as Python's (``(['a', 'b'], now ['a', 'c'])``,
    ``((), now ('K=1',))``), the same models in another order as "their models differ", and a
    merge's count as "their count differs (2, 3)"."""
    if key == "count":
        return f"{whose} number of parts differs (--shard I/{theirs}, {now}--shard I/{mine})"
    if isinstance(theirs, list | tuple) and isinstance(mine, list | tuple):
        join = shlex.join if key == "command" else ", ".join

        def shown(v: Sequence[Any]) -> str:
            return join(map(str, v)) or "none"

        said = f"({shown(theirs)}; {now}{shown(mine)})"
        if key == "command":  # each shard's command, one sweep's
            return f"{whose} {'commands differ' if whose == 'their' else 'command differs'} {said}"
        order = sorted(map(str, theirs)) == sorted(map(str, mine))
        verb = "differs" if key.startswith("runs'") else "differ"
        return f"{whose} {key} {'are in another order' if order else verb} {said}"
    return f"{whose} {key} differs ({theirs}, {now}{mine})"
