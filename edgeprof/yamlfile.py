"""YAML as edgeprof reads it: PyYAML's safe loader, with a key given twice in one mapping
refused.  PyYAML keeps the last value in silence, so a budget file holding ``wall: 1s`` and
later ``wall: 10s`` gated on 10 s; a device catalog with an entry named twice kept one.

Imported only where a YAML file is read (PyYAML costs ~15 ms to import)."""

from __future__ import annotations

from typing import Any

import yaml

from .errors import ConfigError


class _StrictLoader(yaml.SafeLoader):
    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # "<<": PyYAML's own rules
                continue
            key = self.construct_object(key_node, deep=deep)
            try:
                twice = key in seen
            except TypeError:  # unhashable: the base class says so
                continue
            if twice:
                raise yaml.constructor.ConstructorError(
                    None, None, f"the key {key!r} is given twice", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def safe_load(text: str) -> Any:
    """``yaml.safe_load`` that refuses a mapping's key given twice (a ``yaml.YAMLError``, as
    any other fault of the text)."""
    return yaml.load(text, Loader=_StrictLoader)  # a SafeLoader: no arbitrary objects


def located(where: object, exc: BaseException) -> str:
    """A fault of a YAML text as one line, ``WHERE:LINE: problem``: the budget file's form,
    which every YAML file edgeprof reads now shares.  PyYAML's own text spans lines and draws
    the spot (``... in "<unicode string>", line 5, column 3: b1: ^``), and the catalog and
    calibration had printed it whole.  ``exc``: a :class:`yaml.YAMLError`, a ``ValueError``
    (an integer of 4300+ digits) or a ``RecursionError`` (nested deeper than Python
    recurses)."""
    if isinstance(exc, RecursionError):
        return f"{where}: nested too deeply"
    if not isinstance(exc, yaml.YAMLError):
        return f"{where}: {' '.join(str(exc).split())}"
    mark = getattr(exc, "problem_mark", None)
    line = f":{mark.line + 1}" if mark is not None else ""
    problem = getattr(exc, "problem", None) or "not valid YAML"
    return f"{where}{line}: {' '.join(problem.split())}"


def parse(text: str, where: object) -> Any:
    """:func:`safe_load`, a fault of the text one :class:`ConfigError` line (:func:`located`;
    ``where``: the file as the message names it, ``device catalog bad.yml``)."""
    try:
        return safe_load(text)
    except (yaml.YAMLError, ValueError, RecursionError) as exc:
        raise ConfigError(located(where, exc)) from None
