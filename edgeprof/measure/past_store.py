"""The bookkeeping of a run's phase occurrences past the stored ones
(:data:`~edgeprof.measure.event_lines.MAX_OCCURRENCES`): :class:`PastStore`, which the
:class:`~edgeprof.measure.event_store.EventStore` feeds their ``begin`` and ``end`` lines as
they arrive, and which aggregates them per name (:class:`~edgeprof.measure.phase_tail.PhaseTail`)
in O(1) a line, with no record, counter read or kernel window.
"""

from __future__ import annotations

import collections
import math

from .phase_tail import PhaseTail
from .phases import Occurrence


class PastStore:
    """The occurrences past the store: by name, their :class:`PhaseTail` (:attr:`tails`),
    those open now (innermost last) and the ``recent`` last closed, for the iterations whose
    line comes after their phase's ``end`` line.  Not thread-safe: the caller locks."""

    def __init__(self, recent: int) -> None:
        self.tails: dict[str, PhaseTail] = {}
        self._open: dict[str, list[Occurrence]] = {}
        self._recent: collections.deque[Occurrence] = collections.deque(maxlen=recent)
        self._last_end = -math.inf  # the latest end in _recent

    def is_open(self, name: str) -> bool:
        """Whether an occurrence of ``name`` past the store is open (its ``end`` is ours)."""
        return bool(self._open.get(name))

    def begin(self, name: str, t: float, inside: bool) -> None:
        """A ``begin`` at ``t``; ``inside``: a stored occurrence of ``name`` is open."""
        occ = Occurrence(name, t)
        stack = self._open.setdefault(name, [])
        # Inside another of its name (stored or not): that one's time holds it.
        occ.nested = bool(stack) or inside
        stack.append(occ)
        rest = self.tails.get(name)
        if rest is None:
            rest = self.tails[name] = PhaseTail()
        rest.begin(t)

    def end(self, name: str, t: float) -> Occurrence | None:
        """The ``end`` of the innermost open occurrence ``name`` (begun after any stored one
        still open, so it is the innermost): the occurrence where it held time of its own,
        ``None`` where it was nested."""
        occ = self._open[name].pop()
        occ.end = max(t, occ.start)
        if occ.nested:
            return None
        self.tails[name].cover(occ.start, occ.end)
        self._recent.append(occ)
        self._last_end = max(self._last_end, occ.end)
        return occ

    def at(self, t1: float) -> set[str]:
        """The phases whose occurrences here hold an iteration ending at ``t1``: a stored
        iteration is attributed to stored occurrences by its time after the run, to these as
        its line comes.  O(1) unless one closed since."""
        if not self.tails:
            return set()
        names = {n for n, stack in self._open.items() if stack and not stack[0].nested}
        if t1 <= self._last_end:
            names.update(
                o.name for o in self._recent if o.end is not None and o.start <= t1 <= o.end
            )
        return names

    def close(self, run_end: float) -> None:
        """The occurrences still open at the run's end: held to it, and their phase cut short
        (once: the results may be asked again)."""
        for name, stack in self._open.items():
            if stack and not stack[0].nested:
                self.tails[name].cover(min(stack[0].start, run_end), run_end)
            if stack:
                self.tails[name].cut_short = True
            stack.clear()
