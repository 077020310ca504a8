"""``compare --pair BASE=CUR``: a baseline's model held against a current model of another
name.  ``compare`` pairs cells by label; two variants of one model (``model_fp32`` against
``model_int8``) had to be run again under one ``--name`` to be compared at all.  A pair
gives both sides' cells one joint label, ``model_fp32 → model_int8`` (as a setting that
differs reads ``cpus=1 → cpus=2``), so every row, note, JUnit case and ``--json`` label
names both, and the rest of ``compare`` pairs them as cells of one name."""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping, Sequence
from typing import TypeVar

from ..errors import ConfigError

R = TypeVar("R")


def joint(base: str, current: str) -> str:
    """The label a pair's rows carry."""
    return f"{base} → {current}"


def paired(
    base_cells: Mapping[tuple[str, str], R],
    cur_cells: Mapping[tuple[str, str], R],
    texts: Sequence[str],
) -> tuple[dict[tuple[str, str], R], dict[tuple[str, str], R]]:
    """Both sides' cells, keyed by (label, setting), with each pair's labels made their
    :func:`joint` label; ``texts``: ``BASE=CUR`` each (:func:`resolve`)."""
    base_labels = [k[0] for k in base_cells]
    cur_labels = [k[0] for k in cur_cells]
    pairs = resolve(texts, base_labels, cur_labels)
    to_b = {b: joint(b, c) for b, c in pairs}
    to_c = {c: joint(b, c) for b, c in pairs}
    return (
        {(to_b.get(label, label), where): v for (label, where), v in base_cells.items()},
        {(to_c.get(label, label), where): v for (label, where), v in cur_cells.items()},
    )


def resolve(
    texts: Sequence[str], base_labels: Iterable[str], cur_labels: Iterable[str]
) -> list[tuple[str, str]]:
    """Each ``BASE=CUR`` as (baseline label, current label), split at the ``=`` whose sides
    are labels of their sides: a label may hold one (a bench's ``infer bs=1``).  A name the
    side lacks, or a label in two different pairs on a side, is one :class:`ConfigError` line
    (a pair that matched nothing would compare nothing and pass); the same pair given twice
    is one pair."""
    base, cur = set(base_labels), set(cur_labels)
    out: list[tuple[str, str]] = []
    for text in texts:
        splits = [(text[:i], text[i + 1 :]) for i, ch in enumerate(text) if ch == "="]
        splits = [(b, c) for b, c in splits if b and c]
        if not splits:
            raise ConfigError(
                f"--pair {text!r}: write BASELINE_NAME=CURRENT_NAME (e.g. --pair "
                "model_fp32=model_int8)"
            )
        found = [(b, c) for b, c in splits if b in base and c in cur]
        if not found:
            raise ConfigError(f"--pair {text}: {_lacking(splits, base, cur)}")
        # The same pair twice (in EDGEPROF_CI_COMPARE_ARGS and on the command line) had been
        # "paired more than once": it is one pair.
        if found[0] not in out:
            out.append(found[0])
    for side, names in (("baseline", [b for b, _ in out]), ("current", [c for _, c in out])):
        if twice := sorted({n for n in names if names.count(n) > 1}):
            raise ConfigError(
                f"--pair: {', '.join(twice)} is paired more than once in the {side}: a cell "
                "holds one side of one pair"
            )
    return out


def taken(
    label: str, side: str, pairs: Sequence[tuple[str, str]]
) -> str | None:
    """Why a cell of ``side`` (``baseline``, ``current``) named ``label`` has no partner: the
    other side's cell of its name is held in a pair (``--pair small=big`` where both sides
    hold both: the baseline's big had been "only in the baseline: not in the current
    results", failed as not measured, beside the current's big in the pair); ``None`` where
    no pair took it."""
    if side == "baseline":
        held = [b for b, c in pairs if c == label]
        other, pair = "current", (f"{held[0]}={label}" if held else "")
    else:
        held = [c for b, c in pairs if b == label]
        other, pair = "baseline", (f"{label}={held[0]}" if held else "")
    if not held:
        return None
    mate = "baseline" if other == "current" else "current"
    return (
        f"not compared: the {other}'s {label} is held against the {mate}'s {held[0]} "
        f"(--pair {pair}), and a cell holds one side of one pair"
    )


def _lacking(splits: Sequence[tuple[str, str]], base: set[str], cur: set[str]) -> str:
    """What a ``--pair`` that matched no labels lacks: the baseline's name, else the
    current's, with the labels that side has."""
    with_base = [(b, c) for b, c in splits if b in base]
    if with_base:
        theirs = ", ".join(sorted(cur))
        return f"the current results have no model {with_base[0][1]} (theirs: {theirs})"
    return f"the baseline has no model {splits[0][0]} (its models: {', '.join(sorted(base))})"


def pair_hint(
    base_labels: Iterable[str], cur_labels: Iterable[str], limits_differ: bool = False
) -> str:
    """The fix ``compare`` names when no cell is in both: a ``--pair`` of the sides' labels
    (``--pair model_fp32=model_int8`` where each side has one model), and
    ``--ignore-limits`` where the sides share no setting either (two cards' runs: the
    ``--pair`` named alone had been refused for their limits, a storage user's)."""
    base, cur = sorted(set(base_labels)), sorted(set(cur_labels))
    one = len(base) == 1 and len(cur) == 1
    example = shlex.quote(f"{base[0]}={cur[0]}") if one else "BASE_NAME=CUR_NAME"
    also = " --ignore-limits (their limits differ too)" if limits_differ else ""
    return f"to hold one variant against another, pair them: --pair {example}{also}"
