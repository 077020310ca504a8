"""The notes under the HTML page's results table, grouped: a warning that several runs had
in the same words but for its figures is one line, naming the runs it covers and the range of
each figure.  A busy host gives every run of a sweep the "held off its CPU" warning: the page
of a 12-run sweep had 12 such lines, near alike, between its memory verdicts."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from .results import NoteLine

_WARNING = re.compile(
    r"warning(?: \((?:(?P<every>every run)|runs? (?P<runs>[\d, ]+))\))?: (?P<body>.*)", re.DOTALL
)
_FIGURE = re.compile(r"(?<![\w.\-])\d+(?:\.\d+)?(?=(?:ms|µs|s|%|[KMG]iB|B|×)(?![\w\-]))")
"""A figure is a number with its unit (``0.24s``, ``74%``, ``65.8MiB``): digits in a name, a
CPU list or a call (``rpi4-1gb``, ``0-1``, ``set_num_threads(2)``) are words, or the groups
had read "CPUs 0–2,1–3", "rpi4–5-1–8gb" and "set_num_threads(2–4)" (a reviewer's)."""


@dataclass
class _Group:
    """One wording's warnings: who had it, and each of its figures as they read."""

    who: dict[str, list[int] | None] = field(default_factory=dict)
    """Each label's runs by their place in its cell (``None``: all of them)."""
    figures: list[list[str]] = field(default_factory=list)


def grouped_notes(lines: Sequence[NoteLine], *, settings: bool) -> list[tuple[str, bool]]:
    """The page's notes (not the heads), in order, each with whether it is a warning: a line
    that is not a warning as the text says it, named by its label (and setting where there
    are several: ``settings``); the warnings of one wording (:func:`_wording`) as one line,
    at the place of the first: ``warning (4 runs 1, 2, 3; 16 runs 1, 2): other tasks … for
    0.24–0.77s (74–83% of its wall time) …``.  A figure the runs share is written once; one
    that differs, as its smallest and largest."""
    out: list[tuple[str, bool] | str] = []  # a group's place holds its wording
    groups: dict[str, _Group] = {}
    for n in lines:
        if n.head:
            continue
        who = n.label if n.label is None or not settings else f"{n.label} [{n.setting}]"
        found = _WARNING.fullmatch(n.text)
        if found is None:
            out.append((n.text if who is None else f"{who}: {n.text}", False))
            continue
        wording = _FIGURE.sub("\0", found["body"])
        if wording not in groups:
            groups[wording] = _Group()
            out.append(wording)
        group = groups[wording]
        key = "every run" if who is None else who
        runs = None if found["runs"] is None else [int(k) for k in found["runs"].split(",")]
        if key in group.who and (group.who[key] is None or runs is None):
            group.who[key] = None
        elif runs is not None:
            group.who[key] = [*(group.who.get(key) or []), *runs]
        else:
            group.who[key] = None
        group.figures.append(_FIGURE.findall(found["body"]))
    return [x if isinstance(x, tuple) else (_merged(x, groups[x]), True) for x in out]


def _merged(wording: str, group: _Group) -> str:
    """``warning (WHO; WHO): BODY`` with each figure once, or as its range."""
    pieces = wording.split("\0")
    body = [pieces[0]]
    for k, piece in enumerate(pieces[1:]):
        seen = [f[k] for f in group.figures]
        low, high = min(seen, key=float), max(seen, key=float)
        body += [low if low == high or float(low) == float(high) else f"{low}–{high}", piece]
    who = [
        w if runs is None else f"{w} run{'s' if len(runs) > 1 else ''} {', '.join(map(str, runs))}"
        for w, runs in group.who.items()
    ]
    return f"warning ({'; '.join(who)}): {''.join(body)}"
