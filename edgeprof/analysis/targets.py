"""Whether ``compare``'s paired cells measured the same code: a bench's target.

``compare`` pairs the baseline's and the current cells by label and limit setting.  A bench
labels its runs ``FUNC bs=N``, so two benches of different files that each define ``infer``
had their ``infer bs=1`` held to each other: a tester's small and large models read +5251 %
CPU time, a "regression" of nothing.  A bench's run records what it measured
(:attr:`~edgeprof.model.RunResult.target`); a pair whose sides name different targets is
refused unless asked for (``--ignore-target``), and then said, as the sides' different hosts
are (:func:`edgeprof.analysis.hosts.sides_note`).  Runs without a target (a ``run``'s, or a
file from before targets) pair as before: nothing says they differ.

``report`` reads runs together rather than pairing them:
:func:`edgeprof.analysis.apart.apart` names a label's runs with their targets where two
targets share it, so that its cells (by label and limit setting,
:mod:`edgeprof.analysis.cells`) keep them apart.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ..errors import ConfigError
from ..model import RunResult


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
