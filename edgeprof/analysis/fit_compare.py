"""Two ``fit.json`` files compared (``edgeprof compare`` of fits): each model's memory need,
as :class:`~edgeprof.analysis.regression.Change` rows judged as runs' metrics are."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import ConfigError
from .cells import cell_name, without_chosen_cores
from .metrics import BY_KEY
from .regression import Change, Verdict, missing_note
from .verdicts import judge


def compare_fits(
    baseline: Sequence[Mapping[str, Any]],
    current: Sequence[Mapping[str, Any]],
    threshold: float = 0.05,
    match_limits: bool = True,
    allow_missing: bool = False,
) -> tuple[list[Change], list[str]]:
    """Two ``fit.json`` files' answers (the memory need, one per model), as :class:`Change`
    rows of the ``memory_need`` metric.

    A bisection's answer lies within its resolution above the need, so the resolution plays
    the part of the confidence interval: a **regression** is a growth larger than the
    threshold by more than the larger resolution of the two fits.  A fit with no answer
    (nothing up to its ceiling fitted, or it stopped) is **not measured**, and fails.
    """
    metric = BY_KEY["memory_need"]

    def keyed(docs: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], Mapping[str, Any]]:
        return {(str(d["name"]), _setting(d) if match_limits else ""): d
                for d in docs}  # fmt: skip

    base, cur = keyed(baseline), keyed(current)
    missing = [k for k in base if k not in cur]
    notes = [missing_note(k, allow_missing) for k in missing]
    notes += [f"{cell_name(k)}: new (not in the baseline)" for k in cur if k not in base]
    common = [k for k in cur if k in base]
    if not common:
        raise ConfigError(_nothing_common(base, cur))
    changes = [
        Change(k[0], _setting(base[k]), metric, (b,), (), Verdict.NOT_MEASURED)
        for k in ([] if allow_missing else missing)
        if (b := base[k].get("min_memory_bytes")) is not None
    ]
    notes.append("memory need: ± the fits' resolution (a bisection's answer is within it)")
    for key in common:
        b, c = base[key].get("min_memory_bytes"), cur[key].get("min_memory_bytes")
        if b is None:
            notes.append(f"{cell_name(key)}: the baseline fit has no answer: nothing to hold to")
            continue
        if c is None:
            why = cur[key].get("stopped") or "nothing up to its ceiling fits"
            notes.append(f"{cell_name(key)}: the current fit has no answer ({why})")
            # The why: without it the gate had called it a model missing from the current
            # results, "which --allow-missing notes instead", which it does not (a user's).
            changes.append(
                Change(key[0], key[1], metric, (b,), (), Verdict.NOT_MEASURED,
                       why=f"the current fit has no answer ({why})")
            )  # fmt: skip
            continue
        res = max(int(base[key].get("resolution_bytes") or 0),
                  int(cur[key].get("resolution_bytes") or 0))  # fmt: skip
        # No runs to test: the interval is the searches' resolution either way.
        change, ci = (c - b) / b, res / b
        verdict = judge(change - ci, change + ci, threshold)
        changes.append(
            Change(key[0], key[1], metric, (b,), (c,), verdict, change, change - ci, change + ci)
        )
        if verdict is Verdict.INCONCLUSIVE and ci > threshold:
            # Two equal answers read "inconclusive" and nothing said why (a verifier's).
            notes.append(
                f"{cell_name(key)}: the fits' resolution (±{ci * 100:.1f}%) is wider than the "
                f"{threshold * 100:g}% threshold, so no change within it can be told from none: "
                "fit both with a finer --resolution"
            )
    return changes, notes


def _setting(doc: Mapping[str, Any]) -> str:
    """A ``fit.json``'s setting as :func:`~edgeprof.analysis.cells.setting` labels it: a file
    written before it did (``cpus=1, cpuset=0``: the core leased to the reference run) reads
    ``cpus=1``, the label of a fit of the same setting whose runs leased core 1."""
    return without_chosen_cores(str(doc.get("limits", "")))


def _nothing_common(
    base: Mapping[tuple[str, str], object], cur: Mapping[tuple[str, str], object]
) -> str:
    """Why no model can be compared; where a model is in both at other limits, how to
    compare it anyway (``--ignore-limits``)."""
    named = sorted({k[0] for k in base} & {k[0] for k in cur})
    if not named:
        return "no fitted model is in both the baseline and the current fit.json"

    def at(side: Mapping[tuple[str, str], object]) -> str:
        return "; ".join(sorted({k[1] for k in side if k[0] == named[0]}))

    return (
        f"no fitted model is in both fit.json files at the same limits: {named[0]} was fitted "
        f"at {at(base)} in the baseline and at {at(cur)} now (--ignore-limits compares them "
        "anyway)"
    )
