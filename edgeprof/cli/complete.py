"""The values a shell completes for the options that take one of a known set: ``--device``
(the catalog's names), ``--backend``, ``--cores-busy``, ``--report-to``, ``--gpus``'
words, ``calibrate --form``, ``layers profile --dtype`` and ``--granularity``.

Before, ``edgeprof run --device <TAB>`` offered nothing (a CLI tester's): typer completes the
options' names only, unless an option names a completer (``autocompletion=``).  Each
completer reads the set from where the library keeps it, imported only when the shell asks
(``_EDGEPROF_COMPLETE``: :data:`edgeprof.cli.app.COMPLETE_VAR`), so a command's start-up pays
nothing for it.  typer keeps the words that start with what was typed.
"""

from __future__ import annotations

from pathlib import Path

import typer

__all__ = [
    "backends",
    "cores_busy",
    "devices",
    "dtypes",
    "forms",
    "gpus",
    "granularities",
    "local_backends",
    "report_to",
]


def backends() -> list[str]:
    """``run --backend``, ``fit --backend``: every name ``get_backend`` takes."""
    from ..backends import backend_names

    return list(backend_names())


def local_backends() -> list[str]:
    """``bench`` and ``layers profile``, which run on this host: no ``docker``."""
    return [b for b in backends() if b != "docker"]


def devices(ctx: typer.Context) -> list[str]:
    """The catalog's device names: shipped, ``$EDGEPROF_DEVICES`` and a ``--devices`` given
    before on the line; none where a catalog cannot be read (the shell gets no traceback:
    the command itself says why when it runs)."""
    from ..analysis.devices import catalog_paths, load_catalog
    from ..errors import EdgeprofError

    given = ctx.params.get("devices")
    try:
        return sorted(load_catalog(catalog_paths(Path(given) if given else None)))
    except EdgeprofError:
        return []


def cores_busy() -> list[str]:
    from ..measure.leases import CORES_BUSY

    return list(CORES_BUSY)


def report_to() -> list[str]:
    from ..report.run import REPORT_TO

    return list(REPORT_TO)


def gpus() -> list[str]:
    """The words ``--gpus`` takes besides a count and indices."""
    return ["all", "none"]


def forms() -> list[str]:
    from ..analysis.calibration.forms import FORMS

    return ["auto", *FORMS]


def dtypes() -> list[str]:
    from ..layers.results import DTYPES

    return list(DTYPES)


def granularities() -> list[str]:
    from ..layers.results import GRANULARITIES

    return list(GRANULARITIES)
