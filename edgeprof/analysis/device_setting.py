"""A device's limits on this host (:func:`device_setting`, :func:`resolve_device`: ``--device
NAME`` as ``--cpus``, ``--memory``, ``--cpu-period`` and the thread-pool variables), and what a
user's entry replaces (:func:`replaced_note`).  The catalog it reads, and the rules of a share,
are :mod:`edgeprof.analysis.devices`' (split from it at 577 lines)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from ..errors import ConfigError
from ..model import HostInfo, Limits
from ..units import counted, format_binary
from .device_share import LEAST_CPUS, below_least, share_of
from .devices import (
    CALIBRATED,
    Device,
    catalog_paths,
    find_device,
    load_catalog,
    origin,
    whose,
)


@dataclass(frozen=True)
class DeviceSetting:
    """The limits a device gives, before the user's explicit options override them."""

    device: Device
    cpus: float
    memory: int
    cpu_period_us: int | None
    pinned: bool
    """``cpus`` is the device's whole cores at this host's speed (no speed known)."""
    speed_from: str
    """How the CPU share was found: ``share``, ``speed``, a calibration file, or ``none``."""
    warnings: tuple[str, ...] = ()
    calibration_note: str | None = None
    """The one of ``warnings`` that is about the device's calibration, not its share: learned
    on another CPU model than this host's."""
    doubts: tuple[str, ...] = ()
    """Why a share from a calibration may be far from the device's
    (:meth:`~.calibration.Calibration.speed_doubts`); one of ``warnings`` says them."""
    replaced: str | None = None
    """Where a user's catalog replaces an earlier entry of this name (the shipped one, or
    ``$EDGEPROF_DEVICES``'s): which, with both entries' cores and memory
    (:func:`replaced_note`)."""

    def said_with(self, cpus_given: bool) -> tuple[str, ...]:
        """The warnings for a run that gives its own ``--cpus`` or not: with it, the notes on
        the device's share describe another run and go; a calibration learned on another
        CPU model still matters where that calibration makes the predictions, and a
        replaced entry wherever its values are used."""
        first = (*(() if self.replaced is None else (self.replaced,)), *self.device.notes)
        if not cpus_given:
            return (*first, *self.warnings)
        # No speed known: the given --cpus run at this host's speed too, and the run is
        # labelled with the device ("device rpi4-1gb" beside times that are this host's had
        # read as a Pi's, a training user's).
        hosts = (
            (f"{self.device.name}: no speed known: --cpus runs at this host's speed, so the "
             "times are this host's, not the device's (edgeprof calibrate gives its speed)",)
            if self.speed_from == "none" and self.device.calibration is None
            else ()
        )  # fmt: skip
        note = () if self.calibration_note is None else (self.calibration_note,)
        return (*first, *hosts, *note)

    @property
    def thread_env(self) -> dict[str, str]:
        """Thread pools sized to the device's cores where the share is under them (see the
        module docstring), with :data:`~edgeprof.measure.limits.MKL_EXACT` so that MKL, and
        PyTorch's pool that follows it, take that size on a host of fewer cores; a run on
        the device's whole cores gets them from the runner."""
        if self.pinned or self.cpus >= self.device.cores:
            return {}
        from ..measure.limits import MKL_EXACT, THREAD_VARS

        return {**dict.fromkeys(THREAD_VARS, str(self.device.cores)), **MKL_EXACT}


def _its_cores_run(cores: int) -> str:
    """``its core runs``, ``its 4 cores run`` (one core had read "its 1 core run")."""
    return "its core runs" if cores == 1 else f"its {cores} cores run"


def device_setting(device: Device, host: HostInfo | None = None) -> DeviceSetting:
    """The device's limits on this host (``host``: this host, for the calibration check)."""
    name, cores = device.name, device.cores
    warnings: list[str] = []
    note: str | None = None  # a calibration learned on another CPU model
    doubts: tuple[str, ...] = ()
    faster = (
        f"{name}: its cores are faster than this host's, which cannot be emulated (a quota "
        f"only takes time away): running them at this host's speed, an upper bound on the "
        f"device's time"
    )
    if device.share is not None:
        cpus, capped = (float(cores), True) if device.share > cores else (device.share, False)
        how = "share"
    elif isinstance(device.speed, float):
        cpus, capped = share_of(cores, device.speed)
        how = "speed"
        warnings += below_least(
            f"{name}: {counted(cores, 'core')} at speed {device.speed:g} "
            f"{'is' if cores == 1 else 'are'}",
            cores * device.speed,
        )
    elif device.speed == CALIBRATED:
        path = calibration_file(device)
        assert path is not None  # the parser requires it
        cpus, capped, warn, note, doubts = _calibrated_share(device, path, host)
        warnings += [*([] if note is None else [note]), *warn]
        how = str(device.calibration)
    else:
        if device.calibration is None:
            warnings.append(
                f"{name}: no speed known (a spec sheet gives none): {_its_cores_run(cores)} "
                "at this host's speed; measure it and run edgeprof calibrate for its speed"
            )
        elif (elsewhere := calibrated_elsewhere(device)) is not None:
            warnings.append(
                f"{name}: {_its_cores_run(cores)} at this host's speed, and its "
                f"calibration {device.calibration} predicts nothing at its own setting "
                f"({own_setting(device)}): it was calibrated at {elsewhere} (give the "
                "options of one of those for its predictions)"
            )
        else:
            warnings.append(
                f"{name}: {_its_cores_run(cores)} at this host's speed; its calibration "
                "predicts "
                "the device's values ('speed: calibration' in the entry emulates its speed)"
            )
        return DeviceSetting(device, float(cores), device.memory, device.cpu_period_us, True,
                             "none", tuple(warnings))  # fmt: skip
    if capped:
        warnings.append(faster)
    if how in ("share", "speed"):
        warnings += _elsewhere_warning(device, cpus)
    return DeviceSetting(device, cpus, device.memory, device.cpu_period_us,
                         False, how, tuple(warnings), note, doubts)  # fmt: skip


def _calibrated_share(
    device: Device, path: Path, host: HostInfo | None
) -> tuple[float, bool, list[str], str | None, tuple[str, ...]]:
    """The share a calibration implies, whether it was capped, notes on it, the note of a
    calibration learned on another CPU model, and why its fit may be far off."""
    from .calibration import load_calibration

    cal = load_calibration(path)
    if cal.speed is None:
        raise ConfigError(
            f"device catalog {device.catalog}: device {device.name!r}: key 'speed': "
            f"calibration {path} implies no speed ({cal.why_no_speed()}), or give the entry "
            "'speed: S' or 'share: C'"
        )
    slip = cal.speed_warning()  # its column named as calibrate named it ('latency_ms')
    if slip is not None:
        # As a speed that falls: no device's, refused (it had run at the host's full cores,
        # told only that its profiled runs were held off, a user's 401× faster "board").
        raise ConfigError(
            f"device catalog {device.catalog}: device {device.name!r}: key 'speed': "
            f"calibration {path}: {slip}; calibrate again, or give the entry 'speed: S' or "
            "'share: C'"
        )
    note = None
    learned = cal.speed.host_model
    if host is not None and learned is not None and host.cpu_model != learned:
        note = (
            f"{device.name}: calibration {path} was learned on a {learned}, this host is a "
            f"{host.cpu_model or 'CPU of unknown model'}: its speed does not transfer"
        )
    share = cal.speed.host_cpus
    capped = share > device.cores
    warnings = below_least(f"{device.name}: calibration {path} implies", share)
    if cal.speed.used_cpus is None and cal.speed.setting_cpus > 1:
        # A file from before the CPUs the runs used were recorded: its speed takes them
        # to have used every CPU of the setting, twice the truth for one thread of two.
        warnings.append(
            f"{device.name}: calibration {path} records no CPUs its runs used: its speed "
            f"assumes all {cal.speed.setting_cpus:g} CPUs of its setting; run edgeprof "
            "calibrate again for the speed of the CPUs they used"
        )
    cpus = float(device.cores) if capped else max(round(share, 3), LEAST_CPUS)
    doubts = tuple(cal.speed_doubts())
    if doubts:
        sp = cal.speed
        warnings.append(
            f"{device.name}: cpus={cpus:g} from calibration {path} rests on a poor fit "
            f"({sp.metric} [{sp.setting}]: {'; '.join(doubts)}): the device's speed may be "
            f"far from it (edgeprof report --calibration {path} shows the fit)"
        )
    return cpus, capped, warnings, note, doubts


def own_setting(device: Device, cpus: float | None = None) -> str:
    """The setting label (:meth:`Limits.describe`) of a run of an entry with none of the
    options that replace its values: its CPUs (``cpus``: its share, speed's or its whole
    cores), its memory, period and storage."""
    if cpus is None:
        cpus = float(device.cores) if device.share is None and device.speed is None else (
            device_setting(device).cpus
        )
    own = Limits(cpus=cpus, memory=device.memory, cpu_period_us=device.cpu_period_us)
    return own.with_storage(device.storage).describe()


def calibrated_elsewhere(device: Device, cpus: float | None = None) -> str | None:
    """The settings an entry's calibration was fitted at, where its own setting
    (:func:`own_setting`) is not among them, so that it predicts nothing for the entry's
    runs; ``None`` where it is, or the entry has no calibration or takes its speed from it
    (``speed: calibration``, whose runs are not predicted).  A tester's entry of 1 core and
    a calibration fitted at ``cpus=0.5`` was listed "host's; predicted", and each run then
    said "no calibration for this setting"."""
    if device.calibration is None or device.speed == CALIBRATED:
        return None
    from .calibration import load_calibration

    settings = load_calibration(calibration_file(device) or device.calibration).settings()
    mine = own_setting(device, cpus)
    return None if mine in settings else "; ".join(settings) or "no setting"


def _elsewhere_warning(device: Device, cpus: float) -> list[str]:
    """The run's warning of :func:`calibrated_elsewhere`, for an entry with a share or a
    speed (one with neither says it in its own warning)."""
    elsewhere = calibrated_elsewhere(device, cpus)
    if elsewhere is None:
        return []
    return [
        f"{device.name}: its calibration {device.calibration} predicts nothing at its own "
        f"setting ({own_setting(device, cpus)}): it was calibrated at {elsewhere} (give the "
        "options of one of those for its predictions)"
    ]


def calibrated_share(device: Device) -> tuple[float, tuple[str, ...]] | str:
    """A ``speed: calibration`` entry's ``--cpus`` on this host and why its fit may be far
    off, for ``edgeprof devices``; the reason (one line) where it gives none."""
    try:
        s = device_setting(device)
    except ConfigError as exc:
        return str(exc)
    return s.cpus, s.doubts


def calibration_file(device: Device) -> Path | None:
    """The entry's calibration file, refused in one line naming the catalog and the entry
    where it is not a file (``cannot read calibration sub/nope.yml: [Errno 2] …`` had named
    neither)."""
    path = device.calibration
    if path is not None and not path.is_file():
        raise ConfigError(
            f"device catalog {device.catalog}: device {device.name!r}: key 'calibration': "
            f"{path} is not a file"
        )
    return path


def _described(d: Device) -> str:
    """An entry's cores (with its speed or share where it gives one) and memory."""
    how = ""
    if d.share is not None:
        how = f" (share {d.share:g})"
    elif isinstance(d.speed, float):
        how = f" at speed {d.speed:g}"
    elif d.speed == CALIBRATED:
        how = " at its calibration's speed"
    return f"{counted(d.cores, 'core')}{how}, {format_binary(d.memory)}"


def replaced_note(device: Device, environ: Mapping[str, str] | None = None) -> str | None:
    """The note of an entry that replaces an earlier catalog's entry of its name (the
    shipped one, or ``$EDGEPROF_DEVICES``'s under ``--devices``); ``None`` where it does
    not.  A team catalog giving ``rpi4-4gb`` 2 cores and 1 GiB had run as the board with no
    word (only ``doctor`` named it): the run's text then said a Raspberry Pi 4 4 GB has
    1 GiB (a tester's, finding 7 of round 3); a ``--devices`` entry at 0.8 CPUs and
    400 MiB then replaced a team's ``$EDGEPROF_DEVICES`` entry at 0.6 and 420 MiB with no
    word (a custom-board user's)."""
    old = device.replaces
    if old is None:
        return None
    return (
        f"{device.name}: the entry in {origin(device, environ)}, {_described(device)}, "
        f"replaces {whose(old, environ)} ({_described(old)})"
    )


def replaced_note_by(name: str, option: Path | None) -> str | None:
    """:func:`replaced_note` of ``--device NAME`` (with ``--devices``), for ``recipe``,
    which resolves no limits here."""
    return replaced_note(find_device(load_catalog(catalog_paths(option)), name))


def resolve_device(
    name: str,
    option: Path | None,
    host: HostInfo | None,
    environ: Mapping[str, str] | None = None,
) -> DeviceSetting:
    """``--device NAME`` (with ``--devices FILE``): the merged catalogs' entry, as limits."""
    device = find_device(load_catalog(catalog_paths(option, environ)), name)
    setting = device_setting(device, host)
    return replace(setting, replaced=replaced_note(device, environ))
