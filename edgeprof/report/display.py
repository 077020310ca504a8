"""A run's result shown as the reports show it: ``print(r)`` the text report of the run
(:func:`~.results.render_plain`), a notebook's cell the HTML report's tables
(:func:`~.html.results_tables`).  Imported, it hands them to :class:`~edgeprof.model.RunResult`
(:func:`~edgeprof.model.results.install_display`): the model may not import the report.
``edgeprof``'s public names import it; the renderers load on first display, so that costs
them nothing."""

from __future__ import annotations

from ..model import RunResult
from ..model.results import Display, install_display


def text(r: RunResult) -> str:
    from .results import render_plain

    return render_plain([r])


def html(r: RunResult) -> str:
    from .html import results_tables

    return "".join(results_tables([r]))


install_display(Display(text, html))
