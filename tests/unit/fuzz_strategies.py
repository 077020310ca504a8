"""What the fuzz tests (``test_fuzz_*.py``) share: their settings, the contract every parser
keeps, and input strategies that mix valid-looking text with hostile text.

The contract: a parser either returns a value, or raises :class:`ConfigError` whose message
is one non-empty line (the CLI prints it after ``edgeprof: error:`` and exits 2).  Any other
exception escapes :func:`accepted` and fails the test, with Hypothesis's smallest example.

Every test runs derandomized (the same inputs on every machine and every run: a newcomer's
``make test`` cannot flip) with no example database, its ``max_examples`` sized so that the
whole fuzz suite stays within about 20 s on a 2-core machine.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import pkgutil
from collections.abc import Callable
from typing import Any, TypeVar

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context

import edgeprof
from edgeprof.errors import ConfigError

T = TypeVar("T")


def _load_all_of_edgeprof() -> None:
    """Hypothesis draws some values from the literals of the local modules loaded when a
    test runs (``hypothesis.internal.constants_ast``), and edgeprof loads its modules on
    first use: without this, the inputs tried would depend on which tests ran before."""
    for info in pkgutil.walk_packages(edgeprof.__path__, "edgeprof."):
        if not info.name.endswith("__main__"):
            with contextlib.suppress(ImportError):  # an optional dependency's module
                importlib.import_module(info.name)


_load_all_of_edgeprof()

_BASE = settings(
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,  # a tmp_path shared by the examples is fine
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)


def fuzz(max_examples: int) -> settings:
    """The settings of one fuzz test: ``max_examples`` inputs, the same ones on every run."""
    return settings(_BASE, max_examples=max_examples)


class Refused:
    """What :func:`accepted` returns for an input the parser refused as it must."""

    def __init__(self, message: str) -> None:
        self.message = message


def accepted(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T | Refused:
    """``fn(*args, **kwargs)``; a :class:`ConfigError` must be one non-empty line."""
    name = getattr(fn, "__name__", "parser")
    try:
        got = fn(*args, **kwargs)
    except ConfigError as exc:
        message = str(exc)
        assert message.strip(), f"empty message from {type(exc).__name__}"
        assert "\n" not in message and "\r" not in message, f"not one line: {message!r}"
        _count(f"{name}: refused")
        return Refused(message)
    _count(f"{name}: accepted")
    return got


def _count(what: str) -> None:
    """``pytest --hypothesis-show-statistics`` says how many inputs each parser took."""
    if currently_in_test_context():
        event(what)


LONG = (
    "1" + "0" * 400, "9" * 5000, "0" * 5000 + "1", "1." + "0" * 5000 + "1", "0-" + "9" * 5000,
    "a" * 10_000, "a,b" * 2000,
)  # fmt: skip
"""Hostile text too long to show: drawn by index, so a strategy's repr stays short."""

HOSTILE = (
    # empty, blank, control characters
    "", " ", "\t", "\n", "\r\n", "\0", "1\0", "\0m", "\x1b[31m", "\x7f",
    # not numbers that float() or int() take
    "nan", "NaN", "-nan", "inf", "-inf", "Infinity", "1e309", "-1e309", "1e-400", "1e400",
    "0x10", "0b1", "0o7", "1_000", "1 000", "+1", "-1", "-0", "0", "00", "0.0", ".", "..",
    "1.", ".5", "-", "1-", "1--2", ",", ",,", "0-", "-0", "1,", ",1", "%", "1%", "-5%", "nan%",
    # digits that are not ASCII
    "١", "١٢", "٣٫٥", "１２", "²", "½", "Ⅻ", "𝟙𝟚", "٠-١",
    # beyond 32 and 64 bits, beyond Python's int() of 4300 digits, beyond a float
    "4294967296", "9223372036854775808", "18446744073709551616", "0-999999999999",
    # odd whitespace, lone surrogates, quoting and shell syntax (very long: LONG)
    "\u00a01\u00a0", "\u20281", "1\u200b", "\udc80", "\ud800", "'", '"', "\\", "$(reboot)",
    "`id`", ";",
)  # fmt: skip


def hostile() -> st.SearchStrategy[str]:
    """Text no parser should take at face value."""
    return st.one_of(
        st.sampled_from(HOSTILE),
        st.sampled_from(range(len(LONG))).map(LONG.__getitem__),
        st.text(max_size=20),
        st.integers(min_value=-(10**30), max_value=10**30).map(str),
        st.floats().map(repr),
        st.from_regex(r"\A\s?[+-]?\d{0,25}(\.\d{0,25})?([eE][+-]?\d{1,4})?\s?\Z"),
    )


def mixed(valid: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """``valid`` inputs, hostile ones, and each glued to the other."""
    bad = hostile()
    return st.one_of(
        valid,
        valid,
        bad,
        st.tuples(valid, bad).map("".join),
        st.tuples(bad, valid).map("".join),
    )


def mostly(valid: st.SearchStrategy[T], one_in: int = 4) -> st.SearchStrategy[T | str]:
    """``valid``, one time in ``one_in`` :func:`mixed` instead: a bad value among good ones
    (where a file has many values, each must be rarely bad for some files to be good)."""
    return st.one_of(*[valid] * (one_in - 1), mixed(valid))  # type: ignore[arg-type]


def json_values(max_leaves: int = 6) -> st.SearchStrategy[Any]:
    """Any JSON value, with the numbers and strings a parser trips on."""
    leaves = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.sampled_from([-1, 0, 2**31, 2**63, -(2**63), 10**400]),
        st.floats(),  # NaN and the infinities included: json.dumps writes them
        st.text(max_size=10),
        st.sampled_from(HOSTILE),
    )
    return st.recursive(
        leaves,
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
        ),
        max_leaves=max_leaves,
    )


def key_paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key and index of a JSON document, as paths from its root."""
    paths: list[tuple[Any, ...]] = []
    items = (
        doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    )
    for k, v in items:
        paths.append((*prefix, k))
        paths.extend(key_paths(v, (*prefix, k)))
    return paths


def same_type(value: Any) -> st.SearchStrategy[Any]:
    """Another value of ``value``'s JSON type, odd ones included (NaN, negative, huge, empty)."""
    if isinstance(value, bool) or value is None:
        return json_values()
    if isinstance(value, int):
        return st.integers() | st.sampled_from([-1, 0, 2**63, 10**400])
    if isinstance(value, float):
        return st.floats() | st.sampled_from([0.0, -1.0, float("nan"), float("inf"), 1e308])
    if isinstance(value, str):
        return st.text(max_size=12) | st.sampled_from(HOSTILE)
    if isinstance(value, list):
        return st.lists(same_type(value[0]), max_size=3) if value else json_values()
    return json_values()


@st.composite
def mutated(draw: st.DrawFn, doc: Any, max_edits: int = 3) -> Any:
    """``doc`` (JSON) with up to ``max_edits`` keys given another value of their type (a
    file that reads but holds odd figures), any value, deleted, or joined by an unknown key:
    a valid file edited by hand, or by another tool."""
    doc = json.loads(json.dumps(doc))
    for _ in range(draw(st.integers(min_value=1, max_value=max_edits))):
        paths = key_paths(doc)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = doc
        for k in path[:-1]:
            parent = parent[k]
        action = draw(st.sampled_from(["same type", "same type", "replace", "delete", "add"]))
        if action == "same type":
            parent[path[-1]] = draw(same_type(parent[path[-1]]))
        elif action == "replace":
            parent[path[-1]] = draw(json_values())
        elif action == "delete":
            del parent[path[-1]]
        elif isinstance(parent, dict):  # a key of any text: messages quote keys too
            parent[draw(st.text(max_size=8) | st.sampled_from(HOSTILE))] = draw(json_values())
    return doc
