"""Reading a dataclass back from JSON that anyone may have written: the boundary of result files.

``RunResult.from_dict`` builds frozen dataclasses from a parsed ``result.json``, which a user
may have edited, truncated or produced with another tool.  Python does not check a
dataclass's annotations, so a ``"wall_s": "fast"`` would be carried into the reports and fail
there, far from its cause, and a ``"command": "python"`` would silently become the
characters ``p, y, t, …``.  :func:`from_json` checks the JSON against the annotations of the
class first (each known key: lists where tuples are, objects where dataclasses are, numbers,
strings, an enum's or a ``Literal``'s values), then builds it, and turns whatever still goes
wrong into one :class:`~edgeprof.errors.ConfigError` line naming the key.  Unknown keys are
left alone: a file written by a newer edgeprof still reads.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from ..cpu_units import MAX_CPU
from ..errors import ConfigError, one_line
from ..units import MAX_DURATION_S, shown

T = TypeVar("T")

NON_NEGATIVE = frozenset(
    {
        *("wall_s", "user_s", "system_s", "total_s", "wait_s", "held_s"),
        *("count", "pids_peak", "oom_kills", "pids_refused", "processes_left", "raised"),
        "processes_at_peak", "busy_tasks_peak",
    }
)
"""In the fit and predictions documents (typed dicts, where a line's prediction and its
interval may be below 0), the keys no measurement makes negative, besides every
``*_bytes``; a result's are every number but :data:`SIGNED` (:func:`non_negative`)."""

SIGNED = frozenset({"temperature_peak_c", "exit_code"})
"""The numbers of a result that may be below 0: a temperature in °C (NVML's is unsigned, but
a GPU can be colder than 0 °C), and an exit status (Docker's wait answers -1 where the daemon
has none: ``engine.wait``; a result edgeprof wrote must stay one it reads).  Every other
number of a result is a time, count, size, share, rate or version, none of which a
measurement makes negative."""


def non_negative(cls: type, field: str) -> bool:
    """Whether ``cls``'s number ``field`` is refused below 0, by the reader and the schema
    alike.  In a result (dataclasses) every number but :data:`SIGNED`: 7 names and the sizes
    had been bounded, and a hand-edited ``"throttled_s": -3``, ``"nr_throttled": -7`` was
    read and shown as ``-3000.0ms ×-7``, its runs.csv saying other tasks held a 0.535 s run
    off its CPUs for 3.17 s.  In a typed dict :data:`NON_NEGATIVE`'s and ``*_bytes``."""
    if dataclasses.is_dataclass(cls):
        return field not in SIGNED
    return field.endswith("_bytes") or field in NON_NEGATIVE


NO_CONTROL = "^[^\\u0000-\\u001f\\u007f-\\u009f]*(?![\\s\\S])"
"""No string of a file has a C0 or C1 control character: every one is shown somewhere (a
label, a phase's row, a warning line, a Markdown cell), and a newline breaks a table's row and
a CSV field while an escape reaches the terminal (``ESC]0;…BEL`` retitles it, ``ESC[41m``
colours it).  No edgeprof writes one (:func:`edgeprof.names.has_control` at every name it
takes).  A JSON Schema ``pattern``, and the reader's own (:func:`control_free`).  The
exception is :data:`ARGV`.  It ends in a lookahead for no character, not ``$``: Python's
``re.search`` (jsonschema's) lets ``$`` match before a final newline, so a string that was
one newline met the schema (a fuzz test's example)."""

ARGV = frozenset({"command", "env", "workdir", "thread_vars"})
"""Keys whose strings are the workload's own argv, read back as they ran: an argument may hold
a newline (``python3 -c "import x<newline>x.run()"``) and a program's file name anything but
``/`` and NUL; so may an ``--env`` value (``KEY=VALUE``: only NUL is refused), an
inherited thread count (``thread_vars``: the environment's text, as the workload got it) and a
directory's path (``workdir``).  They are
displayed only through :func:`edgeprof.names.printable` (a run's label is its program's
escaped file name), so they take any text."""


class AnyText:
    """``Annotated[str, AnyText]``: a key of a typed dict whose string takes any text in the
    schema (:mod:`.schema`), as :data:`ARGV`'s: a path the user gave (the calibration file
    of :mod:`.predictionsdoc`), which may hold any character."""


READ_WITHOUT = {
    "Mark": frozenset({"cpu_s", "memory_bytes"}),
    "GpuStats": frozenset({"devices"}),
}
"""Fields without a default that the reader still takes absent (``Mark.from_dict`` reads them
with ``get``: marks written before they were recorded; ``GpuStats.from_dict`` a run's GPUs
as ``()``), by class name (this module may not import the model it checks).  Every other
field without a default is a required key."""


def control_free(text: str) -> bool:
    return re.fullmatch(NO_CONTROL, text) is not None  # Python reads its \\u escapes


MAX_SECONDS = MAX_DURATION_S * (MAX_CPU + 1)
"""The most seconds a figure of a run can hold: a CPU time over the longest wait edgeprof
makes, on every CPU there can be.  A hand-edited ``"wall_s": 1e308`` had been read, printed
by ``compare`` as a 309-digit number of seconds, and overflowed to ``inf`` in milliseconds."""


MAX_PERCENT = (MAX_CPU + 1) * 100
"""The most a percentage of a run can be: every CPU there can be, busy.  A hand-edited
``"avg_pct": 1e308`` had printed a 310-digit ``AVG CPU %`` column."""


def seconds(field: str) -> bool:
    """Whether a result's ``field`` is a number of seconds, refused above :data:`MAX_SECONDS`
    (``items_per_s`` and the like are rates, not seconds)."""
    return field.endswith("_s") and not field.endswith("per_s")


def from_json(cls: type[T], data: object, build: Callable[[Mapping[str, Any]], T]) -> T:
    """``build(data)``, once ``data`` matches the annotations of the dataclass ``cls``."""
    check(data, cls, "")
    assert isinstance(data, Mapping)  # check() refuses anything else for a dataclass
    try:
        return build(data)
    except KeyError as exc:
        raise ConfigError(f"missing key {one_line(exc)}") from None
    except (TypeError, ValueError, AttributeError, IndexError, OverflowError) as exc:
        # What the annotations cannot say (a required key's absence inside a
        # constructor, an int() of NaN): still the file's fault, said in one line.
        raise ConfigError(f"malformed: {one_line(exc)}") from None


def cpu_list(value: Any, where: str) -> Any:
    """A JSON CPU list (``[0, 1]``) as CPU numbers, refused unless each is a whole number
    from 0 to :data:`~edgeprof.cpu_units.MAX_CPU` (``int()`` would take ``1.5`` or ``true``);
    anything else (``None``, the ``"0-1"`` spelling) is left to :class:`Limits`."""
    if not isinstance(value, list):
        return value
    for c in value:
        if isinstance(c, bool) or not isinstance(c, int) or not 0 <= c <= MAX_CPU:
            raise ConfigError(f"{where}: expected CPU numbers from 0 to {MAX_CPU}, got {shown(c)}")
    return tuple(value)


def check(value: object, hint: Any, where: str, argv: bool = False) -> None:
    """Raise a :class:`ConfigError` naming ``where`` (a dotted key) unless the JSON
    ``value`` can stand for a ``hint``-typed field; a string with a control character only
    under an :data:`ARGV` key (``argv``)."""
    if hint is Any or hint is object:
        return
    origin = typing.get_origin(hint)
    if origin is typing.Union or origin is types.UnionType:
        args = typing.get_args(hint)
        if value is None and type(None) in args:
            return
        others = [a for a in args if a is not type(None)]
        for i, arg in enumerate(others):
            try:
                check(value, arg, where, argv)
                return
            except ConfigError:
                if i == len(others) - 1:
                    raise
        return
    if origin is tuple or origin is list:
        if not isinstance(value, list | tuple):
            raise _bad(where, "a list", value)
        args = typing.get_args(hint)
        item = args[0] if args else Any
        if len(args) > 1 and args[1] is not Ellipsis:
            if len(value) != len(args):
                raise _bad(where, f"a list of {len(args)}", value)
            for i, (v, a) in enumerate(zip(value, args, strict=True)):
                check(v, a, f"{where}[{i}]", argv)
            return
        for i, v in enumerate(value):
            check(v, item, f"{where}[{i}]", argv)
        return
    if origin is not None and isinstance(origin, type) and issubclass(origin, Mapping):
        if not isinstance(value, Mapping):
            raise _bad(where, "an object", value)
        args = typing.get_args(hint)
        for k, v in value.items():
            check(v, args[1] if len(args) == 2 else Any, f"{where}.{k}", argv)
        return
    if origin is typing.Literal:
        words = typing.get_args(hint)
        if isinstance(value, bool | dict | list) or value not in words:
            raise _bad(where, "one of " + ", ".join(map(str, words)), value)
        return
    if hint is float or hint is int:
        if isinstance(value, bool) or not isinstance(value, int if hint is int else int | float):
            raise _bad(where, "a whole number" if hint is int else "a number", value)
        if isinstance(value, int) and not -(2**64) < value < 2**64:
            # The kernel's counters are 64-bit; a larger one overflows a float in the reports.
            raise _bad(where, "a number within 64 bits", value)
    elif hint is bool or hint is str:
        if not isinstance(value, hint):
            raise _bad(where, "true or false" if hint is bool else "a string", value)
        if isinstance(value, str) and not argv and not control_free(value):
            raise _bad(where, "no control characters", value)
    elif hint is type(None):
        if value is not None:
            raise _bad(where, "null", value)
    elif isinstance(hint, type) and issubclass(hint, enum.Enum):
        values = [e.value for e in hint]
        if isinstance(value, bool | dict | list) or value not in values:
            raise _bad(where, "one of " + ", ".join(map(str, values)), value)
    elif isinstance(hint, type) and dataclasses.is_dataclass(hint):
        if not isinstance(value, Mapping):
            raise _bad(where, "an object", value)
        optional = READ_WITHOUT.get(hint.__name__, frozenset())
        missing = [
            f.name
            for f in dataclasses.fields(hint)
            if f.default is dataclasses.MISSING
            and f.default_factory is dataclasses.MISSING
            and f.name not in value
            and f.name not in optional
        ]
        if missing:
            # Said here, by key: the constructor's TypeError had reached the user as
            # "malformed: PhaseStats.__init__() missing 8 required positional arguments…".
            keys = ", ".join(map(repr, missing))
            s = "s" if len(missing) > 1 else ""
            raise ConfigError(f"{where + ': ' if where else ''}missing key{s} {keys}")
        hints = _hints(hint)
        for f in dataclasses.fields(hint):
            if f.name in value:
                at = f"{where}.{f.name}" if where else f.name
                check(value[f.name], hints[f.name], at, f.name in ARGV)
                v = value[f.name]
                # On each number of a list too, as the schema bounds its items.
                items = {f"{at}[{i}]": n for i, n in enumerate(v)} if isinstance(v, list) else {}
                for where_n, n in items.items() or [(at, v)]:
                    _bounded(hint, f.name, n, where_n)


def _bounded(cls: type, field: str, v: object, at: str) -> None:
    """Raise unless the number ``v`` of ``cls``'s ``field`` (read at ``at``) is within the
    bounds of its kind: :func:`non_negative`, :data:`MAX_SECONDS`, :data:`MAX_PERCENT`."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        return
    if non_negative(cls, field) and v < 0:
        raise _bad(at, "a number of 0 or more", v)
    if seconds(field) and v > MAX_SECONDS:
        raise _bad(at, f"seconds up to {MAX_SECONDS:g}", v)
    if field.endswith("_pct") and v > MAX_PERCENT:
        raise _bad(at, f"a percentage up to {MAX_PERCENT:g}", v)


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _bad(where: str, expected: str, value: object) -> ConfigError:
    got = f"a {type(value).__name__}" if isinstance(value, list | dict) else shown(value)
    return ConfigError(f"{where or 'the file'}: expected {expected}, got {got}")
