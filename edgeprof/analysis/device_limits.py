"""A catalog device's values as one run's limits and options (``bench``, ``layers profile``;
``run`` plans its sweep in :mod:`edgeprof.sweeps.device_request`): the options given win, and
each value they replace is said."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..cpu_units import format_period
from ..errors import ConfigError
from ..model import Limits
from ..units import format_bandwidth, format_binary, parse_memory_limit
from .device_setting import DeviceSetting, calibration_file, resolve_device
from .devices import CALIBRATED, Device


def overridden(setting: DeviceSetting, **given: object) -> list[str]:
    """The notes of explicit options that replace a device's values (``cpus=("2",)`` …):
    ``--cpus 2 replaces rpi4-4gb's 4``."""
    own = {
        "cpus": f"{setting.cpus:g}",
        "memory": format_binary(setting.memory),
        "cpu_period": None
        if setting.cpu_period_us is None
        else format_period(setting.cpu_period_us),
        **{
            key: None if rate is None else format_bandwidth(rate)
            for key, rate in (
                ("read_bps", setting.device.read_bps),
                ("write_bps", setting.device.write_bps),
            )
        },
    }
    notes = []
    for key, value in given.items():
        if value and own.get(key) is not None:
            shown = ",".join(value) if isinstance(value, tuple | list) else str(value)
            option = "--" + key.replace("_", "-")
            notes.append(f"{option} {shown} replaces {setting.device.name}'s {own[key]}")
    return notes


@dataclass(frozen=True)
class DeviceLimits:
    limits: Limits
    env: dict[str, str]
    """The user's environment with the device's thread-pool sizes added."""
    warnings: tuple[str, ...]
    calibration: Path | None
    gpu_memory: str | None = None
    """``--gpu-memory``, else the device's ``gpu_memory``."""
    unified_memory: bool = False
    """The device's CPU and GPU share its ``memory`` (as :func:`run`'s device does)."""
    cores: int | None = None
    """The device's cores, for the runs' faster-than-the-device warning; ``None`` under the
    user's ``--cpus``, a share that says nothing of the device's speed per core."""
    replaced: tuple[str, ...] = ()
    """As :attr:`RunDevice.replaced`."""


def replaced_options(**given: object) -> tuple[str, ...]:
    """The options (``--cpus``, ``--memory``, ``--cpu-period``) given that replaced a
    device's values, recorded in each result (:attr:`RunDevice.replaced`)."""
    return tuple("--" + key.replace("_", "-") for key, value in given.items() if value)


def device_gpu_memory(dev: Device, gpu_memory: str | None) -> str | None:
    """``--gpu-memory`` on ``dev``, else the device's own ``gpu_memory``; refused where the
    device's CPU and GPU share one memory (``--memory`` sets it)."""
    if dev.unified_memory and gpu_memory is not None:
        raise ConfigError(
            f"--gpu-memory with --device {dev.name}: its CPU and GPU share one memory, "
            "which --memory sets"
        )
    if gpu_memory is None and dev.gpu_memory is not None:
        return f"{dev.gpu_memory}b"
    return gpu_memory


def device_calibration(
    dev: Device, cpus_given: bool, calibration: Path | None, share: float | None = None
) -> tuple[Path | None, list[str]]:
    """The calibration whose predictions a device's runs get (``--calibration``, else the
    device's), and why none where the device has one but it does not apply (``share``: the
    ``--cpus`` the calibration implied, said there: ``devices`` had shown only "from
    calibration")."""
    if calibration is not None or dev.calibration is None:
        return calibration, []
    if dev.speed == CALIBRATED and not cpus_given:
        # The fits hold for the setting they were profiled under, not for this share:
        # applied here, they would count the device's slowness twice.
        at = "" if share is None else f", cpus={share:g}"
        return None, [
            f"{dev.name}: the run emulates the speed its calibration implies{at}, so the "
            "calibration's predictions are not made (give --cpus of the calibrated "
            "setting, or --calibration, for them)"
        ]
    return calibration_file(dev), []


def device_limits(
    name: str | None,
    catalog: Path | None,
    *,
    cpus: str | None = None,
    cpuset: str | None = None,
    memory: str | None = None,
    cpu_period: str | None = None,
    env: Mapping[str, str] | None = None,
    on_host: bool = True,
    gpu_memory: str | None = None,
    calibration: Path | None = None,
    read_bps: int | None = None,
    write_bps: int | None = None,
) -> DeviceLimits:
    """One setting (``bench``, ``layers profile``, the library's ``device=``): the options,
    with ``--device``'s values where the option was not given.  Without a device, the
    options as they are."""
    user_env = dict(env or {})
    if memory is not None:
        parse_memory_limit(memory, "--memory")  # Limits' own error names no option
    if name is None:
        if catalog is not None:
            raise ConfigError(f"--devices {catalog} is a catalog for --device: give --device")
        lim = Limits(
            cpus=cpus,
            cpuset=cpuset,
            memory=memory,
            cpu_period_us=cpu_period,
            read_bps=read_bps,
            write_bps=write_bps,
        )
        return DeviceLimits(lim, user_env, (), calibration, gpu_memory)
    from ..measure.host import host_info

    setting = resolve_device(name, catalog, host_info())
    dev = setting.device
    gpu_memory = device_gpu_memory(dev, gpu_memory)
    rates = _replacing(dev, _rate(read_bps), _rate(write_bps))
    notes = overridden(setting, cpus=cpus, memory=memory, cpu_period=cpu_period, **rates)
    lim = Limits(
        cpus=cpus if cpus is not None else setting.cpus,
        cpuset=cpuset,
        memory=memory if memory is not None else setting.memory,
        cpu_period_us=cpu_period if cpu_period is not None else setting.cpu_period_us,
        read_bps=read_bps if read_bps is not None else dev.read_bps,
        write_bps=write_bps if write_bps is not None else dev.write_bps,
    )
    if cpus is None:
        from ..measure.limits import matched_threads

        inherited = os.environ if on_host else {}
        user_env.update(matched_threads(setting.thread_env, inherited, user_env))
    said = setting.said_with(cpus is not None)
    calibration, why = device_calibration(dev, cpus is not None, calibration, setting.cpus)
    return DeviceLimits(
        lim,
        user_env,
        (*said, *notes, *why),
        calibration,
        gpu_memory,
        dev.unified_memory,
        dev.cores if cpus is None else None,
        replaced_options(cpus=cpus, memory=memory, cpu_period=cpu_period, **rates),
    )


def _rate(n: int | None) -> str | None:
    """A rate given as bytes a second, as the note that it replaces a device's shows it."""
    return None if n is None else format_bandwidth(n)


def _replacing(dev: Device, read_bps: str | None, write_bps: str | None) -> dict[str, str | None]:
    """The storage rates given that replace ``dev``'s own: a rate where the entry has none
    replaces nothing, and is not recorded as replacing it."""
    return {
        "read_bps": read_bps if dev.read_bps is not None else None,
        "write_bps": write_bps if dev.write_bps is not None else None,
    }


@dataclass(frozen=True)
class RunDevice:
    """``run``'s options with a device's values where the user gave none (a sweep's lists)."""

    cpus: tuple[str, ...]
    memory: tuple[str, ...]
    cpu_period: str | None
    calibration: Path | None
    """The device's calibration, for the predictions, where none was given."""
    env: tuple[str, ...]
    """``KEY=VALUE`` items with thread pools of the device's size added."""
    gpu_memory: str | None
    unified_memory: bool
    cores: int | None
    """As :attr:`DeviceLimits.cores`."""
    read_bps: str | None
    write_bps: str | None
    """``--read-bps``, ``--write-bps``, else the device's storage speed."""
    warnings: tuple[str, ...]
    replaced: tuple[str, ...] = ()
    """The options that replaced the device's values (``--memory``, ``--cpus``,
    ``--cpu-period``), recorded in each result: a verdict against the limit names its
    source (``--memory 30m`` on a 2 GiB board had read "memory limit 30.0MiB (device …)")."""


def run_device(
    name: str,
    catalog: Path | None,
    *,
    cpus: tuple[str, ...],
    memory: tuple[str, ...],
    cpu_period: str | None,
    calibration: Path | None,
    env: Sequence[str],
    gpu_memory: str | None,
    on_host: bool,
    read_bps: str | None = None,
    write_bps: str | None = None,
) -> RunDevice:
    """``--device NAME`` on ``run``'s options (``cpus`` and ``memory`` may be sweeps' lists)."""
    from ..measure.host import host_info

    setting = resolve_device(name, catalog, host_info())
    dev = setting.device
    warnings = list(setting.said_with(bool(cpus)))
    rates = _replacing(dev, read_bps, write_bps)
    warnings += overridden(setting, cpus=cpus, memory=memory, cpu_period=cpu_period, **rates)
    calibration, why = device_calibration(dev, bool(cpus), calibration, setting.cpus)
    warnings += why
    from ..measure.limits import matched_threads

    given = {k: v for k, _, v in (item.partition("=") for item in env)}
    # An exported pool size is the user's choice, as in a run, and so is its count.
    inherited = os.environ if on_host else {}
    sized = matched_threads(setting.thread_env, inherited, given)
    threads = tuple(f"{k}={v}" for k, v in sized.items())
    if cpus:
        threads = ()  # the user's share, not the device's: the runner sizes the pools
    period = setting.cpu_period_us
    return RunDevice(
        cpus=cpus or (f"{setting.cpus:g}",),
        memory=memory or (f"{setting.memory}b",),
        cpu_period=cpu_period or (None if period is None else f"{period}us"),
        calibration=calibration,
        env=(*env, *threads),
        gpu_memory=device_gpu_memory(dev, gpu_memory),
        unified_memory=dev.unified_memory,
        cores=None if cpus else dev.cores,
        read_bps=read_bps or (None if dev.read_bps is None else f"{dev.read_bps}b"),
        write_bps=write_bps or (None if dev.write_bps is None else f"{dev.write_bps}b"),
        warnings=tuple(warnings),
        replaced=replaced_options(cpus=cpus, memory=memory, cpu_period=cpu_period, **rates),
    )
