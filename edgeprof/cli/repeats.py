"""A single-value option given more than once, or both sides of a boolean pair: refused,
not the last value kept.

click keeps the last value of a repeated option without a word: ``run --device a --device
b`` ran ``b`` only, and ``fit --memory 512m --memory 1g`` fitted 1 GiB, while ``run --memory
512m --memory 1g`` sweeps both (its ``--memory`` takes a list).  Every command's options are
checked here before click parses them (:func:`check`); ``run``'s own parser hands such a
line to the typer command (:func:`edgeprof.cli.runargs.parse`), so one place refuses it.
So is a boolean pair given both ways: ``gc --images --no-images`` removed no image, without a
word (a CLI tester's); a flag given twice the same way means what it says once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..errors import ConfigError
from ..names import printable


def check(params: Iterable[Any], args: Sequence[str], interspersed: bool) -> None:
    """Raise a :class:`ConfigError` where ``args`` give a single-value option (a click
    ``Option`` that takes a value and is not ``multiple``) more than once, or both names of
    a boolean pair (``--images`` and ``--no-images``).  ``interspersed``:
    whether options may follow the command's arguments (``run`` and ``fit`` stop at the
    first: the workload's words are its own)."""
    options = {name: p for p in params if getattr(p, "param_type_name", "") == "option"
               for name in (*p.opts, *p.secondary_opts)}  # fmt: skip
    given: dict[str, list[str]] = {}
    sides: dict[str, dict[bool, str]] = {}  # a boolean pair's: its side (off?), the name given
    i = 0
    while i < len(args):
        word = args[i]
        if word == "--":
            break
        if not word.startswith("-") or word == "-":
            if not interspersed:
                break
            i += 1
            continue
        name, eq, value = word.partition("=") if word.startswith("--") else (word[:2], "", "")
        inline = bool(eq) or (not word.startswith("--") and len(word) > 2)
        if not word.startswith("--") and len(word) > 2:
            value = word[2:]
        p = options.get(name)
        takes = p is not None and not p.is_flag and not p.count
        if takes and not inline:
            value = args[i + 1] if i + 1 < len(args) else ""
        i += 2 if takes and not inline else 1
        if p is not None and takes and not p.multiple:
            given.setdefault(p.opts[0], []).append(value)
        if p is not None and p.is_flag and p.secondary_opts:  # --images / --no-images
            sides.setdefault(p.opts[0], {}).setdefault(name in p.secondary_opts, name)
    for said in sides.values():
        if len(said) > 1:
            first, second = said.values()
            raise ConfigError(f"{first} and {second} both given: they contradict; give one")
    for name, values in given.items():
        if len(values) > 1:
            shown = ", ".join(printable(v) for v in values)
            raise ConfigError(
                f"{name} given {len(values)} times ({shown}): it takes one value, and all but "
                "the last would be ignored; give it once"
            )
