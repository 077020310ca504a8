"""Held-out accuracy in the user's terms, and the choice of form it drives.

The question a calibration has to answer is "if I trust a prediction for a model I have not
measured on the device, how many percent off will I be?".  In-sample R² does not answer it:
over times spanning a factor of 50 the large models fix the line and R² stays near 1 while
the small ones are predicted tens of percent off.  So each form (:mod:`.forms`) predicts each
point from a fit made without it, and the figures are relative: the mean and median
absolute percentage error, and the share of points predicted within ±10 % (the figure
nn-Meter, MobiSys 2021, reports for latency predictors).

The choice: among the forms that could be fitted, the best held-out *mean* absolute error
wins (the mean, not the median: a form that is 30 % off on the smallest model and right on
the rest has a fine median, and the smallest models are exactly where a line through times
spanning decades fails), but a simpler form (:data:`.forms.FORMS` order) is kept unless it
is *clearly* worse: more than :data:`CLEAR_MARGIN` of the best error above it, and at least
:data:`CLEAR_MIN_PP` percentage points.  A held-out mean over 4 to 10 points moves by a
point or more when one measurement changes by a few percent (the repeat-to-repeat spread of
a device tool), so smaller differences are not evidence; the margins keep the simpler form
unless the data speak clearly.  With fewer than :data:`MIN_HELDOUT` points nothing is held
out and the plain line is kept: a choice needs evidence.

A form whose slope is not positive (:func:`rising`) is never chosen: a device is not faster
on a workload the host runs slower.  A tester's runtime line ``device = -2.297 × profiler +
39.35 s`` had the lowest held-out error (4.3 %: five runs of near-equal length, 5.2-6.5 s,
under a contended host) and then predicted 30.79 s for a run faster than every calibrated
model, above every device value measured (24.1-27.9 s).  Such a fit keeps its figures in
the tables; the reason says why it was passed over, and where no form rises nothing is
predicted from the fit (:attr:`Choice.rising`).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from .forms import FORM_NAMES, FORMS, FormFit, fit_form

MIN_HELDOUT = 4
"""Held-out figures need this many points: with 3, each held-out fit is a line through 2."""
WITHIN_PCT = 10.0
CLEAR_MARGIN = 0.25
CLEAR_MIN_PP = 1.0
MIN_SHARE = 0.5
"""Below this share within ±10 %, a fit is said to predict poorly, whatever its R²."""


def rising(f: FormFit) -> bool:
    """The form's device value grows with the profiler's: its slope at the margin is above 0
    (a power law's sign is its exponent's)."""
    return f.margin()[0] > 0


def _slope_text(f: FormFit) -> str:
    what = "exponent" if f.form == "power" else "slope"
    return f"the {FORM_NAMES[f.form]} ({what} {f.a:.4g} ≤ 0)"


@dataclass(frozen=True)
class HeldOut:
    """Every point predicted by the form fitted without it, and the relative errors."""

    labels: tuple[str, ...]
    measured: tuple[float, ...]
    predicted: tuple[float | None, ...]

    @cached_property
    def errors_pct(self) -> tuple[float | None, ...]:
        """(held-out − measured) / measured, in percent; ``None`` where there is no held-out
        prediction or the measured value is not positive (no relative error)."""
        return tuple(
            None if p is None or m <= 0 else (p - m) / m * 100
            for m, p in zip(self.measured, self.predicted, strict=True)
        )

    @property
    def counted(self) -> int:
        return sum(e is not None for e in self.errors_pct)

    @property
    def median_abs_pct(self) -> float | None:
        known = [abs(e) for e in self.errors_pct if e is not None]
        return statistics.median(known) if known else None

    @property
    def mean_abs_pct(self) -> float | None:
        known = [abs(e) for e in self.errors_pct if e is not None]
        return statistics.fmean(known) if known else None

    @property
    def within(self) -> int:
        """Points whose held-out prediction is within ±:data:`WITHIN_PCT` %."""
        return sum(e is not None and abs(e) <= WITHIN_PCT for e in self.errors_pct)

    @property
    def within_share(self) -> float | None:
        return self.within / self.counted if self.counted else None

    @property
    def worst(self) -> tuple[str, float] | None:
        """The point predicted worst held-out, and its signed error in percent."""
        known = [(abs(e), i) for i, e in enumerate(self.errors_pct) if e is not None]
        if not known:
            return None
        i = max(known)[1]
        err = self.errors_pct[i]
        assert err is not None
        return self.labels[i], err

    def to_dict(self) -> dict[str, object]:
        worst = self.worst
        return {
            "heldout_median_abs_pct_error": self.median_abs_pct,
            "heldout_mean_abs_pct_error": self.mean_abs_pct,
            "heldout_within_10pct": self.within_share,
            "heldout_points": self.counted,
            "heldout_worst": None if worst is None else {"model": worst[0], "pct_error": worst[1]},
        }


@dataclass(frozen=True)
class Candidate:
    form: str
    fit: FormFit | None
    why_not: str = ""
    """Why the form could not be fitted (``fit`` is ``None``)."""
    heldout: HeldOut | None = None
    """``None``: fewer than :data:`MIN_HELDOUT` points."""


@dataclass(frozen=True)
class Choice:
    """The forms tried, the one kept, and why, in one sentence."""

    candidates: tuple[Candidate, ...]
    form: str
    reason: str

    @property
    def chosen(self) -> Candidate:
        return next(c for c in self.candidates if c.form == self.form)

    @property
    def fit(self) -> FormFit:
        f = self.chosen.fit
        assert f is not None  # only a fitted form is chosen
        return f

    @property
    def heldout(self) -> HeldOut | None:
        return self.chosen.heldout

    @property
    def rising(self) -> bool:
        """The chosen form's slope is above 0; ``False`` only where no form's is (all
        device values 0 or below): no prediction is made from such a fit."""
        return rising(self.fit)

    @property
    def errors_pct(self) -> tuple[float | None, ...]:
        """The chosen form's held-out error of each point (all ``None``: none held out)."""
        ho = self.heldout
        return (None,) * self.fit.n if ho is None else ho.errors_pct


def choose(
    x: Sequence[float], y: Sequence[float], labels: Sequence[str], form: str | None = None
) -> Choice:
    """Fit every form, hold each point out, and keep one (module docstring); ``form`` forces
    one (a :class:`~edgeprof.errors.ConfigError` from :func:`.forms.fit_form` when it cannot
    be fitted is the caller's)."""
    cands = []
    for name in FORMS:
        f = fit_form(name, x, y, labels)
        if isinstance(f, str):
            cands.append(Candidate(name, None, f))
            continue
        ho = HeldOut(tuple(labels), tuple(y), f.heldout) if len(x) >= MIN_HELDOUT else None
        cands.append(Candidate(name, f, "", ho))
    falling = [c for c in cands if c.fit is not None and not rising(c.fit)]
    passed = (
        ""
        if not falling
        else "; not "
        + " or ".join(_slope_text(c.fit) for c in falling if c.fit is not None)
        + ": a device is not faster on a workload the host runs slower"
    )
    usable = [c for c in cands if c.fit is not None and rising(c.fit)]
    if not usable:
        why = "no form has a slope above 0: nothing is predicted from this fit"
        return Choice(tuple(cands), "line", why + passed)
    choice = _choose(cands, usable, form)
    return Choice(choice.candidates, choice.form, choice.reason + passed)


def _choose(cands: list[Candidate], usable: list[Candidate], form: str | None) -> Choice:
    """:func:`choose` among the ``usable`` candidates (fitted, rising)."""
    fallback = next((c for c in usable if c.form == "line"), usable[0])
    if form is not None:
        picked = next(c for c in cands if c.form == form)
        if picked.fit is None:
            why = f"{FORM_NAMES[form]} asked for, but {picked.why_not}"
            why += f": the {FORM_NAMES[fallback.form]} is used"
            return Choice(tuple(cands), fallback.form, why)
        if not rising(picked.fit):  # the reason's tail says why
            why = f"{FORM_NAMES[form]} asked for, but the {FORM_NAMES[fallback.form]} is used"
            return Choice(tuple(cands), fallback.form, why)
        return Choice(tuple(cands), form, f"{FORM_NAMES[form]} asked for")
    scored = [
        (c, m)
        for c in usable
        if c.heldout is not None and (m := c.heldout.mean_abs_pct) is not None
    ]
    if not scored:
        return Choice(
            tuple(cands),
            fallback.form,
            f"the {FORM_NAMES[fallback.form]}: held-out errors need {MIN_HELDOUT} points or more",
        )
    best_c, best = min(scored, key=lambda cm: cm[1])
    bound = best + max(CLEAR_MARGIN * best, CLEAR_MIN_PP)
    kept_c, kept = next((c, m) for c, m in scored if m <= bound)  # FORMS order: simplest first
    simpler = [(c, m) for c, m in scored if FORMS.index(c.form) < FORMS.index(kept_c.form)]
    if kept_c is best_c and simpler:
        worse = ", ".join(f"{FORM_NAMES[c.form]} {m:.1f} %" for c, m in simpler)
        are = "forms are" if len(simpler) > 1 else "form is"
        reason = (
            f"{FORM_NAMES[kept_c.form]}: held-out mean error {kept:.1f} %; "
            f"the simpler {are} clearly worse ({worse} > {bound:.1f} %)"
        )
    elif len(scored) == 1:
        # The others ruled out (said after it): "the best held-out (184.5 %)" had been said of
        # the one form left, beside a line that held out at 16.1 % (a user's).
        reason = f"{FORM_NAMES[kept_c.form]}: the only form left (held-out mean error {kept:.1f} %)"
    elif kept_c is best_c:
        reason = f"{FORM_NAMES[kept_c.form]}: the best held-out ({kept:.1f} %) and the simplest"
    else:
        reason = (
            f"{FORM_NAMES[kept_c.form]}: held-out mean error {kept:.1f} %, not clearly worse "
            f"than the {FORM_NAMES[best_c.form]}'s {best:.1f} % (within {bound:.1f} %), and simpler"
        )
    return Choice(tuple(cands), kept_c.form, reason)


def predicts_poorly(ho: HeldOut | None) -> bool:
    """Fewer than :data:`MIN_SHARE` of the held-out predictions are within ±10 %."""
    share = None if ho is None else ho.within_share
    return share is not None and share < MIN_SHARE


def heldout_warning(choice: Choice, r2: float | None, min_r2: float) -> str | None:
    """Said when fewer than :data:`MIN_SHARE` of the held-out predictions are within ±10 %,
    and set against the R² when the R² looks good: the contradiction a user must see."""
    ho = choice.heldout
    if ho is None or not predicts_poorly(ho):
        return None
    med, worst = ho.median_abs_pct, ho.worst
    assert med is not None and worst is not None  # some point was counted
    head = f"R² = {r2:.3f}, but only" if r2 is not None and r2 >= min_r2 else "only"
    return (
        f"{head} {ho.within} of {ho.counted} held-out predictions of the "
        f"{FORM_NAMES[choice.form]} within ±{WITHIN_PCT:g} % (median error {med:.1f} %, "
        f"worst {worst[0]} {worst[1]:+.1f} %): a model not measured on the device may be "
        "predicted this far off"
    )
