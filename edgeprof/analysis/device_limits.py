"""A catalog device's values as one run's limits and options (``bench``, ``layers profile``;
``run`` plans its sweep in :mod:`edgeprof.sweeps.device_request`): the options given win, and
each value they replace is said."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from ..cpu_units import format_period, parse_cpu_period
from ..errors import ConfigError
from ..model import STORAGE, Limits
from ..units import counted, format_binary, named, parse_memory_limit
from .device_setting import DeviceSetting, calibration_file, resolve_device
from .devices import CALIBRATED, Device

T = TypeVar("T")


def overridden(setting: DeviceSetting, **given: object) -> list[str]:
    """The notes of explicit options that replace a device's values (``cpus=("2",)`` …):
    ``--cpus 2 replaces rpi4-4gb's 4``."""
    own = {
        "cpus": _share(setting, given.get("cpus")),
        "memory": format_binary(setting.memory),
        "cpu_period": None
        if setting.cpu_period_us is None
        else format_period(setting.cpu_period_us),
        **{s.key: s.format(rate) for s, rate in setting.device.storage.storage_rates()},
    }
    notes = []
    for key, value in given.items():
        if value and own.get(key) is not None:
            shown = ",".join(value) if isinstance(value, tuple | list) else str(value)
            option = "--" + key.replace("_", "-")
            notes.append(f"{option} {shown} replaces {setting.device.name}'s {own[key]}")
    return notes


def _share(setting: DeviceSetting, given: object) -> str:
    """The CPU share ``--cpus`` (``given``: its values) replaces, with what it came from and
    the pools that go with it ("replaces quad25's 1" had named no unit, and not that its
    4-thread pools went)."""
    dev = setting.device
    cores = counted(dev.cores, "core")
    made = f"{cores} at speed {dev.speed:g}" if setting.speed_from == "speed" else cores
    cpus = f"{setting.cpus:g} CPU{'' if setting.cpus == 1 else 's'}"
    pools = setting.thread_env.get("OMP_NUM_THREADS")
    values = given if isinstance(given, tuple | list) else (given,)
    try:
        sizes = {math.ceil(float(str(v))) for v in values}
    except ValueError:  # not a number: its own error comes
        sizes = set()
    kept = pools is None or sizes == {int(pools)}
    sized = "" if kept else f"; the thread pools follow --cpus, not its {pools}"
    return f"{cpus} ({made}{sized})"


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
    storage: Limits | None = None,
) -> DeviceLimits:
    """One setting (``bench``, ``layers profile``, the library's ``device=``): the options,
    with ``--device``'s values where the option was not given (``storage``: the storage
    limits given, the rest of it unread).  Without a device, the options as they are."""
    user_env = dict(env or {})
    given = storage or Limits()
    if memory is not None:
        parse_memory_limit(memory, "--memory")  # Limits' own error names no option
    if cpu_period is not None:
        with named("--cpu-period"):  # as run's (bench's had named no option)
            parse_cpu_period(cpu_period)
    if name is None:
        if catalog is not None:
            raise ConfigError(f"--devices {catalog} is a catalog for --device: give --device")
        lim = Limits(
            cpus=cpus,
            cpuset=cpuset,
            memory=memory,
            cpu_period_us=cpu_period,
        ).with_storage(given)
        return DeviceLimits(lim, user_env, (), calibration, gpu_memory)
    from ..measure.host import host_info

    setting = resolve_device(name, catalog, host_info())
    dev = setting.device
    gpu_memory = device_gpu_memory(dev, gpu_memory)
    rates = _replacing(dev, {s.key: s.format(r) for s, r in given.storage_rates()})
    notes = overridden(setting, cpus=cpus, memory=memory, cpu_period=cpu_period, **rates)
    lim = Limits(
        cpus=cpus if cpus is not None else setting.cpus,
        cpuset=cpuset,
        memory=memory if memory is not None else setting.memory,
        cpu_period_us=cpu_period if cpu_period is not None else setting.cpu_period_us,
    ).with_storage(dev.storage, given)
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


def _replacing(dev: Device, given: Mapping[str, T]) -> dict[str, T | None]:
    """The storage limits ``given`` (by key, as the user wrote them: a value or ``run``'s
    list) that replace ``dev``'s own: a limit where the entry has none replaces nothing, and
    is not recorded as replacing it."""
    return {s.key: given.get(s.key) if getattr(dev, s.key) is not None else None for s in STORAGE}


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
    storage: dict[str, tuple[str, ...]]
    """``--read-bps`` and the other storage options by key (``read_bps``; a sweep's lists),
    else the device's."""
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
    storage: Mapping[str, tuple[str, ...]] | None = None,
) -> RunDevice:
    """``--device NAME`` on ``run``'s options (``cpus`` and ``memory`` may be sweeps' lists)."""
    from ..measure.host import host_info

    setting = resolve_device(name, catalog, host_info())
    dev = setting.device
    warnings = list(setting.said_with(bool(cpus)))
    given_storage = dict(storage or {})
    rates = _replacing(dev, given_storage)
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
        storage={
            s.key: given_storage.get(s.key) or _own(getattr(dev, s.key), s.iops) for s in STORAGE
        },
        warnings=tuple(warnings),
        replaced=replaced_options(cpus=cpus, memory=memory, cpu_period=cpu_period, **rates),
    )


def _own(value: int | None, iops: bool) -> tuple[str, ...]:
    """A device's storage limit as an option's text (none: ``()``): bytes say their unit
    (``41943040b``)."""
    return () if value is None else (f"{value}",) if iops else (f"{value}b",)
