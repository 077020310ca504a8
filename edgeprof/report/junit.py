"""JUnit XML: one test case per budget check or per compared metric, so that any CI (GitHub,
GitLab, Jenkins) shows pass/fail per model without knowing edgeprof.

Deterministic: the same checks give the same bytes.  Its times, timestamp and host name
are the results' own (:class:`Timing`: each cell's runs' wall time, the first run's start,
the host that measured them), never the moment or the machine it was written on, so a
report of saved runs writes what the run wrote (an integrator's dashboard had no duration).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..analysis.budget_checks import BudgetCheck, Status
from ..analysis.cells import cell_name, cells, failed, stopped_count, successful
from ..analysis.metrics import FEW_NOTE
from ..analysis.regression import Change, Verdict
from ..model import RunResult

ONE_DOT_LEADER = "\u2024"
"""What a full stop of a case's class is written as (:func:`junit_classname`)."""


def junit_classname(cell: str) -> str:
    """A cell's name as a JUnit ``classname``: its full stops written as U+2024 ONE DOT
    LEADER, which looks the same.  Jenkins' JUnit plugin reads a classname as a Java
    ``package.Class``, split at its last full stop: ``mobilenet_v2.onnx (cpus=0.5,
    memory=96.0MiB)`` had been the package ``mobilenet_v2.onnx (cpus=0.5, memory=96`` and
    the class ``0MiB)``, each cell a fake package of one class; GitLab shows the classname
    whole (its Suite column), so a look-alike keeps both readable, every cell a class of
    Jenkins' ``(root)``.  The case's texts keep the names as typed."""
    return cell.replace(".", ONE_DOT_LEADER)


@dataclass(frozen=True)
class Case:
    classname: str
    """The cell: ``model (limits)``; CI pages group cases by it (written as
    :func:`junit_classname`)."""
    name: str
    failure: str | None = None
    """The failure message; ``None``: the case passed."""
    skipped: str | None = None
    output: str = ""


@dataclass(frozen=True)
class Timing:
    """What the results say of when and where they were measured, for JUnit's ``time``,
    ``timestamp`` and ``hostname``."""

    cell_s: Mapping[str, float]
    """Each cell's (:func:`cell_name`) runs' wall time, summed."""
    timestamp: str | None
    """The first run's start (ISO 8601, as ``started_at``)."""
    hostname: str | None
    """The host that measured every run; ``None``: several, or none known."""


def timing(results: Sequence[RunResult]) -> Timing:
    """:class:`Timing` of ``results``."""
    cell_s = {cell_name(k): sum(r.wall_s for r in runs) for k, runs in cells(results).items()}
    started = min((r.started_at for r in results), default=None)
    hosts = {r.host.hostname for r in results}
    return Timing(cell_s, started, hosts.pop() if len(hosts) == 1 else None)


def _seconds(v: float) -> str:
    return f"{v:.3f}"


def render_junit(
    suite: str, cases: Sequence[Case], notes: Sequence[str] = (), times: Timing | None = None
) -> str:
    """``notes``: the suite's own (a merge's hosts, why a sweep stopped), in its
    ``system-out``, which JUnit readers show beside the cases.  ``times``: each case's
    ``time`` (its cell's), the suite's (every cell's once), ``timestamp`` and ``hostname``."""
    cell_s = {} if times is None else times.cell_s
    total = {"time": _seconds(sum(cell_s.values()))} if cell_s else {}
    failures = str(sum(c.failure is not None for c in cases))
    root = ET.Element(
        "testsuites", {"name": "edgeprof", "tests": str(len(cases)), "failures": failures, **total}
    )
    where = {}
    if times is not None and times.timestamp is not None:
        # JUnit's timestamp is xs:dateTime without a zone: started_at is UTC.
        where["timestamp"] = times.timestamp.removesuffix("Z").split("+")[0]
    if times is not None and times.hostname:
        where["hostname"] = times.hostname
    skipped = sum(c.skipped is not None and c.failure is None for c in cases)
    suite_attrs = {"name": suite, "tests": str(len(cases)), "failures": failures, "errors": "0"}
    suite_attrs |= {"skipped": str(skipped), **total, **where}
    ts = ET.SubElement(root, "testsuite", suite_attrs)
    for c in cases:
        took = {"time": _seconds(cell_s[c.classname])} if c.classname in cell_s else {}
        case = {"classname": junit_classname(c.classname), "name": c.name, **took}
        tc = ET.SubElement(ts, "testcase", case)
        if c.failure is not None:
            ET.SubElement(tc, "failure", message=c.failure, type="edgeprof")
        elif c.skipped is not None:
            ET.SubElement(tc, "skipped", message=c.skipped)
        if c.output:
            ET.SubElement(tc, "system-out").text = c.output
    if notes:
        ET.SubElement(ts, "system-out").text = "".join(f"note: {n}\n" for n in notes)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, "unicode") + "\n"


Warnings = Mapping[tuple[str, str], Sequence[str]]
"""Each cell's run warnings, keyed (label, setting): :func:`edgeprof.report.results.
run_warnings`."""


def _warned(text: str, warnings: Sequence[str], sep: str) -> str:
    """A case's text with its cell's run warnings after it: in the failure's message (one
    line, ``sep`` ``"; "``) and the system-out (one a line) a CI page shows; a contended
    host's breach had read as the code's."""
    return sep.join([text, *warnings])


def budget_cases(checks: Sequence[BudgetCheck], warnings: Warnings | None = None) -> list[Case]:
    """One case per budget check: ``wall time <= 10.00s``, failing on a breach or a value
    that was not measured; with its cell's run ``warnings``."""
    out = []
    for c in checks:
        said = (warnings or {}).get((c.label, c.setting), ())
        out.append(
            Case(
                classname=cell_name((c.label, c.setting)),
                name=f"{c.subject} {'>=' if c.metric.larger_is_better else '<='} "
                f"{c.metric.format(c.budget)}",
                failure=None if c.status is Status.PASS else _warned(c.describe(), said, "; "),
                output=_warned(c.describe(), said, "\n"),
            )
        )
    return out


_UNTESTED = (Verdict.FEW_REPEATS, Verdict.NOT_JUDGED)
"""The verdicts no test was possible for: a case skipped, not passed."""


def compare_cases(changes: Sequence[Change], threshold: float) -> list[Case]:
    """One case per compared cell, ``current runs succeed`` (failed current runs fail the
    gate: :mod:`edgeprof.analysis.regression`), then one per compared metric of a cell: fails
    on a regression or a lost measurement; ``not enough repeats`` and ``not judged`` are
    reported as skipped (no test was possible)."""
    out = []
    for ch, measured in _compared_cells(changes):
        failed = ch.current_failed
        if failed is None and not measured:
            continue  # a cell missing from the current results: its metrics' cases fail
        text = "every current run succeeded" if failed is None else f"current: {failed.text()}"
        failure = None if failed is None else text
        out.append(Case(_cell(ch), "current runs succeed", failure, output=text))
    for ch in changes:
        text = (
            f"{ch.subject}: {ch.verdict.value}, change {ch.change_text()} "
            f"(baseline {ch.base_text}, current {ch.current_text}, "
            f"threshold {threshold * 100:g}%)"
        )
        for said in (ch.why, ch.caveat):  # why no test was made; what a verdict is read with
            if said is not None:
                text += f"; {said}"
        if ch.few:  # a case has no notes under it: its ^ is said in it
            text += f"; {FEW_NOTE}"
        out.append(
            Case(
                classname=_cell(ch),
                name=f"{ch.subject} no regression",
                failure=text if ch.verdict.fails else None,
                skipped=text if ch.verdict in _UNTESTED else None,
                output=text,
            )
        )
    return out


def _compared_cells(changes: Sequence[Change]) -> list[tuple[Change, bool]]:
    """Each cell's first change, and whether any of its metrics has a current value."""
    cells: dict[tuple[str, str], tuple[Change, bool]] = {}
    for ch in changes:
        first, measured = cells.get((ch.label, ch.setting), (ch, False))
        cells[ch.label, ch.setting] = first, measured or bool(ch.current)
    return list(cells.values())


def _cell(ch: Change) -> str:
    """A compared cell's case class: ``model (limits)``, or the model under --ignore-limits."""
    return cell_name((ch.label, ch.setting))


def run_cases(results: Sequence[RunResult], warnings: Warnings | None = None) -> list[Case]:
    """Without budgets: one case per cell, failing when one of its runs failed (not one
    ``--timeout`` stopped: :func:`~edgeprof.analysis.cells.failed`); with its cell's run
    ``warnings``."""
    out = []
    for (label, setting), runs in cells(results).items():
        bad = failed(runs)  # a run --timeout stopped is none: its iterations' figures count
        text = f"{len(successful(runs))} of {len(runs)} runs succeeded"
        if bad:
            endings = ", ".join(
                f"exit {r.exit_code}" if r.termination.value == "exited" else r.termination.value
                for r in bad
            )
            text += f" (failed: {endings})"
        if cut := stopped_count(runs):
            text += f"; {cut}"
        said = (warnings or {}).get((label, setting), ())
        out.append(
            Case(
                cell_name((label, setting)),
                "runs succeed",
                _warned(text, said, "; ") if bad else None,
                output=_warned(text, said, "\n"),
            )
        )
    return out
