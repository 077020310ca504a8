"""The command line: thin.  Each command declares its options and calls the library; the
exit codes, and the one-line ``edgeprof: error: …`` for edgeprof's errors, are
:mod:`edgeprof.cli.app`'s.

The command modules import only :mod:`~edgeprof.cli.app` and :mod:`~edgeprof.cli.options`;
this package registers their commands on the app, in the order ``--help`` lists them, and
each command loads the library it calls when it runs, so that ``import edgeprof.cli`` (every
invocation) stays cheap.
"""

from __future__ import annotations

from . import calibrate, fit, layers, results, run, tools
from .app import EXIT_BUDGET, EXIT_ERROR, EXIT_INTERRUPTED, app, exit_code, main

__all__ = ["EXIT_BUDGET", "EXIT_ERROR", "EXIT_INTERRUPTED", "app", "exit_code", "main"]

app.command(context_settings=run.CONTEXT_SETTINGS)(run.run)
app.command("fit", context_settings=fit.CONTEXT_SETTINGS)(fit.fit_cmd)
app.command()(results.compare)
app.command()(results.report)
app.command("calibrate")(calibrate.calibrate_cmd)
app.command()(tools.gc)
app.command()(tools.doctor)
app.command()(tools.bench)
app.command()(tools.devices)
app.add_typer(layers.layers_app, name="layers")
