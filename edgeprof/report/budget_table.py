"""A run's budget checks in Markdown: the verdict in words and the table, with why a check
was not measured.  The step summary (:mod:`.ci_summary`), the Markdown report
(:func:`~edgeprof.report.summary.markdown_summary`) and the page (:mod:`.html`) say them
alike."""

from __future__ import annotations

from collections.abc import Sequence

from ..analysis.budget_checks import BudgetCheck, Status
from .table import markdown_lines, markdown_text

_EMOJI = {Status.PASS: "✅"}
"""A check's emoji before its word (:attr:`Status.value`, the terminal's too); ❌ for every
other status."""
BUDGET_COLUMNS = ("Model", "Limits", "Metric", "Value", "Budget", "Result")


def budget_rows(checks: Sequence[BudgetCheck], emoji: bool = True) -> list[list[str]]:
    """A row per budget check (this summary's; the HTML report's without the emoji, which
    a browser without an emoji font draws as empty boxes)."""
    return [
        [c.label, c.setting, c.subject, c.value_text, c.budget_text,
         f"{_EMOJI.get(c.status, '❌')} {c.status.value}" if emoji else c.status.value]
        for c in checks
    ]  # fmt: skip


def budget_verdict(checks: Sequence[BudgetCheck]) -> str:
    """``2 of 8 budget checks failed``, ``All 8 budget checks passed``, ``The budget check
    passed`` (one check)."""
    failed = sum(not c.ok for c in checks)
    if failed:
        return f"{failed} of {len(checks)} budget check{'s' if len(checks) > 1 else ''} failed"
    return (
        "The budget check passed" if len(checks) == 1 else f"All {len(checks)} budget checks passed"
    )


def budget_lines(checks: Sequence[BudgetCheck]) -> list[str]:
    """The budget table, and under it why a check was not measured and what a figure's check
    must be read with (a p95 that measured the CPU quota's stalls: said in the text and
    JUnit, not here before): the step summary's and the Markdown report's."""
    lines = markdown_lines(BUDGET_COLUMNS, budget_rows(checks))
    reasons = [c for c in checks if c.value is None or c.caveat]
    if reasons:
        lines += [""] + [f"- {markdown_text(c.describe())}" for c in reasons]
    return lines


def budget_text(checks: Sequence[BudgetCheck], sources: str) -> list[str]:
    """The terminal's budget lines (``run``, ``report``; :func:`edgeprof.check_budgets`'s
    ``str()``): a head that counts the checks passed, then a line each, ``FAIL`` or ``ok``."""
    failed = sum(not c.ok for c in checks)
    lines = [f"Budgets ({sources}): {len(checks) - failed} of {len(checks)} checks passed"]
    return lines + [f"  {'ok  ' if c.ok else 'FAIL'}  {c.describe()}" for c in checks]
