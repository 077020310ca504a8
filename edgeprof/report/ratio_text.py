"""A ratio and its interval as the rankings and compare say them: the factor beside its
bracket, each to the digits that keep it inside, and a bound that says nothing said in
words (:func:`interval_bounds`, :func:`factor_text`)."""

from __future__ import annotations

import math

from ..units import format_factor

UNBOUNDED_BELOW = "≤0"
"""A ratio interval's lower bound where the difference's interval, on the values (a side has
a figure of 0: no logarithm), reaches ``−mean``: the runs set no lower bound (``report`` of
two models, 2 runs each, had printed ``1.13× [0.00, 2.33]`` where Welch's t at 1.24 degrees
of freedom gives −0.07).  On the logarithms an interval is never so: ``exp`` of its bounds."""

NO_LOWER_BOUND = f"{UNBOUNDED_BELOW}: the interval reaches below 0, no lower bound at this n"


FAR = 1000.0
"""How far from 1 a ratio interval's bound is said as a number: past it, ``>1000`` and
``<0.001``.  Two runs of a model that took 0.05 s and then 1.5 s had bracketed its factor
with ``[0.0000000012, 801751306.5731809139]``, each bound printed to the other's decimals:
such an interval says only that the runs do not tell the models apart."""


def interval_bounds(interval: tuple[float, float]) -> tuple[str, str]:
    """An interval's bounds to 2 decimals, or more where 2 would round a bound that excludes
    1 to "1.00" (the interval would seem to cover 1 while the test separated them); under
    0.1, two significant digits, as :func:`format_factor` (its decimals:
    :func:`_interval_digits`); past :data:`FAR`, ``>1000`` or ``<0.001``; a lower bound at 0
    (:meth:`~edgeprof.analysis.difference.Difference.relative_interval` clamps there on the
    values) as :data:`UNBOUNDED_BELOW`."""
    lo, hi = interval
    digits = _interval_digits(interval)
    return (UNBOUNDED_BELOW if lo <= 0 else _bound(lo, digits)), _bound(hi, digits)


def _bound(x: float, digits: int) -> str:
    if x > FAR:
        return f">{FAR:g}"
    if x < 1 / FAR:
        return f"<{1 / FAR:g}"
    return f"{x:.{digits}f}"


def _interval_digits(interval: tuple[float, float]) -> int:
    """The decimals an interval's bounds are said to (:func:`interval_bounds`)."""
    lo, hi = interval
    # Under 0.1, as many as the factor beside them has (format_factor: two significant
    # digits): "0.028× [0.03, 0.03]" had put the factor outside its own interval.
    least = min((x for x in (lo, hi) if 1 / FAR <= x < 0.1), default=None)
    first = 2 if least is None else max(2, 1 - math.floor(math.log10(least)))
    for digits in range(first, first + 5):
        a, b = f"{lo:.{digits}f}", f"{hi:.{digits}f}"
        if (lo <= 1 <= hi) or (float(a) != 1 and float(b) != 1):
            return digits
    return first + 4


def factor_text(f: float, interval: tuple[float, float] | None) -> str:
    """``f`` as :func:`format_factor` says it, or to its interval's decimals where so said
    it would lie outside the bracket as printed: ``1.01× [1.001, 1.008]`` had put a factor
    of 1.005 outside its own bracket, beside a sentence of "0.5% less"."""
    text = format_factor(f)
    if interval is None or not math.isfinite(f) or interval[0] <= 0:
        return text
    digits = _interval_digits(interval)
    lo, hi = (float(f"{x:.{digits}f}") for x in interval)
    return text if lo <= float(text[:-1]) <= hi else f"{f:.{digits}f}×"
