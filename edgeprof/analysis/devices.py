"""The device catalog: named boards as limits (``--device rpi4-4gb``), and ``edgeprof devices``.

Where it lives: ``run`` (:mod:`edgeprof.sweeps.request`), ``layers profile``
(:mod:`edgeprof.cli.layers`), ``bench`` and ``edgeprof devices`` resolve devices, and a
device's speed may come from its calibration file (:mod:`edgeprof.analysis.calibration`), so
the module sits in ``analysis``: above the calibration it reads, below every caller.  The
parser is pure: the catalog paths are given to it (:func:`catalog_paths` reads the option
and ``$EDGEPROF_DEVICES``), and the host is passed in.

The catalogs, later ones over earlier ones (an entry of the same name is replaced whole):
the one shipped in the package (``edgeprof/devices.yml``), ``$EDGEPROF_DEVICES``, then
``--devices FILE``.  A catalog is YAML::

    devices:
      rpi4-4gb:
        cores: 4              # the device's CPU cores (an integer)
        memory: 4g            # Docker's size rules (binary multiples: 420MB is 420 MiB, said)
        speed: 0.35           # optional: a device core against a host core; OR
        share: 1.4            # optional: CPUs of this host (``--cpus``); OR neither
        calibration: rpi4.yml # optional: a calibration file, relative to this catalog
        cpu_period: 2ms       # optional: ``--cpu-period``
        gpu_memory: 2g        # optional: the GPU's memory (``--gpu-memory``)
        unified_memory: true  # optional: CPU and GPU share ``memory`` (Jetson-class boards)
        read_bps: 40m         # optional: the storage's read speed (``--read-bps``)
        write_bps: 20m        # optional: its write speed (``--write-bps``)
        read_iops: 1500       # optional: its reads a second (``--read-iops``)
        write_iops: 500       # optional: its writes a second (``--write-iops``)
        description: ...      # optional
        source: https://...   # optional: where the figures came from

The limits a device gives (:func:`device_setting`):

* ``share``: ``--cpus share``; ``speed``: ``--cpus cores × speed`` (a device core at speed
  ``s`` does what ``s`` of a host core does).  A device faster than the host (``speed > 1``,
  ``share > cores``) cannot be emulated: a quota only takes time away.  Its share is capped at
  ``cores`` (its cores at this host's speed, a warning says so): the run is then an upper
  bound on the device's time.
* neither, but a calibration that implies a speed (:mod:`edgeprof.analysis.calibration.speed`)
  and ``speed: calibration``: ``--cpus`` = the device in CPUs of the profiling host (warned
  when this host's CPU model is another);
* nothing known about speed (every shipped entry: speed is not in a spec sheet): ``--cpus
  cores``, pinned to that many cores at *this host's* speed, with a warning that names
  ``edgeprof calibrate``.

A quota is one number for the whole group, not a speed per core: a workload with fewer
threads than the device has cores is slowed only when the share is under its thread count.
So a fractional share also sets the thread-pool variables to the device's cores (a pool
sized as on the device), unless the user set them, and ``MKL_DYNAMIC=FALSE``: without it MKL,
and PyTorch's pool, which follows MKL's count, cap at this host's physical cores (torch's
pool was 2 under a 4-core board on a 2-core host).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

from ..cpu_units import MAX_CPUS, MIN_QUOTA_US, format_period, parse_cpu_period, shortest_period_us
from ..errors import ConfigError
from ..model import STORAGE, Limits
from ..storage import read_capped, why_unreadable
from ..units import decimal_looking, format_binary, parse_bandwidth, parse_memory_limit, shown
from .device_share import LEAST_CPUS, share_of
from .similar import either, similar_devices

DEVICES_ENV = "EDGEPROF_DEVICES"
"""A user catalog merged over the shipped one (a path)."""

CALIBRATED = "calibration"
"""``speed: calibration``: the speed the entry's calibration file implies."""

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_KEYS = (
    "cores",
    "memory",
    "share",
    "speed",
    "calibration",
    "cpu_period",
    "gpu_memory",
    "unified_memory",
    "read_bps",
    "write_bps",
    "read_iops",
    "write_iops",
    "description",
    "source",
)


@dataclass(frozen=True)
class Device:
    name: str
    cores: int
    memory: int
    """Bytes."""
    catalog: Path
    """The file the entry came from (a calibration path is relative to it)."""
    share: float | None = None
    speed: float | str | None = None
    """A float, or :data:`CALIBRATED`."""
    calibration: Path | None = None
    """Resolved against :attr:`catalog`'s directory."""
    cpu_period_us: int | None = None
    description: str | None = None
    source: str | None = None
    gpu_memory: int | None = None
    """Bytes of GPU memory (a discrete GPU's), held against the run's GPU peak."""
    unified_memory: bool = False
    """CPU and GPU share :attr:`memory`: host and GPU peaks are held to it together."""
    read_bps: int | None = None
    write_bps: int | None = None
    read_iops: int | None = None
    write_iops: int | None = None
    """The storage's speed, bytes and requests a second (a board's SD card or eMMC; a
    board's spec sheet does not give the card a user fits, so no shipped entry has one)."""
    notes: tuple[str, ...] = ()
    """What the entry's own text needs said wherever it is used: a size whose unit reads
    as decimal (:func:`_unit_note`)."""
    replaces: Device | None = field(default=None, compare=False, repr=False)
    """The entry of this name in an earlier catalog that this one replaced whole (set by
    :func:`load_catalog`), said by :func:`replaced_note` and ``edgeprof devices``."""

    @property
    def storage(self) -> Limits:
        """The entry's storage limits alone, as a run's (:meth:`Limits.storage_rates`
        walks them)."""
        return Limits(
            read_bps=self.read_bps,
            write_bps=self.write_bps,
            read_iops=self.read_iops,
            write_iops=self.write_iops,
        )


def builtin_catalog() -> Path:
    """The catalog shipped in the package."""
    return Path(str(resources.files("edgeprof").joinpath("devices.yml")))


def catalog_paths(option: Path | None, environ: Mapping[str, str] | None = None) -> list[Path]:
    """The catalogs to merge, lowest precedence first: shipped, ``$EDGEPROF_DEVICES``,
    ``--devices``."""
    env = os.environ if environ is None else environ
    paths = [builtin_catalog()]
    if env.get(DEVICES_ENV):
        paths.append(Path(env[DEVICES_ENV]))
    if option is not None:
        paths.append(option)
    return paths


def load_catalog(paths: Sequence[Path]) -> dict[str, Device]:
    """Every catalog read and merged, later over earlier (whole entries: each one that
    replaces an earlier one keeps it, :attr:`Device.replaces`)."""
    merged: dict[str, Device] = {}
    from_env = os.environ.get(DEVICES_ENV)
    for path in paths:
        try:
            entries = parse_catalog(path, earlier=merged)
            merged.update({k: replace(d, replaces=merged.get(k)) for k, d in entries.items()})
        except ConfigError as exc:
            if from_env is None or path != Path(from_env):
                raise
            # A path the user set once in a shell's profile, not on this command line.
            raise ConfigError(f"{exc} (${DEVICES_ENV} names it)") from exc
    return merged


def parse_catalog(
    path: Path, text: str | None = None, earlier: Mapping[str, Device] | None = None
) -> dict[str, Device]:
    """One catalog file (``text``: its content, else read).  Strict: an unknown key, a bad
    type or size is a :class:`ConfigError` naming the file, the entry and the key.
    ``earlier``: the entries of the catalogs before it, which an entry missing a key is told
    it replaces whole."""
    from ..yamlfile import parse

    try:
        text = read_capped(path) if text is None else text
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"device catalog {path}: cannot read it: {why_unreadable(exc)}") from exc
    data = parse(text, f"device catalog {path}")  # ``device catalog bad.yml:5: the key ...``
    if data is None:
        return {}
    if not isinstance(data, dict) or set(data) - {"devices"}:
        raise ConfigError(f"device catalog {path}: expected one top-level key 'devices'")
    entries = data.get("devices")
    if entries is None:  # ``devices:`` with nothing under it: an empty catalog, as an empty file
        return {}
    if not isinstance(entries, dict):  # ``devices: []``, ``0`` or ``''`` had read as empty
        raise ConfigError(
            f"device catalog {path}: 'devices' must map names to entries (got {shown(entries)})"
        )
    return {str(name): _entry(path, name, e, earlier or {}) for name, e in entries.items()}


def _entry(path: Path, name: object, e: object, earlier: Mapping[str, Device]) -> Device:
    where = f"device catalog {path}: device {name!r}"
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigError(f"{where}: a name is letters, digits, '.', '_' and '-' (≤ 64)")
    if not isinstance(e, dict):
        raise ConfigError(f"{where}: expected a mapping of {', '.join(_KEYS)}")
    unknown = sorted(str(k) for k in e if k not in _KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(_KEYS)})")
    for key in ("cores", "memory"):
        if key not in e:
            # A partial entry over a team's (``pizero2w: {speed: 0.2}``) had read as a
            # mistake in the file alone: entries are not merged key by key.
            whole = "" if name not in earlier else (
                f" (an entry replaces the whole entry of its name, not key by key: give every "
                f"key of {whose(earlier[name])})"
            )  # fmt: skip
            raise ConfigError(f"{where}: missing key {key!r}{whole}")

    def bad(key: str, why: str) -> ConfigError:
        # shown(): a 401-digit value had been echoed whole, twice (here and in ``why``).
        return ConfigError(f"{where}: key {key!r}: {why} (got {shown(e[key])})")

    cores = e["cores"]
    if isinstance(cores, bool) or not isinstance(cores, int) or not 1 <= cores <= MAX_CPUS:
        raise bad("cores", f"expected a whole number of cores, from 1 to {MAX_CPUS:g}")
    mem = _size(e, "memory", bad)
    if mem is None:  # ``memory:`` left empty: present, but no value (an assert had fired)
        raise bad("memory", "expected a size such as 4g")
    # A key left empty is no value: ``share:`` beside ``speed: 0.5`` is not "both".
    if e.get("share") is not None and e.get("speed") is not None:
        raise ConfigError(f"{where}: give 'share' or 'speed', not both")
    share = _positive(e, "share", bad)
    if share is not None and share < LEAST_CPUS:  # as --cpus refuses it, but named here
        raise bad("share", f"expected CPUs as --cpus takes them, at least {LEAST_CPUS:g}")
    speed: float | str | None
    if e.get("speed") == CALIBRATED:
        if e.get("calibration") is None:  # absent or left empty: run --device had asserted
            raise bad("speed", "'calibration' needs a calibration file in the entry")
        speed = CALIBRATED
    elif isinstance(e.get("speed"), str):  # its one word: "expected a positive number" alone
        raise bad("speed", f"expected a positive number or {CALIBRATED!r}")  # hid it
    else:
        speed = _positive(e, "speed", bad)
    cal = e.get("calibration")
    if cal is not None and (not isinstance(cal, str) or not cal):
        raise bad("calibration", "expected a file name")
    period = e.get("cpu_period")
    period_us = None
    if period is not None:
        if isinstance(period, bool) or not isinstance(period, str | int):
            raise bad("cpu_period", "expected a period such as 2ms")
        try:
            period_us = parse_cpu_period(period)
        except ConfigError as exc:
            raise bad("cpu_period", str(exc)) from None
    cpus = share if share is not None else None
    if isinstance(speed, float):
        cpus = share_of(cores, speed)[0]
    if period_us is not None and cpus is not None and cpus * period_us < MIN_QUOTA_US - 1e-6:
        # Refused here, naming the entry: at the run it had named a --cpus and a
        # --cpu-period nobody typed.
        raise bad(
            "cpu_period",
            f"a share of {cpus:g} CPUs makes a quota of {cpus * period_us / 1000:g}ms per "
            f"period, under the kernel's 1ms: give at least "
            f"{format_period(shortest_period_us(cpus))}",
        )
    gpu_memory = _size(e, "gpu_memory", bad)
    unified = e.get("unified_memory", False)
    if not isinstance(unified, bool):
        raise bad("unified_memory", "expected true or false")
    if unified and gpu_memory is not None:
        raise bad("gpu_memory", "a unified memory is 'memory' itself: give one or the other")
    rates: dict[str, int | None] = {}
    for limit in STORAGE:
        value = e.get(limit.key)
        if isinstance(value, int) and not isinstance(value, bool) and not limit.iops:
            # As the option reads it: YAML's bare ``read_bps: 40``, meant as 40 MB/s, had
            # been a board whose storage read 40 bytes a second (a docs audit's).
            value = str(value)
        try:
            rates[limit.key] = None if value is None else limit.parse(value)
        except ConfigError as exc:
            raise bad(limit.key, str(exc)) from None
    text: dict[str, str | None] = {}
    for key in ("description", "source"):
        v = e.get(key)
        if v is not None and not isinstance(v, str):
            raise bad(key, "expected text")
        text[key] = v
    return Device(
        name=name,
        cores=cores,
        memory=mem,
        catalog=path,
        share=share,
        speed=speed,
        calibration=None if cal is None else path.parent / cal,
        cpu_period_us=period_us,
        description=text["description"],
        source=text["source"],
        gpu_memory=gpu_memory,
        unified_memory=unified,
        read_bps=rates["read_bps"],
        write_bps=rates["write_bps"],
        read_iops=rates["read_iops"],
        write_iops=rates["write_iops"],
        notes=tuple(n for n in (_unit_note(path, name, e, k) for k in _SIZES) if n is not None),
    )


_SIZES = ("memory", "gpu_memory", "read_bps", "write_bps")
"""The keys of a size, or a size a second: an SD card's "10 MB/s" is 10⁶ bytes a second."""


def _unit_note(path: Path, name: str, e: Mapping[str, Any], key: str) -> str | None:
    """The note of a size written with a unit that reads as decimal (``memory: 420MB``):
    Docker's rule, which every size of edgeprof's follows (``--memory``, budgets), reads it
    as MiB.  Not refused: catalogs written so hold binary sizes that users meant.  The
    user's own text is quoted, in both places: rewritten, ``430080kB`` had read "430080 KB"
    (a verifier's), a unit they did not write."""
    text = e.get(key)
    rate = key.endswith("_bps")
    if rate and isinstance(text, str) and text.strip().lower().endswith("/s"):
        text = text.strip()[:-2]
    found = decimal_looking(text)
    if found is None:
        return None
    number, unit, decimal = found
    binary = parse_bandwidth(str(e[key])) if rate else parse_memory_limit(str(e[key]))
    power = {"KB": "10³", "MB": "10⁶", "GB": "10⁹", "TB": "10¹²"}[unit]
    i = f"{unit[0]}iB"  # KiB, MiB, GiB, TiB
    per = "/s" if rate else ""
    return (
        f"{name}: {key} {e[key]!r} in {path} is read as {format_binary(binary)}{per} (binary "
        f"multiples: Docker's rule, as --memory); {e[key]!r} in multiples of {power} bytes "
        f"(a datasheet's, or a device CSV's _{unit.lower()}) would be "
        f"{format_binary(decimal)}{per}: write {number}{i}{per} to keep it binary without this "
        f"note, or the size meant in {i}{per}"
    )


def _size(e: Mapping[str, Any], key: str, bad: Any) -> int | None:
    """A size key (Docker's rules, binary multiples; a bare number is bytes), ``None``
    where the entry has none."""
    v = e.get(key)
    if v is None:
        return None
    if not isinstance(v, str | int) or isinstance(v, bool):
        raise bad(key, "expected a size such as 4g")
    try:
        what = "GPU memory" if key == "gpu_memory" else "memory limit"
        return parse_memory_limit(v if isinstance(v, str) else f"{v}b", what=what)
    except ConfigError as exc:
        raise bad(key, str(exc)) from None


def _positive(e: Mapping[str, Any], key: str, bad: Any) -> float | None:
    v = e.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise bad(key, "expected a positive number")
    try:
        number = float(v)  # an int past float's range (400+ digits) raises OverflowError
    except OverflowError:
        raise bad(key, "expected a positive number within float's range") from None
    if not math.isfinite(number) or number <= 0:
        raise bad(key, "expected a positive number")
    return number


def find_device(catalog: Mapping[str, Device], name: str) -> Device:
    """The entry called ``name``, else a :class:`ConfigError` listing the known names."""
    if name not in catalog:
        known = ", ".join(sorted(catalog)) or "none"
        shown = name if _NAME.match(name) else repr(name)  # a control character, one line
        several = [n.strip() for n in name.split(",")]
        if len(several) > 1 and all(n in catalog for n in several):
            # A list of boards, as --cpus and --memory take lists: "no such device (did you
            # mean board-512m?)" had answered it (two users').
            raise ConfigError(
                f"--device {shown}: --device takes one device; run each ("
                + ", then ".join(f"--device {n}" for n in several)
                + ") into its own --out and report them together"
            )
        close = similar_devices(name, list(catalog), close=1)
        # A typo (rpi4-4g) named its fix in calibrate's note but not here (a tester's).
        hint = f"did you mean {either(close)}? " if close else ""
        raise ConfigError(f"--device {shown}: no such device ({hint}known: {known})")
    return catalog[name]


def origin(device: Device, environ: Mapping[str, str] | None = None) -> str:
    """Where an entry came from, as ``run``, ``doctor`` and ``edgeprof devices`` say it:
    ``shipped``, or its catalog file (``boards.yml ($EDGEPROF_DEVICES)`` for that one)."""
    if device.catalog == builtin_catalog():
        return "shipped"
    env = os.environ if environ is None else environ
    via = f" (${DEVICES_ENV})" if str(device.catalog) == env.get(DEVICES_ENV) else ""
    return f"{device.catalog}{via}"


def whose(device: Device, environ: Mapping[str, str] | None = None) -> str:
    """An entry named by where it came from: ``the shipped one``, ``the one in FILE``."""
    where = origin(device, environ)
    return "the shipped one" if where == "shipped" else f"the one in {where}"
