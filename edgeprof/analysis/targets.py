"""Whether ``compare``'s paired cells measured the same code: a bench's target.

``compare`` pairs the baseline's and the current cells by label and limit setting.  A bench
labels its runs ``FUNC bs=N``, so two benches of different files that each define ``infer``
had their ``infer bs=1`` held to each other: a tester's small and large models read +5251 %
CPU time, a "regression" of nothing.  A bench's run records what it measured
(:attr:`~edgeprof.model.RunResult.target`); a pair whose sides name different targets is
refused unless asked for (``--ignore-target``), and then said, as the sides' different hosts
are (:func:`edgeprof.analysis.hosts.sides_note`).  Runs without a target (a ``run``'s, or a
file from before targets) pair as before: nothing says they differ.

``report`` reads runs together rather than pairing them: :func:`apart` names a label's runs
with their targets where two targets share it, so that its cells (by label and limit
setting, :mod:`edgeprof.analysis.cells`) keep them apart.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence

from ..errors import ConfigError
from ..model import RunResult
from ..names import printable
from .cells import group_by


def targets(runs: Iterable[RunResult]) -> tuple[str, ...]:
    """The targets ``runs`` record, in first-seen order (none for runs of no bench)."""
    return tuple(dict.fromkeys(r.target for r in runs if r.target is not None))


def differing(
    pairs: Mapping[str, tuple[Sequence[RunResult], Sequence[RunResult]]],
) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """Each paired cell (by its name) whose two sides both record targets, and not the
    same ones → (the baseline's, the current's)."""
    out = {}
    for name, (base, cur) in pairs.items():
        b, c = targets(base), targets(cur)
        if b and c and set(b) != set(c):
            out[name] = (b, c)
    return out


def _shown(found: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]]) -> tuple[str, str]:
    was = "; ".join(dict.fromkeys(t for b, _ in found.values() for t in b))
    now = "; ".join(dict.fromkeys(t for _, c in found.values() for t in c))
    return was, now


def check_targets(
    found: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]], ignore: bool
) -> str | None:
    """Refuse (:class:`ConfigError`) cells paired across different targets; with ``ignore``
    (``--ignore-target``), the note that says it.  ``None``: every pair is like with like."""
    if not found:
        return None
    was, now = _shown(found)
    cells = ", ".join(list(found)[:4]) + (f" and {len(found) - 4} more" if len(found) > 4 else "")
    if not ignore:
        raise ConfigError(
            f"the baseline and the current results bench different targets ({was} → {now}): "
            f"their runs {cells} share labels, not code; compare a bench with one of the same "
            "target, or give --ignore-target to hold one target against the other"
        )
    return (
        f"the baseline and the current results bench different targets ({was} → {now}; "
        f"--ignore-target): a change of {cells} is the difference between the targets, not "
        "a change of one model"
    )


def _file(target: str) -> str:
    """The target's file or module: ``small/model.py`` of ``small/model.py:infer, loader
    load`` (the label names the function already)."""
    return target.rpartition(":")[0]


def apart(runs: Sequence[RunResult]) -> tuple[list[RunResult], str | None]:
    """``runs`` with each run of a label that two targets or more share named with its
    target, and the note that says so (``None``: no label is shared; the runs are returned
    as they were).  A report of two benches' directories had pooled both files' ``infer
    bs=1`` into one cell: one row of 4 runs, their statistics and rankings the two programs'
    mixed.  The name is the label and the target's file (``infer bs=1 (small/model.py)``),
    or the whole target where the files are one (two loaders of one file).  Runs without a
    target keep their label: nothing says what they measured."""
    shared = _shared(runs, _labels_of_targets(runs))
    if not shared:
        return list(runs), None
    return [_named(r, shared) for r in runs], _note(shared, "these runs")


def apart_sides(
    baseline: Sequence[RunResult], current: Sequence[RunResult]
) -> tuple[list[RunResult], list[RunResult], str | None]:
    """``compare``'s :func:`apart`: a label two targets share on either side is named apart
    on both sides, by the targets both record, so that each file's cell pairs with the same
    file's (a baseline of one file's bench against a directory of two files' pairs with its
    own file's runs).  A side holding two benches had pooled them into one cell.  A label
    of one target on each side, different ones, stays as it is: :func:`check_targets`
    refuses that pair."""
    both = [*baseline, *current]
    shared = _shared(both, _labels_of_targets(baseline) | _labels_of_targets(current))
    if not shared:
        return list(baseline), list(current), None
    note = _note(shared, "the baseline and current results")
    return [_named(r, shared) for r in baseline], [_named(r, shared) for r in current], note


def _labels_of_targets(runs: Sequence[RunResult]) -> set[str]:
    """The labels two targets or more share in ``runs``."""
    return {
        label for label, group in group_by(runs, lambda r: r.label).items()
        if len(targets(group)) > 1
    }  # fmt: skip


def _shared(runs: Sequence[RunResult], labels: set[str]) -> dict[str, tuple[str, ...]]:
    """Each of ``labels`` → the targets its runs in ``runs`` record."""
    return {
        label: targets(group)
        for label, group in group_by(runs, lambda r: r.label).items()
        if label in labels
    }


def _named(r: RunResult, shared: Mapping[str, tuple[str, ...]]) -> RunResult:
    found = shared.get(r.label)
    if found is None or r.target is None:
        return r
    files = {_file(t) for t in found}
    which = _file(r.target) if len(files) == len(found) else r.target
    return dataclasses.replace(r, name=f"{r.label} ({printable(which)})")


def _note(shared: Mapping[str, tuple[str, ...]], whose: str) -> str:
    every = list(dict.fromkeys(t for found in shared.values() for t in found))
    labels = ", ".join(list(shared)[:4]) + (
        f" and {len(shared) - 4} more" if len(shared) > 4 else ""
    )
    return (
        f"{whose} bench {len(every)} targets ({'; '.join(every)}) under the same labels "
        f"({labels}): each such run is named with its target, and no cell pools two targets"
    )
