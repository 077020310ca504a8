"""Which device a calibration and its runs are of: the catalog entries that name a
calibration file (a run as one of them is a run as that calibration's device), and what
``calibrate --device NAME`` notes of a name (runs made as another device, a name no catalog
holds).  Apart from :mod:`.devices`, the catalog's parser and the limits it gives."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path

from ..errors import ConfigError
from ..names import as_word
from .devices import DEVICES_ENV, catalog_paths, load_catalog
from .similar import either, similar_devices


def calibrated_devices(
    path: Path, names: Iterable[str], option: Path | None = None
) -> set[str]:
    """Of ``names``, the catalog devices whose entry's calibration is the file ``path``: a
    run as one of them is a run as that calibration's device, whatever name the file
    records (an entry ``my-pi`` whose ``rpi4.yml`` was fitted as ``rpi4-4gb``)."""
    try:
        catalog = load_catalog(catalog_paths(option))
    except ConfigError:
        return set()  # a catalog that cannot be read links nothing; the runs say why
    return {
        n
        for n in names
        if (d := catalog.get(n)) is not None
        and d.calibration is not None
        and _same_file(d.calibration, path)
    }


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return a.resolve() == b.resolve()


def close_devices(
    name: str, environ: Mapping[str, str] | None = None, catalog: Path | None = None
) -> list[str] | None:
    """The catalog names ``name`` begins, then the closest others (at most 3, best first:
    :func:`~edgeprof.analysis.similar.similar_devices`), ``catalog`` (a
    ``--devices`` file) merged in; ``None`` where it is one of them, or no catalog can be
    read."""
    try:
        names = list(load_catalog(catalog_paths(catalog, environ)))
    except ConfigError:
        return None
    if name in names:
        return None
    return similar_devices(name, names)


def calibration_device_notes(
    name: str,
    recorded: Iterable[str | None],
    environ: Mapping[str, str] | None = None,
    catalog: Path | None = None,
) -> list[str]:
    """What ``calibrate --device NAME`` says of the name: the runs were made as another
    device (``recorded``: each run's ``--device``), or no catalog has it (a typo, as
    ``rpi4-4g``, had been written to ``rpi4-4g.yml`` in silence).  Notes, not errors: a
    device of one's own is a name no catalog holds."""
    notes = []
    word = as_word(name)
    made = Counter(recorded)
    recorded_names = {d for d in made if d}
    others = sorted(recorded_names - {name})
    if len(recorded_names) > 1:
        # Runs of several devices: each model's profiler figure is their median, pooled (a
        # user's rpisweep and mbsweep had read "the runs were made as" the other device,
        # whichever was given, of runs half made as the device given).
        each = ", ".join(
            f"{n} as {'no --device' if d is None else f'--device {as_word(d)}'}"
            for d, n in sorted(made.items(), key=lambda kv: (kv[0] is None, kv[0] or ""))
        )
        notes.append(
            f"--device {word}: the runs were made as several devices ({each}): each model's "
            "profiler figure pools them; calibrate from one device's runs"
        )
    elif others:
        made_as = " and ".join(as_word(d) for d in others)
        notes.append(
            f"--device {word}: the runs were made as --device {made_as}; the calibration "
            f"will be for --device {word} (give --device {as_word(others[0])} if the CSV was "
            "measured on it)"
        )
    close = close_devices(name, environ, catalog)
    if close is not None and name in recorded_names:
        # The runs were made as this device: its catalog exists, only not given here (a
        # tester's pizero2w, run with --devices boards.yml, had been called unknown).
        notes.append(
            f"--device {word} is in no device catalog given here, but the runs were made as "
            f"--device {word}: give its catalog with --devices FILE (or set ${DEVICES_ENV} "
            "to it)"
        )
    elif close is not None:
        hint = f" (did you mean {either(close)}?)" if close else ""
        notes.append(
            f"--device {word} is in no device catalog{hint}: fine for a device of your own, "
            "but the calibration records this name, and a run as another device is warned "
            f"that its predictions are for --device {word}"
        )
    return notes
