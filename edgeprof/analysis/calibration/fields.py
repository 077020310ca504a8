"""A calibration file's mappings read key by key (:class:`Fields`), each value checked for
the type its key needs as it is read: a wrong or missing one is one line naming the file and
the key's path."""

from __future__ import annotations

import datetime
import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ...errors import ConfigError
from ...names import has_control
from ...units import shown
from .measurements import MAX_VALUE


class _Required:
    """The default of a key that must be there."""


_REQUIRED = _Required()


class Fields:
    """One mapping of a calibration file, read key by key with the type each key needs.

    YAML gives whatever the text says: a number where a mapping is, a list where a number
    is.  Used as they came, these surfaced as Python's own words ("'int' object is not
    iterable"); here each is checked as it is read, and a wrong or missing one is a
    :class:`ConfigError` naming the file, the key's path (``fits[0].points[2].profiler``)
    and what it should hold."""

    def __init__(self, path: Path, data: Mapping[Any, Any], where: str = "") -> None:
        self.path = path
        self.data = data
        self.where = where

    def key(self, name: str) -> str:
        return f"{self.where}.{name}" if self.where else name

    def bad(self, name: str, expected: str, value: object) -> ConfigError:
        # As YAML spells them: the file says null and true, not Python's None and True.
        got = "null" if value is None else str(value).lower() if isinstance(value, bool) else None
        return ConfigError(
            f"{self.path}: malformed calibration: {self.key(name)}: expected {expected}, "
            f"got {got or shown(value)}"
        )

    def get(self, name: str, expected: str, default: object = _REQUIRED) -> Any:
        """The raw value, or ``default`` when the key is absent (an error if required)."""
        if name in self.data:
            return self.data[name]
        if isinstance(default, _Required):
            raise ConfigError(
                f"{self.path}: malformed calibration: {self.key(name)} is missing "
                f"(expected {expected})"
            )
        return default

    def text(
        self, name: str, default: str | _Required = _REQUIRED, expected: str = "a string"
    ) -> str:
        """A string; a number is taken as its text (YAML reads an unquoted ``2`` as one: a
        model labelled 2), a date as its ISO text (an unquoted ``created_at``)."""
        v = self.get(name, expected, default)
        t = _as_text(v)
        if t is None:
            raise self.bad(name, expected, v)
        return self._plain(name, t)

    def _plain(self, name: str, text: str) -> str:
        """``text``, refused with a control character: a device name's escape sequence had
        reached every table and warning that shows it, and the predictions file."""
        if has_control(text):
            raise self.bad(name, "text without control characters", text)
        return text

    def optional_text(self, name: str) -> str | None:
        """:meth:`text`, or ``None`` when the key is absent or ``null``."""
        return None if self.get(name, "", None) is None else self.text(name)

    def number(
        self,
        name: str,
        expected: str,
        ok: Callable[[float], bool],
        default: float | _Required = _REQUIRED,
    ) -> float:
        v = self.get(name, expected, default)
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise self.bad(name, expected, v)
        try:
            f = float(v)
        except OverflowError:  # an integer beyond any float
            raise self.bad(name, expected, v) from None
        if not math.isfinite(f) or not ok(f):
            raise self.bad(name, expected, v)
        return f

    def value(self, name: str) -> float:
        """A point's value: a number within the device CSV's bounds (0 to :data:`MAX_VALUE`),
        so the refit's arithmetic stays finite; a hand-edited ``device: -5`` had loaded and
        predicted -8082 ms, where the CSV refuses a negative time."""
        return self.number(
            name, f"a number from 0 up to {MAX_VALUE:g}", lambda v: 0 <= v <= MAX_VALUE
        )

    def count(self, name: str) -> int:
        v = self.get(name, "a whole number", 0)
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < 2**63:
            raise self.bad(name, "a whole number ≥ 0", v)
        return v

    def _list(self, name: str, expected: str) -> list[Any]:
        """A list; absent or ``null``: empty."""
        v = self.get(name, expected, None)
        if v is None:
            return []
        if not isinstance(v, list):
            raise self.bad(name, expected, v)
        return v

    def texts(self, name: str, expected: str) -> list[str]:
        """A list of strings (a string given alone would be read as its characters)."""
        out = []
        for i, v in enumerate(self._list(name, expected)):
            t = _as_text(v)
            if t is None:
                raise self.bad(f"{name}[{i}]", "a string", v)
            out.append(self._plain(f"{name}[{i}]", t))
        return out

    def text_map(self, name: str, expected: str) -> list[tuple[str, str]]:
        """A mapping of strings to strings, as pairs; absent or ``null``: empty."""
        v = self.get(name, expected, None)
        if v is None:
            return []
        if not isinstance(v, Mapping):
            raise self.bad(name, expected, v)
        out = []
        for k, item in v.items():
            label, family = _as_text(k), _as_text(item)
            if label is None:
                raise self.bad(name, expected, k)
            if family is None:
                raise self.bad(f"{name}.{label}", "a string", item)
            out.append((self._plain(name, label), self._plain(f"{name}.{label}", family)))
        return out

    def record(self, name: str, expected: str) -> Fields | None:
        """A nested mapping; absent or ``null``: ``None``."""
        v = self.get(name, expected, None)
        if v is None:
            return None
        if not isinstance(v, Mapping):
            raise self.bad(name, expected, v)
        return Fields(self.path, v, self.key(name))

    def records(self, name: str, expected: str) -> list[Fields]:
        """A required list of mappings."""
        v = self.get(name, expected)
        if not isinstance(v, list):
            raise self.bad(name, expected, v)
        out = []
        for i, item in enumerate(v):
            if not isinstance(item, Mapping):
                raise self.bad(f"{name}[{i}]", "a mapping (key: value lines)", item)
            out.append(Fields(self.path, item, f"{self.key(name)}[{i}]"))
        return out


def _as_text(v: object) -> str | None:
    """A YAML scalar as text (see :meth:`Fields.text`); ``None``: not one (a list, a
    mapping, ``null``, true or false)."""
    if isinstance(v, str):
        return v
    if isinstance(v, datetime.date):
        return v.isoformat()
    if isinstance(v, int | float) and not isinstance(v, bool):
        return str(v)
    return None
