"""Parsing and formatting of sizes, durations, energies, rates, shares and process counts: one
place for all (the CPU limits' values, counts, quota periods and CPU lists, are
:mod:`edgeprof.cpu_units`').

Sizes follow Docker's ``--memory`` rule so that users of the older profiler get the same
limits: the suffixes ``b k m g t`` (optionally followed by ``b`` or ``ib``) are binary
multiples, so ``156m``, ``156mb`` and ``156MiB`` are all 156·2^20 bytes.  I/O amounts are
*printed* in decimal units, as ``docker stats`` prints them; memory in binary units.
"""

from __future__ import annotations

import datetime as _dt
import itertools
import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from fractions import Fraction

from .errors import ConfigError

# ASCII digits only (re.ASCII): Python's \d and float() also take '١' or '１', which no
# kernel file, Docker option or shell script means as a number.
_SIZE_RE = re.compile(
    r"^\s*(\d+)(?:\.(\d+))?\s*([bkmgt]?)(i?b)?\s*$", re.IGNORECASE | re.ASCII
)
_SIZE_MULT = {"": 1, "b": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}

MAX_SIZE = 2**63 - 1
"""The largest size: what the kernel's ``memory.max`` and Docker's ``Memory`` hold (64-bit
signed).  A larger one is a typo, and unbounded it printed as ``97656249999999991808.0TiB``."""

MAX_DURATION_S = 1e9
"""The longest duration (about 31 years): every wait edgeprof makes on one stays under the
longest timeout the OS takes (``threading.TIMEOUT_MAX``, about 292 years on Linux), which
an unbounded ``--timeout`` overflowed."""


def counted(n: int, noun: str) -> str:
    """``1 run``, ``2 runs``: a count and its noun (plural by an ``s``)."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


def signed_percent(fraction: float) -> str:
    """A change in whole percent with its sign (``+12%``, ``-3%``); ``0%`` where it rounds
    to nothing: a probe 0.4 % faster had read ``-0%``."""
    text = f"{100 * fraction:+.0f}%"
    return "0%" if text in ("+0%", "-0%") else text


def article(number: str) -> str:
    """``a`` or ``an`` before ``number`` (``81%``, ``7.4%``) as it is said: ``an`` before
    eight, eleven and eighteen (8, 80–89, 800–899, 11, 18, 11 000 …), ``a`` before the rest.
    "had a 81% lower latency p50" had been printed (a tester's)."""
    digits = "".join(itertools.takewhile(str.isdigit, number.strip()))
    if digits.startswith("8"):
        return "an"
    return "an" if len(digits) % 3 == 2 and digits[:2] in ("11", "18") else "a"


def shown(value: object) -> str:
    """``value`` as messages quote it: its repr, cut short (a 5000-digit number is one line
    of the message, not five thousand characters of it); a list or an object by its kind."""
    if isinstance(value, list | dict | tuple):
        return f"a {type(value).__name__}"
    if isinstance(value, int) and value.bit_length() > 128:  # repr() refuses 4300+ digits
        return f"an integer of {value.bit_length()} bits"
    text = repr(value)
    return text if len(text) <= 60 else text[:56] + "...'"


def parse_size(text: str) -> int:
    """``"156m"`` → 163577856, from 1 byte to :data:`MAX_SIZE`, exact (no float rounding:
    ``f"{n}b"`` reads back as ``n``).  Raises :class:`ConfigError` with the offending text."""
    value = _size_bytes(text)
    if value < 1:
        raise ConfigError(f"invalid size {shown(text)}: must be at least 1 byte")
    return value


def _size_bytes(text: str) -> int:
    """:func:`parse_size` but for its minimum (0 reads as 0: a minimum of its own is the
    caller's to name)."""
    m = _SIZE_RE.match(text) if isinstance(text, str) else None
    if not m or (m.group(4) and not m.group(3) and m.group(4).lower() == "ib"):
        raise ConfigError(
            f"invalid size {shown(text)}: expected a number with an optional unit b, k, m, "
            "g or t (binary multiples, as Docker's --memory), e.g. 512m or 1.5g"
        )
    whole, frac = m.group(1).lstrip("0"), m.group(2) or ""
    if frac.strip("0") and m.group(3).lower() in ("", "b"):
        # "--max-peak-memory 1.5" had become a 1-byte budget: a unit was surely meant.
        raise ConfigError(f"invalid size {shown(text)}: a byte has no fraction (1.5m? 1.5g?)")
    too_big = f"invalid size {shown(text)}: must be below 8 EiB (2**63 bytes)"
    if len(whole) > len(str(MAX_SIZE)):  # before int(): Python refuses 4300+ digits
        raise ConfigError(too_big)
    # 40 decimals are exact for every multiple of 2**-40 (the smallest unit fraction of a
    # byte here), so the floor below is the floor of the number as written.
    frac = frac[:40]
    number = int(whole or "0") + Fraction(int(frac or "0"), 10 ** len(frac))
    value = number * _SIZE_MULT[m.group(3).lower()]
    if value > MAX_SIZE:
        raise ConfigError(too_big)
    return int(value)


_DECIMAL_LOOKING = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt])b\s*$", re.IGNORECASE | re.ASCII)


def decimal_looking(text: object) -> tuple[str, str, int] | None:
    """A size whose unit reads as decimal (``420MB``, ``1 GB``) but is binary here (Docker's
    rule: ``MB`` = MiB), as the number and the unit written and the bytes it would be in
    decimal; ``None``
    for any other text (``420m``, ``420MiB``, bytes).  A datasheet's "420 MB usable" copied
    into a catalog gave 4.9 % more than 420 × 10⁶ bytes, where a device CSV's ``_mb`` column
    is 10⁶ bytes (a custom-board user's)."""
    m = _DECIMAL_LOOKING.match(text) if isinstance(text, str) else None
    if m is None:
        return None
    factor = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}[m.group(2).lower()]
    return m.group(1), f"{m.group(2).upper()}B", int(Fraction(m.group(1)) * factor)


def parse_memory_limit(text: str, option: str | None = None, what: str = "memory limit") -> int:
    """A memory limit: a size of at least 6 MiB (Docker's floor; below it nothing starts).
    ``option``: the option it came from, named in the error; ``what``: the size's name in
    it (``--gpu-memory 5m`` had been told of a "memory limit", the host's).  ``0`` is below
    that minimum too (it had been "must be at least 1 byte", not the limit's real floor)."""
    try:
        value = _size_bytes(text)
        if value < 6 * 2**20:
            said = f"{what} {shown(text)} is below the minimum of 6m"
            raise ConfigError(said + _bytes_hint(text))
    except ConfigError as exc:
        if option is None:
            raise
        raise ConfigError(f"{option}: {exc}") from None
    return value


def _bytes_hint(text: str) -> str:
    """What a limit too small for want of a unit meant: ``--memory 512`` is 512 bytes, and
    the error had said only "below the minimum of 6m" (a tester's)."""
    bare = text.strip()
    if not _BARE_NUMBER.fullmatch(bare) or _size_bytes(f"{bare}m") < 6 * 2**20:
        return ""
    return f" (a number without a unit is bytes); did you mean {bare}m?"


_BARE_NUMBER = re.compile(r"\d*\.?\d+|\d+\.", re.ASCII)
"""A size without its unit: a memory size of so many bytes is almost surely a slip."""


def require_unit(value: object) -> None:
    """Refuse a size written without its unit (``12``, ``1.5``): a budget of ``12`` had been
    12 bytes, failed by every run, and ``fit --resolution 4`` had searched to 4 bytes
    (``resolution 4.0KiB: 16 probes``).  The suggestion only where it is a size (no ``0m``
    for 0; no ``1.5b``: a byte is whole)."""
    number = str(value).strip()
    if not _BARE_NUMBER.fullmatch(number):
        return
    whole = "." not in number
    hint = "" if float(number) == 0 else f": write a size such as {number}m" + (
        f", or {number}b for bytes" if whole else ""
    )
    raise ConfigError(f"{shown(value)} has no unit (it would be {number} bytes){hint}")


def require_energy_unit(value: object) -> None:
    """Refuse an energy budget written without its unit (``50``, ``0.8``): meant as 50 mJ a
    frame it had been 50 J, never exceeded, as a bare latency had been seconds; a battery's
    Wh and a board's mJ are as likely (a GPU-less user's).  Joules stay the unit of the
    numbers a program passes and ``sweep.json`` records."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return
    number = str(value).strip()
    m = _ENERGY_RE.match(number)
    if m is None or m.group(2) is not None:
        return  # not a number (parse_energy's to refuse), or one with its unit
    raise ConfigError(
        f"{shown(value)} has no unit (it would be {number} joules): write {number}J, "
        f"{number}mJ or {number}Wh"
    )


def require_time_unit(value: object) -> None:
    """Refuse a per-iteration time written without its unit (``20``, ``0.5``, ``1e-2``):
    ``--max-latency-p95=20``, meant as 20 ms, had been a budget of 20 s that no frame could
    exceed (``within the budget 20.00s``, a tester's), and ``0.5`` may as well mean 0.5 ms
    as 0.5 s.  A number with a unit, and anything not a number, is :func:`parse_duration`'s
    to judge."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return
    number = str(value).strip()
    m = _DURATION_RE.match(number[1:] if number.startswith("-") else number)
    if m is None or m.group(2) is not None:
        return
    hint = "" if float(m.group(1)) == 0 else f": {_time_unit_hint(number)}"
    raise ConfigError(f"{shown(value)} has no unit (it would be {number} seconds){hint}")


def _time_unit_hint(number: str) -> str:
    """The fix for a bare per-iteration time.  Under 1 it most likely meant seconds, so the
    conversion comes first: ``latency_p95: 0.04``, meant as 40 ms, had been answered "write
    0.04ms", a budget of 40 µs that every frame fails (a tester's).  From 1 up it is most
    likely milliseconds (``20`` for 20 ms), so that is the first fix offered."""
    if abs(float(number)) >= 1:
        return f"write {number}ms, or {number}s for seconds"
    ms = f"{float(number) * 1000:.6g}"
    return f"{number} is {ms}ms in seconds: write {ms}ms, or {number}ms if you meant milliseconds"


def parse_unit_size(text: str) -> int:
    """:func:`parse_size` of a size that must carry its unit (:func:`require_unit`)."""
    value = parse_size(text)  # "0" is refused as below 1 byte, with or without a unit
    require_unit(text)
    return value


@contextmanager
def named(option: str) -> Iterator[None]:
    """A :class:`ConfigError` raised inside, prefixed by the ``option`` its value came from
    (``--timeout: invalid timeout '0': …``): the value alone did not say which of a
    command's sizes or durations was wrong."""
    try:
        yield
    except ConfigError as exc:
        raise ConfigError(f"{option}: {exc}") from None


MAX_PIDS = 4_194_304
"""The kernel's ceiling for ``pid_max`` (``PID_MAX_LIMIT`` on 64-bit)."""


def parse_pids(text: str | int) -> int:
    """A process-count limit (``--pids 64``): an integer from 1 to 4194304."""
    if isinstance(text, bool) or not isinstance(text, (str, int)):
        raise ConfigError(f"invalid process limit {shown(text)}: expected a whole number")
    if isinstance(text, int):
        value = text
    elif not re.fullmatch(r"\s*\d+\s*", text, re.ASCII):  # ASCII: int() also takes '١'
        raise ConfigError(f"invalid process limit {shown(text)}: expected a whole number")
    else:
        digits = text.strip().lstrip("0")  # int() refuses 4300+ digits: their count first
        value = int(digits or "0") if len(digits) <= len(str(MAX_PIDS)) else MAX_PIDS + 1
    if not 1 <= value <= MAX_PIDS:
        raise ConfigError(
            f"invalid process limit {shown(text)}: must be between 1 and {MAX_PIDS}"
        )
    return value



_DURATION_RE = re.compile(
    r"^\s*((?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?)\s*(us|ms|s|m|h)?\s*$", re.ASCII
)
"""A number (an exponent allowed: ``repr`` of a float, as a template's interval is passed
on, may write one) and an optional unit; ``us`` as ``--cpu-period`` takes it (``--max-wall
1000000us`` had been refused)."""
_DURATION_MULT = {None: 1.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "m": 60.0, "h": 3600.0}


def parse_bandwidth(text: str | int, what: str = "storage rate") -> int:
    """A storage rate (``--read-bps 20m``): bytes a second, a size with its unit and an
    optional ``/s`` (``20m/s``, ``20MiB/s``), binary multiples as Docker's
    ``--device-read-bps``; a whole number of bytes a second from the library."""
    if isinstance(text, bool) or not isinstance(text, (str, int)):
        raise ConfigError(f"invalid {what} {shown(text)}: expected a size a second, e.g. 20m")
    if isinstance(text, int):
        # As a size's text is bounded (parse_unit_size): the kernel reads a rate as a u64.
        if not 1 <= text < 2**63:
            raise ConfigError(
                f"invalid {what} {text}: must be at least 1 byte a second and below 8 EiB"
            )
        return text
    size = text.strip()
    if size.lower().endswith("/s"):
        size = size[:-2].rstrip()
    if not _SIZE_RE.match(size):  # a size's own message had called the unit optional here
        raise ConfigError(
            f"invalid {what} {shown(text)}: expected a size a second with its unit b, k, m, g "
            "or t (binary multiples, as Docker's --device-read-bps) and an optional /s, "
            "e.g. 40m or 40m/s"
        )
    try:
        return parse_unit_size(size)
    except ConfigError as exc:
        raise ConfigError(f"invalid {what} {shown(text)}: {exc}") from None


def format_bandwidth(n: int) -> str:
    """``20971520`` → ``20.0MiB/s``; with as many decimals (up to 3) as read back as ``n``
    (``9.54m`` → ``9.54MiB/s``), else the bytes.  A setting's label is its identity in a
    sweep: ``--read-bps 9.54m,9.5m`` had both read ``9.5MiB/s`` and been refused as the
    same setting listed twice, and a card's 9.54 MiB/s was shown as 9.5."""
    for digits in (1, 2, 3):
        text = format_binary(n, digits)
        if parse_size(text) == n:
            return f"{text}/s"
    return f"{n}B/s"


MAX_IOPS = 2**32 - 2
"""blk-throttle holds an IOPS limit as an ``unsigned int`` (``struct throtl_grp``'s
``iops[2]``), and ``UINT_MAX`` there means no limit: the most a rule can ask."""


def parse_iops(text: str | int, what: str = "storage IOPS limit") -> int:
    """A storage request rate (``--read-iops 1500``): requests a second, a whole number with
    an optional ``/s``, as Docker's ``--device-read-iops`` takes it, or `` IOPS``, as a
    label writes it (:func:`format_iops`: ``compare --setting 'read-iops=1500 IOPS'``, copied
    from a table, had been refused)."""
    if isinstance(text, bool) or not isinstance(text, (str, int)):
        raise ConfigError(f"invalid {what} {shown(text)}: expected requests a second, e.g. 1500")
    if isinstance(text, int):
        value = text
    else:
        number = text.strip()
        for unit in ("/s", "iops"):
            if number.lower().endswith(unit):
                number = number[: -len(unit)].rstrip()
                break
        if not re.fullmatch(r"\d+", number, re.ASCII):  # ASCII: int() also takes '١'
            raise ConfigError(
                f"invalid {what} {shown(text)}: expected requests a second, e.g. 1500"
            )
        digits = number.lstrip("0")  # int() refuses 4300+ digits: their count first
        value = int(digits or "0") if len(digits) <= len(str(MAX_IOPS)) else MAX_IOPS + 1
    if not 1 <= value <= MAX_IOPS:
        raise ConfigError(f"invalid {what} {shown(text)}: must be between 1 and {MAX_IOPS}")
    return value


def format_iops(n: int) -> str:
    """``1500`` → ``1500 IOPS``."""
    return f"{n} IOPS"


def parse_duration(
    text: str | float, what: str = "duration", least: tuple[float, str] | None = None
) -> float:
    """``"1.5"``, ``"1.5s"``, ``"250ms"``, ``"500us"``, ``"2m"`` → seconds (> 0, at most
    :data:`MAX_DURATION_S`; at least ``least``'s seconds, said as its text, where given:
    ``--interval 0`` had said "must be greater than 0" and ``0.0001`` "below the minimum of
    1ms", a tester's)."""
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise ConfigError(f"invalid {what} {shown(text)}: expected seconds, e.g. 0.1, 2m")
    if isinstance(text, (int, float)):
        value = text  # compared below as it is: an int beyond a float's range fails float()
        if value != value:  # NaN: no figure at all ("below the minimum" had been said of it)
            raise ConfigError(f"invalid {what} {shown(text)}: expected seconds, e.g. 0.1, 2m")
    else:
        # A negative number is a number: "-5" had been told "expected seconds".
        m = _DURATION_RE.match(text[1:] if text.startswith("-") else text)
        if not m:
            raise ConfigError(
                f"invalid {what} {shown(text)}: expected seconds, e.g. 0.1, 250ms, 2m"
            )
        value = float(m.group(1)) * _DURATION_MULT[m.group(2)]  # float(): inf, not an error
        value = -value if text.startswith("-") else value
    if least is not None and not value >= least[0]:  # NaN too
        raise ConfigError(f"{what} {shown(text)} is below the minimum of {least[1]}")
    if not value > 0:  # NaN too
        raise ConfigError(f"invalid {what} {shown(text)}: must be greater than 0")
    if value > MAX_DURATION_S:
        raise ConfigError(f"invalid {what} {shown(text)}: must be at most {MAX_DURATION_S:g}s")
    return float(value)


_ENERGY_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(mJ|J|kJ|Wh)?\s*$")
_ENERGY_MULT = {None: 1.0, "mJ": 1e-3, "J": 1.0, "kJ": 1e3, "Wh": 3600.0}


def parse_energy(text: str | float, what: str = "energy") -> float:
    """``"12.5"``, ``"12.5J"``, ``"800mJ"``, ``"1.2kJ"``, ``"0.5Wh"`` → joules (> 0, finite)."""
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise ConfigError(f"invalid {what} {shown(text)}: expected joules, e.g. 12.5J, 800mJ")
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        m = _ENERGY_RE.match(text)
        if not m:
            raise ConfigError(f"invalid {what} {shown(text)}: expected joules, e.g. 12.5J, 800mJ")
        value = float(m.group(1)) * _ENERGY_MULT[m.group(2)]
    if not (value > 0 and math.isfinite(value)):
        raise ConfigError(f"invalid {what} {shown(text)}: must be a finite number above 0")
    return value


def parse_rate(text: str | float, what: str = "throughput") -> float:
    """``"2000"``, ``"2000/s"``, ``"2000 items/s"`` → items a second (> 0, finite): a
    throughput floor's value (the iterations' ``items``: a batch of 8 is 8)."""
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise ConfigError(f"invalid {what} {shown(text)}: expected items a second, e.g. 2000")
    t = text if isinstance(text, (int, float)) else text.strip()
    if isinstance(t, str):
        t = t.removesuffix("/s").removesuffix("items").strip()
    try:
        value = float(t)
    except ValueError:
        raise ConfigError(
            f"invalid {what} {shown(text)}: expected items a second, e.g. 2000"
        ) from None
    if not (value > 0 and math.isfinite(value)):
        raise ConfigError(f"invalid {what} {shown(text)}: must be a finite number above 0")
    return value


def format_energy(j: float | None) -> str:
    """``0.0123`` → ``12.3mJ``; ``75.2`` → ``75.20J``; ``12345`` → ``12.35kJ``."""
    if j is None:
        return "n/a"
    if abs(j) < 1:
        return f"{j * 1000:.1f}mJ"
    if abs(j) >= 1000:
        return f"{j / 1000:.2f}kJ"
    return f"{j:.2f}J"


def parse_fraction(text: str, what: str, most: float = 10.0) -> float:
    """``"10%"`` or ``"0.1"`` → 0.1: a finite share from 0 to ``most``."""
    t = text.strip()
    try:
        value = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0 or value > most:
        raise ConfigError(
            f"invalid {what} {text!r}: expected a share such as 10% or 0.1 (0 to {most:g})"
        )
    return value


def format_share(fraction: float) -> str:
    """A share in percent to a tenth (``0.054`` → ``5.4%``): a run's memory stall, said by its
    warning and its limit's verdict alike (they had printed "5%" and "5.4%" for one figure);
    a tenth, so a stall just past the 5 % bound does not read as the bound itself."""
    return f"{100 * fraction:.1f}%"


def format_factor(f: float) -> str:
    """A ratio to two decimals (``0.53×``), or to two significant digits under 0.1, where
    two decimals keep one or none (``0.00059×``: a bench 1700 times slower than the first
    had read ``0.00×``; a throughput ranking's ``0.03× [0.02, 0.04]`` beside a sentence of
    "35.51× the throughput": ``0.028× [0.024, 0.033]``)."""
    if f == 0 or abs(f) >= 0.1 or not math.isfinite(f):
        return f"{f:.2f}×"
    digits = 1 - math.floor(math.log10(abs(f)))
    if abs(round(f, digits)) >= 0.1:  # 0.0996 rounds up: "0.10×", not "0.100×"
        return f"{f:.2f}×"
    return f"{f:.{digits}f}×"


def format_binary(n: float | None, digits: int = 1) -> str:
    """Bytes in binary units (``117.9MiB``), as ``docker stats`` prints memory."""
    return _format(n, 1024, ("B", "KiB", "MiB", "GiB", "TiB"), digits)


def _format(n: float | None, base: int, units: tuple[str, ...], digits: int) -> str:
    if n is None:
        return "n/a"
    for unit in units:
        # Compare the *rounded* value, so 1048575 B is 1.0MiB rather than 1024.0KiB.
        if unit == units[-1] or abs(round(n, digits)) < base:
            return f"{n:.0f}{unit}" if unit == "B" else f"{n:.{digits}f}{unit}"
        n /= base
    raise AssertionError("unreachable")


def format_decimal(n: float | None, digits: int = 1) -> str:
    """Bytes in decimal units (``742B``, ``12.0MB``), as ``docker stats`` prints I/O."""
    return _format(n, 1000, ("B", "kB", "MB", "GB", "TB"), digits)


def us_to_s(us: int | None) -> float | None:
    """A kernel counter's microseconds (``cpu.stat``, PSI's ``total=``) in seconds, the
    unit of every time a result holds; ``None`` where the kernel gave none."""
    return None if us is None else us / 1e6


def format_seconds(s: float | None, digits: int = 1, like: float | None = None) -> str:
    """``0.0123`` → ``12.3ms``; ``75.2`` → ``75.20s``; under a millisecond in microseconds,
    ``0.0000076`` → ``7.6µs`` (a layer's 7.6 µs and 29 µs had both printed ``0.0ms``, and a
    p95 of 0.2 ms beside its +88.8% change); under a microsecond in whole nanoseconds,
    ``1.39e-7`` → ``139ns`` (``compare`` had shown p95s of 0.139, 0.101 and 0.101 µs all as
    ``0.1µs ± 0.0µs`` beside a ±39.7 % interval; the protocol's clock counts nanoseconds).
    ``digits``: decimals (one more in seconds).  ``like``: the value ``s`` is shown beside (a
    mean, for its deviation ``s``): the smaller unit only where both are under it
    (``20.1ms ± 0.7ms``, ``235.0µs ± 4.1µs``, ``114ns ± 22ns``), and ``s`` in its own unit
    where the mean's would round it to 0 (``10.19µs ± 4ns``: a tester's five runs' p50s
    10.19–10.20 µs had read ``10.19µs ± 0.00µs``, a spread of none).  Zero stays ``0.0ms``."""
    if s is None:
        return "n/a"
    if like is None:
        return _seconds(s, digits, abs(s))
    text = _seconds(s, digits, max(abs(s), abs(like)))
    return _seconds(s, digits, abs(s)) if s != 0 and _rounds_to_zero(text) else text


def _seconds(s: float, digits: int, big: float) -> str:
    """:func:`format_seconds` in the unit that ``big`` (``s`` or the larger of it and its
    mean) picks."""
    if s != 0 and round(big * 1e6, digits) < 1:
        return f"{s * 1e9:.0f}ns"
    if s != 0 and round(big * 1000, digits) < 1:
        return f"{s * 1e6:.{digits}f}µs"
    if s < 1:
        return f"{s * 1000:.{digits}f}ms"
    return f"{s:.{digits + 1}f}s"


def _rounds_to_zero(text: str) -> bool:
    """Whether a formatted figure (``0.00µs``, ``-0.0ms``) reads as zero."""
    return not any(c in "123456789" for c in text)


def format_rate(v: float) -> str:
    """A throughput (iterations or items a second): whole from 1000 up (``241745``), to a
    tenth below (``517.1``).  A decimal place past 1000 is a sixth significant digit or
    more, which no run's rate holds: a tester's ``241745.1 items/s ± 71818.1`` had a 30 %
    deviation."""
    return f"{v:.0f}" if abs(round(v, 1)) >= 1000 else f"{v:.1f}"


def parse_threshold(text: str) -> float:
    """``"5%"`` or ``"5"`` → 0.05 (always percent of the baseline).  A bare number under 1
    is refused: ``compare --json`` writes the threshold as a fraction (``0.05`` for 5 %),
    and that value given back read as 0.05 %, a gate 100 times stricter than meant."""
    stripped = text.strip()
    raw = stripped.removesuffix("%").strip()
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"--threshold {text!r}: expected a percentage such as 5%") from None
    if not math.isfinite(value) or value < 0 or value >= 1000:
        raise ConfigError(f"--threshold {text!r}: must be from 0% up to, not including, 1000%")
    if 0 < value < 1 and not stripped.endswith("%"):
        raise ConfigError(
            f"--threshold {text!r}: a percentage, not a fraction: write {value * 100:g}% "
            f"for a change of {value:g} of the baseline, or {text.strip()}% for "
            f"{value:g} percent"
        )
    return value / 100


def utc_timestamp() -> str:
    """Now, in UTC, as ISO-8601 with milliseconds (``2026-12-01T00:35:38.570+00:00``): every
    time edgeprof writes (a run's ``started_at``, ``sweep.json``'s ``resumed[].at``, a
    calibration's ``created_at``) has this one form; ``resumed[].at`` and ``created_at`` had
    been to the second beside ``started_at``'s milliseconds."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")
