"""Model families: which models a calibration may fit on their own.

The line (or power law) from profiler to device is tightest for architecturally similar
models: one operator mix, one ratio of compute to memory traffic.  A model's family comes from
the device CSV's ``family`` column, else from the first ``PATTERN=FAMILY`` rule whose
shell-style pattern matches its label or the label without its extension (``resnet*=resnet``).
The rules are kept in the calibration file, so a model profiled later gets its family, and its
prediction says whether a family fit or the pooled one made it.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import ConfigError

MIN_FAMILY_POINTS = 4
"""A family is fitted on its own from this many points: the fewest whose held-out accuracy
can be told (:data:`.choice.MIN_HELDOUT`); with fewer, its models use the pooled fit."""


def label_stem(label: str) -> str:
    """A label without its extension (``mobilenet_v2_0.5.onnx`` → ``mobilenet_v2_0.5``): how
    device CSV rows and family patterns may name a model."""
    return Path(label).stem if "." in label else label


@dataclass(frozen=True)
class FamilyRule:
    pattern: str
    family: str

    def matches(self, label: str) -> bool:
        return fnmatch.fnmatchcase(label, self.pattern) or fnmatch.fnmatchcase(
            label_stem(label), self.pattern
        )

    def __str__(self) -> str:
        return f"{self.pattern}={self.family}"


def parse_rule(text: str, where: str = "--family") -> FamilyRule:
    """``PATTERN=FAMILY`` (``--family 'resnet*=resnet'``); ``where`` names its source in errors."""
    pattern, sep, family = text.partition("=")
    pattern, family = pattern.strip(), family.strip()
    if not sep or not pattern or not family:
        raise ConfigError(f"{where} {text!r}: expected PATTERN=FAMILY, e.g. 'resnet*=resnet'")
    check_family(family, f"{where} {text!r}")
    return FamilyRule(pattern, family)


def check_family(name: str, where: str) -> str:
    if not name or any(c.isspace() for c in name) or len(name) > 100:
        raise ConfigError(f"{where}: family {name!r}: one word of at most 100 characters")
    return name


@dataclass(frozen=True)
class Families:
    """How labels map to families: named ones (the CSV's column) before the rules."""

    rules: tuple[FamilyRule, ...] = ()
    named: Mapping[str, str] = field(default_factory=dict)
    """Label → family, for the models the device CSV named one for."""

    def of(self, label: str) -> str | None:
        named = self.named.get(label) or self.named.get(label_stem(label))
        if named is not None:
            return named
        return next((r.family for r in self.rules if r.matches(label)), None)

    def all(self) -> set[str]:
        return {*self.named.values(), *(r.family for r in self.rules)}


def members(families: Families, labels: Iterable[str]) -> dict[str, list[str]]:
    """Family → the labels in it, for labels that have one (in the order given)."""
    out: dict[str, list[str]] = {}
    for label in labels:
        fam = families.of(label)
        if fam is not None:
            out.setdefault(fam, []).append(label)
    return out
