"""The JSON Schemas of ``result.json``, ``fit.json``, ``--predictions FILE``, ``sweep.json``
and ``compare --json``, made from the models that write them: each key's type from the
dataclass field's (or typed dict key's) annotation, its description from the field's
docstring, so a published schema
(``edgeprof/result.schema.json``, ``edgeprof/fit.schema.json``,
``edgeprof/predictions.schema.json``, ``edgeprof/sweep.schema.json``,
``edgeprof/compare.schema.json``, package data) cannot describe another model than the
one that writes the files.  Unit tests hold the files to these functions' output, and the
test suite validates every result, fit, predictions and sweep document it writes against
them, and ``compare --json``'s in the tests of it.

    python -m edgeprof.model.schema > edgeprof/result.schema.json
    python -m edgeprof.model.schema fit > edgeprof/fit.schema.json
    python -m edgeprof.model.schema predictions > edgeprof/predictions.schema.json
    python -m edgeprof.model.schema sweep > edgeprof/sweep.schema.json
    python -m edgeprof.model.schema compare > edgeprof/compare.schema.json

Keys added after schema version 1 was first published have defaults in the model and are
not required (older files lack them).  The published schemas are open: a key they do not
name is allowed, because keys are only ever added within a schema version and a file from a
newer edgeprof of the same version must validate against an older release's schema (a
dashboard that pinned one rejected the next release's files while every object was closed).
``exact=True`` closes every object (``additionalProperties: false``): the test suite holds
edgeprof's own files to it, so no key is written that the model does not document.  The
``$id`` carries the version (``…/result/1/schema.json``), so a reader picks the schema by
the file's ``schema_version`` (``schema`` for predictions).
Whole-number fields are bounded to 64 bits, as the reader bounds them; the reader also
refuses a whole number beyond 64 bits where any number is allowed, which a JSON Schema
cannot single out (its ``integer`` is any number without a fraction).
"""

from __future__ import annotations

import ast
import collections.abc
import dataclasses
import enum
import inspect
import json
import re
import sys
import types
import typing
from typing import Any

from ..cpu_units import MAX_CPU, MAX_CPUS, MAX_PERIOD_US, MIN_CPUS, MIN_QUOTA_US
from ..units import MAX_IOPS, MAX_PIDS, MAX_SIZE
from .comparedoc import CompareDoc
from .fitdoc import FIT_SCHEMA_VERSION, Fit, Fits
from .jsoncheck import ARGV, MAX_PERCENT, MAX_SECONDS, NO_CONTROL, AnyText, non_negative, seconds
from .predictionsdoc import PREDICTIONS_SCHEMA, PredictionsDoc
from .results import SCHEMA_VERSION, RunResult
from .spec import STORAGE
from .sweepdoc import SWEEP_SCHEMA, SweepDoc

__all__ = ["compare_schema", "fit_schema", "predictions_schema", "result_schema", "sweep_schema"]

SCHEMA_ID = f"https://edgeprof.invalid/result/{SCHEMA_VERSION}/schema.json"
"""No host serves it yet: the file ships in the package and in the documentation.  The
version in the path is the files' ``schema_version``: one schema per version, open to the
keys a later release of that version adds."""
FIT_SCHEMA_ID = f"https://edgeprof.invalid/fit/{FIT_SCHEMA_VERSION}/schema.json"
PREDICTIONS_SCHEMA_ID = (
    f"https://edgeprof.invalid/predictions/{PREDICTIONS_SCHEMA.rpartition('/')[2]}/schema.json"
)
SWEEP_SCHEMA_ID = f"https://edgeprof.invalid/sweep/{SWEEP_SCHEMA.rpartition('/')[2]}/schema.json"
COMPARE_SCHEMA_ID = "https://edgeprof.invalid/compare/1/schema.json"
"""``compare --json`` has no version key: keys are only ever added to it, as to the others."""
OPEN = (
    "Keys not named here are allowed: keys are only ever added within a schema version, and "
    "a file from a newer edgeprof of this version holds keys this schema does not know."
)
"""Said at the top of each published (open) schema, as ``$comment``."""

_SIMPLE: dict[object, str] = {bool: "boolean", int: "integer", float: "number", str: "string"}

LIMITS = {
    "type": "object",
    "description": "The limits as asked. A --cpus quota of under 1 ms per CFS period is "
    "refused as well, which the schema does not express.",
    "properties": {
        "cpus": {
            "type": ["number", "null"],
            "minimum": MIN_CPUS,
            "maximum": MAX_CPUS,
            "description": "CPU bandwidth in CPUs.",
        },
        "cpuset": {
            "type": ["array", "null"],
            # The reader refuses an empty list ("invalid CPU list: empty"): null is no pinning.
            "minItems": 1,
            "items": {"type": "integer", "minimum": 0, "maximum": MAX_CPU},
            "description": "The CPUs the run was pinned to.",
        },
        "memory_bytes": {
            "type": ["integer", "null"],
            "minimum": 6 * 2**20,
            "maximum": MAX_SIZE,
            "description": "The memory limit (at least 6 MiB).",
        },
        "pids": {
            "type": ["integer", "null"],
            "minimum": 1,
            "maximum": MAX_PIDS,
            "description": "The most processes and threads at once.",
        },
        "cpu_period_us": {
            "type": ["integer", "null"],
            "minimum": MIN_QUOTA_US,
            "maximum": MAX_PERIOD_US,
            "description": "The CFS period as asked (null: edgeprof's choice).",
        },
        **{
            s.key: {
                "type": ["integer", "null"],
                "minimum": 1,
                "maximum": MAX_IOPS if s.iops else MAX_SIZE,
                "description": f"The {s.what} on every disk, "
                + ("requests a second." if s.iops else "bytes a second."),
            }
            for s in STORAGE
        },
    },
    "required": ["cpus", "cpuset", "memory_bytes"],
    "additionalProperties": False,
}


def _result_object(defs: dict[str, Any]) -> dict[str, Any]:
    """:meth:`RunResult.to_dict`'s object, its nested objects' schemas put in ``defs``."""
    top = _object(RunResult, defs)
    top["properties"]["limits"] = LIMITS  # to_dict's own shape of Limits
    del defs["Limits"]
    top["properties"]["schema_version"] = {"const": SCHEMA_VERSION}
    top["required"].insert(0, "schema_version")  # every file has it: the reader's first check
    return top


def result_schema(exact: bool = False) -> dict[str, Any]:
    """The schema of :meth:`RunResult.to_dict` (draft 2020-12); ``exact``: no other key."""
    defs: dict[str, Any] = {}
    top = _result_object(defs)
    return _document(
        SCHEMA_ID,
        f"edgeprof result (schema_version {SCHEMA_VERSION})",
        top,
        defs,
        exact,
    )


def fit_schema(exact: bool = False) -> dict[str, Any]:
    """The schema of ``fit.json``: one model's :class:`~.fitdoc.Fit`, or several models'
    :class:`~.fitdoc.Fits` (draft 2020-12); ``exact``: no other key."""
    defs: dict[str, Any] = {}
    one = _schema(Fit, defs)
    defs["Fit"]["properties"]["schema_version"] = {
        "description": defs["Fit"]["properties"]["schema_version"]["description"],
        "const": FIT_SCHEMA_VERSION,
    }
    several = _object(Fits, defs)
    several["properties"]["fits"]["minItems"] = 2  # one model's fit.json is the fit itself
    return _document(
        FIT_SCHEMA_ID,
        f"edgeprof fit (schema_version {FIT_SCHEMA_VERSION})",
        {"oneOf": [one, several]},
        defs,
        exact,
    )


def predictions_schema(exact: bool = False) -> dict[str, Any]:
    """The schema of a predictions document, :class:`~.predictionsdoc.PredictionsDoc`
    (draft 2020-12); ``exact``: no other key."""
    defs: dict[str, Any] = {}
    top = _object(PredictionsDoc, defs)
    props = top["properties"]
    props["schema"] = {"description": props["schema"]["description"], "const": PREDICTIONS_SCHEMA}
    # The calibration reader's bounds (``level``), and a range's two ends.
    props["level"] |= {"exclusiveMinimum": 0, "exclusiveMaximum": 1}
    defs["PredictionDoc"]["properties"]["profiler_range"] |= {"minItems": 2, "maxItems": 2}
    return _document(
        PREDICTIONS_SCHEMA_ID,
        f"edgeprof predictions ({PREDICTIONS_SCHEMA})",
        top,
        defs,
        exact,
    )


def sweep_schema(exact: bool = False) -> dict[str, Any]:
    """The schema of ``sweep.json``, :class:`~.sweepdoc.SweepDoc`, each run held to
    ``result.json``'s (its ``$defs`` here, ``RunResult`` and its parts) (draft 2020-12);
    ``exact``: no other key."""
    defs: dict[str, Any] = {}
    defs["RunResult"] = _result_object(defs)
    top = _object(SweepDoc, defs)
    props = top["properties"]
    props["schema"] = {"description": props["schema"]["description"], "const": SWEEP_SCHEMA}
    props["repeat"]["anyOf"][0]["minimum"] = 1
    return _document(SWEEP_SCHEMA_ID, f"edgeprof sweep ({SWEEP_SCHEMA})", top, defs, exact)


def compare_schema(exact: bool = False) -> dict[str, Any]:
    """The schema of ``compare --json``'s object, :class:`~.comparedoc.CompareDoc` (draft
    2020-12); ``exact``: no other key."""
    defs: dict[str, Any] = {}
    top = _object(CompareDoc, defs)
    return _document(COMPARE_SCHEMA_ID, "edgeprof compare --json", top, defs, exact)


def _document(
    schema_id: str, title: str, top: dict[str, Any], defs: dict[str, Any], exact: bool
) -> dict[str, Any]:
    """A published schema document (draft 2020-12) of ``top`` and the ``defs`` it refers to:
    the five documents' one head and wrapping."""
    return _published(
        {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": schema_id,
            "title": title,
            **top,
            "$defs": dict(sorted(defs.items())),
        },
        exact,
    )


def _published(schema: dict[str, Any], exact: bool) -> dict[str, Any]:
    """``schema`` (every object closed) as published: open, saying so; or exact, with an
    ``$id`` of its own (two schemas of one ``$id`` would be one resource to a registry)."""
    if exact:
        return {**schema, "$id": schema["$id"].replace("/schema.json", "/exact.schema.json")}
    head = {k: schema[k] for k in ("$schema", "$id", "title")}
    opened = _opened({k: v for k, v in schema.items() if k not in head})
    assert isinstance(opened, dict)
    return {**head, "$comment": OPEN, **opened}


def _opened(node: object) -> object:
    """``node`` without ``additionalProperties: false`` anywhere (a map's value schema, such
    as ``thread_vars``', is kept)."""
    if isinstance(node, dict):
        drop = "additionalProperties" if node.get("additionalProperties") is False else None
        return {k: _opened(v) for k, v in node.items() if k != drop}
    if isinstance(node, list):
        return [_opened(v) for v in node]
    return node


def _members(cls: type) -> list[tuple[str, bool]]:
    """(key, required) of a dataclass's fields or a typed dict's keys, in order."""
    if dataclasses.is_dataclass(cls):
        return [
            (f.name, f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
            for f in dataclasses.fields(cls)
        ]
    required: frozenset[str] = getattr(cls, "__required_keys__")  # noqa: B009 (a typed dict)
    # Under `from __future__ import annotations` Python 3.11 counts a `NotRequired[...]`
    # key as required (its annotation is a string then): the hint says it.
    hints = typing.get_type_hints(cls, vars(sys.modules[cls.__module__]), include_extras=True)
    return [
        (key, key in required and typing.get_origin(hints[key]) is not typing.NotRequired)
        for key in cls.__annotations__
    ]


def _object(cls: type, defs: dict[str, Any]) -> dict[str, Any]:
    hints = typing.get_type_hints(cls, vars(sys.modules[cls.__module__]), include_extras=True)
    docs = _field_docs(cls)
    props: dict[str, Any] = {}
    required = []
    for name, needed in _members(cls):
        schema = _schema(hints[name], defs, name in ARGV)
        # The reader's rules (jsoncheck.non_negative, jsoncheck.MAX_SECONDS), on each number
        # of a list of them.
        number = schema.get("items", schema)
        if non_negative(cls, name) and _numeric(number):
            number.pop("exclusiveMinimum", None)
            number["minimum"] = 0
        if seconds(name):
            number["maximum"] = MAX_SECONDS
        if name.endswith("_pct"):  # the reader's MAX_PERCENT, which the schema had left out
            number["maximum"] = MAX_PERCENT
        if name in docs:
            schema = {"description": docs[name], **schema}
        props[name] = schema
        if needed:
            required.append(name)
    out: dict[str, Any] = {"type": "object"}
    doc = inspect.getdoc(cls)
    if doc and not doc.startswith(f"{cls.__name__}("):  # not dataclass's generated signature
        out["description"] = _text(doc.split("\n\n")[0])
    return {**out, "properties": props, "required": required, "additionalProperties": False}


def _numeric(schema: dict[str, Any]) -> bool:
    """Whether ``schema`` is a number's (or a number's or null): a bound is no part of a
    string's, a list's or a reference's."""
    kinds = schema.get("type")
    return bool({"integer", "number"} & set(kinds if isinstance(kinds, list) else [kinds]))


def _schema(tp: Any, defs: dict[str, Any], argv: bool = False) -> dict[str, Any]:
    """``argv``: a string may hold control characters (:data:`.jsoncheck.ARGV`); no other
    may, as the reader (:data:`.jsoncheck.NO_CONTROL`)."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.NotRequired:  # a key added later: not required (``_members``)
        return _schema(args[0], defs, argv)
    if origin is typing.Annotated:
        if tp.__metadata__[0] is AnyText:  # a string that may hold control characters
            return _schema(args[0], defs, argv=True)
        return _schema(tp.__metadata__[0], defs, argv)  # written as its JSON form (.fitdoc)
    if origin in (typing.Union, types.UnionType):
        inners = [a for a in args if a is not type(None)]
        if len(inners) > 1:  # one of several kinds (a sweep's repeat: a count or "auto")
            null = [{"type": "null"}] if len(inners) < len(args) else []
            return {"anyOf": [*(_schema(a, defs, argv) for a in inners), *null]}
        (inner,) = inners
        schema = _schema(inner, defs, argv)
        if "type" not in schema:  # a reference
            return {"anyOf": [schema, {"type": "null"}]}
        if "enum" in schema:  # the enum lists every value allowed: null too
            schema = {**schema, "enum": [*schema["enum"], None]}
        return {**schema, "type": [schema["type"], "null"]}
    if origin in (tuple, list):
        return {"type": "array", "items": _schema(args[0], defs, argv)}
    if origin is collections.abc.Mapping:  # string keys, as JSON's (thread_vars)
        return {"type": "object", "additionalProperties": _schema(args[1], defs, argv)}
    if origin is typing.Literal and all(isinstance(a, str) for a in args):
        return {"type": "string", "enum": list(args)}
    if tp is int:  # the reader's bound (edgeprof.model.jsoncheck): the kernel's are 64-bit
        return {"type": "integer", "exclusiveMinimum": -(2**64), "exclusiveMaximum": 2**64}
    if tp is str and not argv:
        return {"type": "string", "pattern": NO_CONTROL}
    if tp in _SIMPLE:
        return {"type": _SIMPLE[tp]}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return {"type": "string", "enum": [m.value for m in tp]}
    if isinstance(tp, type) and (dataclasses.is_dataclass(tp) or typing.is_typeddict(tp)):
        if tp.__name__ not in defs:
            defs[tp.__name__] = {}  # a placeholder while its own fields are made
            defs[tp.__name__] = _object(tp, defs)
        return {"$ref": f"#/$defs/{tp.__name__}"}
    raise TypeError(f"no JSON Schema for {tp!r}")


def _field_docs(cls: type) -> dict[str, str]:
    """{field: its docstring}: the string literal after a field's annotation in the class
    body (Python keeps it nowhere at run time)."""
    body = ast.parse(inspect.getsource(cls)).body[0]
    assert isinstance(body, ast.ClassDef)
    out: dict[str, str] = {}
    # A typed dict's keys of its bases (``total=False`` keys on required ones), by name: no
    # attribute keeps a typed dict's bases on Python 3.11.
    module = sys.modules[cls.__module__]
    for base in body.bases:
        found = getattr(module, base.id, None) if isinstance(base, ast.Name) else None
        if isinstance(found, type) and typing.is_typeddict(found):
            out |= _field_docs(found)
    for a, b in zip(body.body, body.body[1:], strict=False):
        if (
            isinstance(a, ast.AnnAssign)
            and isinstance(a.target, ast.Name)
            and isinstance(b, ast.Expr)
            and isinstance(b.value, ast.Constant)
            and isinstance(b.value.value, str)
        ):
            out[a.target.id] = _text(b.value.value)
    return out


_JSON_WORDS = {"None": "null", "True": "true", "False": "false"}
"""The model's docstrings name Python's constants; a schema's reader knows JSON's (the
result schema said `None` 43 times, `null` never)."""


def _text(doc: str) -> str:
    """One line of plain text: reST's double backquotes and roles made Markdown's, and
    Python's ``None``, ``True`` and ``False`` JSON's words."""
    text = " ".join(doc.split())
    text = re.sub(r":\w+:`~?([^`]+)`", r"`\1`", text)
    text = text.replace("``", "`")
    return re.sub(r"`(None|True|False)`", lambda m: f"`{_JSON_WORDS[m[1]]}`", text)


if __name__ == "__main__":
    # No argument: result.json's (the command the release notes have always given).
    which = {
        "result": result_schema,
        "fit": fit_schema,
        "predictions": predictions_schema,
        "sweep": sweep_schema,
        "compare": compare_schema,
    }
    if len(sys.argv) > 2 or sys.argv[1:] not in ([], *([k] for k in which)):
        sys.exit("usage: python -m edgeprof.model.schema [result|fit|predictions|sweep|compare]")
    print(json.dumps(which[(sys.argv[1:] or ["result"])[0]](), indent=2, ensure_ascii=False))
