"""``edgeprof calibrate``: device measurements against the profiler's
(:mod:`edgeprof.analysis.calibration`)."""

import sys
from pathlib import Path
from typing import Annotated

import typer

from ..analysis.calibration import DEFAULT_MIN_R2
from . import complete
from .options import DevicesFile


def calibrate_cmd(
    results: Annotated[
        list[Path],
        typer.Argument(help="Profiler results: result.json, sweep.json, lists, directories."),
    ],
    device: Annotated[str, typer.Option(help="Name of the device the CSV was measured on.")],
    measurements: Annotated[
        Path, typer.Option(help="Device CSV: model[,cpus][,memory],METRIC_UNIT… columns.")
    ],
    out: Annotated[
        Path | None, typer.Option(help="Calibration file to write (default DEVICE.yml).")
    ] = None,
    min_r2: Annotated[float, typer.Option(help="Warn when a fit's R² is below this.")] = (
        DEFAULT_MIN_R2
    ),
    plot: Annotated[
        Path | None, typer.Option(help="Also draw device vs profiler (needs matplotlib).")
    ] = None,
    family: Annotated[
        list[str] | None,
        typer.Option(
            help="PATTERN=FAMILY: models whose label matches the shell pattern form a family "
            "(repeatable; the CSV's family column wins). A family with 4 measured models is "
            "also fitted on its own."
        ),
    ] = None,
    form: Annotated[
        str,
        typer.Option(
            help="auto (the form that predicts held-out models best, the simplest unless "
            "clearly worse), or force one: line, origin, power.",
            autocompletion=complete.forms,
        ),
    ] = "auto",
    devices: DevicesFile = None,
) -> None:
    """Fit device = a·profiler + b per metric and setting from on-device measurements, and
    say how far off it predicts models it was not fitted on.

    Example: edgeprof calibrate --device pi4 --measurements pi4.csv results/
    """
    from ..analysis.calibration import FORMS, calibrate, parse_rule, read_measurements
    from ..analysis.device_names import calibration_device_notes
    from ..analysis.devices import catalog_paths, load_catalog
    from ..errors import ConfigError
    from ..report.calibration import plot_calibration, render_calibration
    from ..report.files import announce
    from ..resultfiles import load_runs
    from ..storage import check_writable

    if not 0 <= min_r2 <= 1:  # also NaN
        raise ConfigError(f"--min-r2 {min_r2:g}: expected an R² from 0 to 1")
    if form != "auto" and form not in FORMS:
        raise ConfigError(f"--form {form!r}: one of auto, {', '.join(FORMS)}")
    rules = [parse_rule(r) for r in family or ()]
    if devices is not None:  # read now: a bad catalog is the one line, before any work
        load_catalog(catalog_paths(devices))
    target = out if out is not None else Path(f"{_safe_name(device)}.yml")
    check_writable(target)
    if plot is not None:
        check_writable(plot)
    runs = load_runs(results)
    cal = calibrate(
        runs,
        read_measurements(measurements),
        device,
        min_r2=min_r2,
        family_rules=rules,
        form=None if form == "auto" else form,
    )
    if not cal.fits:
        raise ConfigError(f"{measurements}: {cal.why_no_fit()}")
    # Said once the inputs are known good (an error stays the one line): the runs were made
    # as another device, or the name is in no catalog (a typo had been written in silence).
    for note in calibration_device_notes(device, (r.device for r in runs), catalog=devices):
        print(f"edgeprof: note: {note}", file=sys.stderr)
    sys.stdout.write(render_calibration(cal))
    if plot is not None:
        plot_calibration(cal, plot)
        announce(plot, sys.stderr)
    cal.save(target)
    announce(target, sys.stderr)


def _safe_name(name: str) -> str:
    """A device name as a file name (the default DEVICE.yml): never a path, never hidden."""
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name).lstrip(".") or "device"
