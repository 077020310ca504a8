"""``edgeprof fit``'s outcome: each probe (a limit, its runs, their verdict) and the search's
answer, as :func:`edgeprof.sweeps.fit.fit` returns them and ``fit.json`` holds them."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..analysis.fit_bounds import Bounds
from ..analysis.fit_times import Timing, contended, median_time
from ..analysis.headroom import mapped_elsewhere, over_device, with_mapped
from ..analysis.need import OVERTURNED, RAISED, Verdict, max_probes, recommended, stall, with_margin
from ..analysis.stats import median
from ..model import MemoryGrowth, RunResult
from ..model.fitdoc import FIT_SCHEMA_VERSION, Fit, FitProbe
from ..units import format_binary
from .fit_reference import setting


@dataclass(frozen=True)
class Probe:
    limit: int
    runs: tuple[RunResult, ...]
    verdict: Verdict

    def to_dict(self) -> FitProbe:
        last = self.runs[-1]
        pressures = [r.memory.pressure for r in self.runs]
        return {
            "limit_bytes": self.limit,
            "ok": self.verdict.ok,
            "verdict": self.verdict.reason,
            "time_s": median_time(self.runs).seconds,
            "wall_s": [r.wall_s for r in self.runs],
            "termination": last.termination.value,
            "exit_code": last.exit_code,
            # The runs' medians, as the time and the verdict's stall are (the table's STALL
            # had been the last run's, 0.011 s, beside a median time whose first run
            # stalled 0.021 s).
            "stall_s": stall(self.runs),
            "refaults": _median(
                [None if p is None else _add(p.refaults_anon, p.refaults_file) for p in pressures]
            ),
            "major_faults": _median([None if p is None else p.major_faults for p in pressures]),
            "oom_kills": last.memory.oom_kills,
        }


def _add(a: int | None, b: int | None) -> int | None:
    return None if a is None and b is None else (a or 0) + (b or 0)


def _median(counts: list[int | None]) -> int | None:
    """The runs' median count (the lower middle of an even number: a count stays whole);
    ``None`` where any run lacks it."""
    m = median(counts, missing="none", low=True)
    return None if m is None else int(m)


@dataclass(frozen=True)
class FitOutcome:
    label: str
    reference: tuple[RunResult, ...]
    time: Timing
    """The reference runs' median time (wall, or latency p50)."""
    noise: float
    bounds: Bounds
    probes: tuple[Probe, ...]
    answer: int | None
    """The smallest limit that passed; ``None``: none did, up to the ceiling."""
    tolerance: float
    margin: float
    stopped: str | None = None
    """Why there was no search (the unlimited run did not complete)."""
    method: str = "bisection"
    """``bisection`` (limited runs) or ``one-run`` (the reference run was squeezed; its
    ``memory.squeeze.held_bytes`` is the answer)."""

    budget: int | None = None
    """``--max-memory-need`` in bytes (``None``: no budget)."""
    gpu_bytes: int | None = None
    """On a device whose CPU and GPU share one memory (``unified_memory``), the reference
    runs' GPU peak (median), which the device's memory holds beside the answer; ``None``
    elsewhere."""
    reference_cap: int | None = None
    """The reference runs' memory limit (:func:`reference_cap`); ``None``: none was set."""
    made: tuple[str, ...] = ()
    """Why each probe was made, as :attr:`~edgeprof.analysis.need.SearchResult.made`
    (empty: each by the bisection)."""

    @property
    def contention(self) -> str | None:
        """Other tasks held its runs off their CPUs
        (:func:`~edgeprof.analysis.fit_times.contended`): a plain ``run`` warns of it, and
        fit had said nothing where it had judged probes "+25 % slower" for it."""
        return contended([*self.reference, *(r for p in self.probes for r in p.runs)])

    @property
    def elsewhere(self) -> int | None:
        """The most files an unlimited run mapped that other groups had cached
        (:func:`~edgeprof.analysis.headroom.mapped_elsewhere`): in no limit here, its own
        memory on a device; ``None``: too little to say, or not measured."""
        found = [m for m in map(mapped_elsewhere, self.reference) if m is not None]
        return max(found, default=None)

    def _on_device(self, limit: int | None) -> int | None:
        """``limit`` (set here) as the device's memory must hold it: with the files mapped
        elsewhere (:func:`~edgeprof.analysis.headroom.with_mapped`, as ``run``'s verdict
        takes them) and the GPU's share of a unified memory."""
        if limit is None:
            return None
        return with_mapped(limit, self.elsewhere) + (self.gpu_bytes or 0)

    @property
    def device_need(self) -> int | None:
        """What the device's memory must hold: the answer, the files mapped elsewhere, and
        the GPU's share of a unified memory.  The verdict, its spare figure, ``fits`` and
        the exit code take this, as ``run`` does."""
        return self._on_device(self.answer)

    @property
    def device_recommended(self) -> int | None:
        """:attr:`recommended` as the device's memory must hold it (as :attr:`device_need`)."""
        return self._on_device(self.recommended)

    @property
    def fits_with_margin(self) -> bool | None:
        """Whether the answer fits the ceiling with its margin too (:attr:`device_recommended`);
        ``None`` where it does not fit without it, or there is no ceiling: ``fit`` had said
        "with a 20% margin: 543.6MiB" and "fits in 512.0MiB" with no word that the first is
        above the second."""
        ceiling, need = self.bounds.ceiling, self.device_recommended
        if ceiling is None or need is None or not self.fits:
            return None
        return need <= ceiling

    @property
    def failed_at_peak(self) -> Probe | None:
        """Without an answer and no ceiling below the peak, the probe at the unlimited peak,
        which failed: the search probes it only after a failure other than memory
        (:attr:`Verdict.memory`: an exit code, a signal, a timeout), and then the command
        fails under a limit even where the limit takes nothing from it.  (At a ceiling below
        the peak a failure is the ceiling's: it does not fit there.)"""
        b = self.bounds
        if self.answer is not None or self.stopped is not None or b.top < b.peak:
            return None
        # Above the peak (a floor and its room past it): a failure for memory there moved
        # the search higher (need.search), so only another's is the top's to say.
        return next(
            (p for p in self.probes if p.limit == b.top and not p.verdict.ok
             and (b.top == b.peak or not p.verdict.memory)),
            None,
        )

    @property
    def max_probes(self) -> int:
        """The search's bound, one more where a probe failed for a reason other than memory
        and there was no ceiling below the peak: the peak is then probed, not assumed."""
        b = self.bounds
        checked = b.top == b.peak and any(
            not p.verdict.ok and not p.verdict.memory for p in self.probes
        )
        return max_probes(b) + checked

    @property
    def beyond(self) -> dict[str, int]:
        """The probes made beyond the bisection, by why (:data:`~edgeprof.analysis.need.
        OVERTURNED`, :data:`~edgeprof.analysis.need.RAISED`), those there were."""
        counts = {why: self.made.count(why) for why in (OVERTURNED, RAISED)}
        return {why: n for why, n in counts.items() if n}

    @property
    def searched(self) -> tuple[int, int] | None:
        """The limits the search ran between: the floor and its room (or the top, where
        that is lower) to the top, or to the highest limit probed above a top that failed
        (``bracket_bytes`` stays the unlimited runs' floor and peak: fit.json had given
        that alone where the probes went 8 MiB above it).  ``None``: no probe was made."""
        if not self.probes:
            return None
        b = self.bounds
        return min(b.low, b.top), max(b.top, *(p.limit for p in self.probes))

    @property
    def within_budget(self) -> bool | None:
        """The device's need (:attr:`device_need`, as ``fits`` takes it) against the budget;
        ``None`` without a budget or a search (stopped).  No answer (nothing fits the
        ceiling) is over any budget.  The bare answer had been gated, and one fit.json could
        say ``within_budget`` of a ``device_need_bytes`` above the budget."""
        if self.budget is None or self.stopped is not None:
            return None
        need = self.device_need
        return need is not None and need <= self.budget

    @property
    def recommended(self) -> int | None:
        """The answer and its margin, no higher above the unlimited peak than
        :func:`~edgeprof.analysis.need.recommended` allows (a squeezed run's peak is not the
        unlimited one: its margin is the answer's)."""
        if self.answer is None:
            return None
        if self.method != "bisection":
            return with_margin(self.answer, self.margin)
        return recommended(self.answer, self.margin, self.bounds, self.own_memory)

    @property
    def own_memory(self) -> int:
        """The run's own memory, which no limit reclaims: the floor and its room, or the
        highest limit a probe's own memory met (an OOM kill, a run at the edge) where that
        is more, as where a spike fell between the unlimited runs' samples."""
        met = [p.limit for p in self.probes if not p.verdict.ok and p.verdict.own]
        return max([self.bounds.low, *met])

    @property
    def answer_in_doubt(self) -> str | None:
        """Why the answer may be the host's contention's rather than the limit's: probes that
        failed on their time alone (:attr:`~edgeprof.analysis.need.Verdict.unproven`) in a
        fit whose runs other tasks held off their CPUs.  The held time is taken off each run,
        but not what else a busy host costs (its disk, its caches): ``rh.py``'s probes had
        failed "+11 %" to "+28 % slower" with no refault, and that fit answered 177.8 MiB
        where a quieter one answered 59.5.  ``None``: no such probe, or no contention."""
        if self.answer is None or self.contention is None:
            return None
        blind = [p for p in self.probes if not p.verdict.ok and p.verdict.unproven]
        if not blind:
            return None
        were = "probe" if len(blind) == 1 else "probes"
        return (
            f"the answer may be the host's contention's: {len(blind)} {were} "
            f"({', '.join(format_binary(p.limit) for p in blind)}) failed on time alone, "
            "with no refault, major fault or memory stall; fit again when the host is quieter"
        )

    @property
    def fits(self) -> bool:
        """An answer that the device's memory holds (:attr:`device_need`) within the ceiling:
        a bisection's answer is within it, but not always with the files mapped elsewhere;
        a one-run estimate may exceed it."""
        ceiling = self.bounds.ceiling
        if self.answer is None:
            return False
        if ceiling is None:
            return True
        # run's rule (headroom.over_device), with the GPU's share of a unified memory.
        return over_device(self.answer + (self.gpu_bytes or 0), self.elsewhere, ceiling) is None

    @property
    def growth(self) -> MemoryGrowth | None:
        """The fastest growth of the unlimited runs' memory (``memory.growth``): the answer
        is this run length's, and a longer run needs more (a tester's ``leak.py
        --iterations 100``, 0.5 MiB a request, needed 39.3 MiB at 40 requests and 99.4 MiB
        at 160); ``None``: every one levelled off, or was too short to tell."""
        grown = [g for r in self.reference if (g := r.memory.growth) is not None]
        return max(grown, key=lambda g: g.per_s, default=None)

    @property
    def measured_peak(self) -> int | None:
        """The unlimited runs' peak as measured (the search's top is at least its smallest
        limit: "peak 6.0MiB = anon 0.0 + …" was ``true``'s 144 KiB)."""
        peaks = [r.memory.peak_bytes for r in self.reference if r.memory.peak_bytes is not None]
        return max(peaks) if peaks else None

    @property
    def measured_floor(self) -> int | None:
        """The unlimited runs' floor as measured (anon + shmem + kernel at its highest)."""
        floors = [r.memory.floor_bytes for r in self.reference if r.memory.floor_bytes is not None]
        return max(floors) if floors else None

    def to_dict(self) -> Fit:
        """``fit.json``'s shape (:mod:`edgeprof.model.fitdoc`, which makes its schema)."""
        b = self.bounds
        # No reference: interrupted before its first run ended, so nothing of a run to give.
        ref = self.reference[-1] if self.reference else None
        squeeze = None if ref is None else ref.memory.squeeze
        at_peak = None if ref is None else ref.memory.at_peak
        return {
            "schema_version": FIT_SCHEMA_VERSION,
            "name": self.label,
            "method": self.method,
            "command": None if ref is None else list(ref.command),
            "backend": None if ref is None else ref.backend,
            "mechanism": None if ref is None else ref.mechanism,
            "limits": None if ref is None else setting(ref),
            "device": None if ref is None else ref.device,
            "metric": self.time.metric,
            "tolerance": self.tolerance,
            "margin": self.margin,
            "reference": None
            if ref is None
            else {
                "time_s": self.time.seconds,
                "noise": self.noise,
                "wall_s": [r.wall_s for r in self.reference],
                "termination": ref.termination.value,
                "exit_code": ref.exit_code,
                # As measured: the search's bracket (below) is in pages, at least 6 MiB
                # (fit.json said `true`'s 282624-byte peak was 6291456 bytes).
                "peak_bytes": self.measured_peak,
                "floor_bytes": self.measured_floor,
                "memory_cap_bytes": self.reference_cap,
                "at_peak": None if at_peak is None else dataclasses.asdict(at_peak),
            },
            "bracket_bytes": [b.floor, b.peak],
            "searched_bytes": None if self.searched is None else list(self.searched),
            "ceiling_bytes": b.ceiling,
            "resolution_bytes": b.resolution,
            "room_bytes": b.allowance,
            "max_probes": self.max_probes,
            "probes": [p.to_dict() for p in self.probes],
            "min_memory_bytes": self.answer,
            "recommended_bytes": self.recommended,
            # No answer to judge where the search stopped (interrupted, or the unlimited run
            # failed): `false` had read as "does not fit" to a script reading it.
            "fits": None if self.stopped is not None else self.fits,
            "mapped_elsewhere_bytes": self.elsewhere,
            "device_need_bytes": self.device_need,
            "fits_with_margin": self.fits_with_margin,
            "squeeze": None if squeeze is None else dataclasses.asdict(squeeze),
            "max_memory_need_bytes": self.budget,
            "gpu_bytes": self.gpu_bytes,
            "within_budget": self.within_budget,
            "stopped": self.stopped,
            "contention": self.contention,
            "answer_in_doubt": self.answer_in_doubt,
            # A CI reading "fits" alone had passed a leak whose answer holds for this run's
            # length only (the terminal's warning was the one word of it).
            "memory_growth": None if self.growth is None else dataclasses.asdict(self.growth),
        }
