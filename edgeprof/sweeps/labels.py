"""A sweep's models and limit settings as the command line lists them, and the labels and
directory names its runs get from them."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..cpu_units import parse_cpus, parse_cpuset
from ..errors import ConfigError
from ..model import STORAGE, Limits
from ..names import check_name
from ..storage import read_input
from ..units import named, parse_memory_limit


def limit_settings(
    cpus: Sequence[str] = (),
    cpuset: Sequence[str] = (),
    memory: Sequence[str] = (),
    storage: Mapping[str, Sequence[str]] | None = None,
) -> tuple[Limits, ...]:
    """Every combination of the listed values (cpus outermost, then cpuset, memory and the
    storage's limits in :data:`~edgeprof.model.STORAGE`'s order), in the order given.

    ``cpus``, ``memory`` and ``storage``'s items (by ``Limits`` key: ``{"read_bps":
    ["10m,40m"]}``) may each hold a comma-separated list (``"1,2"``); a ``cpuset`` item is
    one setting (its commas are part of the CPU list: ``"0-1,3"``).
    """
    cpus_v = listed(cpus, "--cpus")
    mem_v = listed(memory, "--memory")
    sets_v: list[str | None] = [s.strip() for s in cpuset] or [None]
    for s in sets_v:
        if s == "":
            raise ConfigError("--cpuset: empty CPU list")
    # Read here, where the option is known: a bad size had said "invalid size '0'" alone,
    # and --cpus 0 "invalid CPU count '0'" (a tester's), where --memory 0 named its option.
    sizes = [None if m is None else parse_memory_limit(m, "--memory") for m in mem_v]
    with named("--cpus"):
        counts = [None if c is None else parse_cpus(c) for c in cpus_v]
    with named("--cpuset"):
        sets = [None if s is None else parse_cpuset(s) for s in sets_v]
    rates: list[list[int | None]] = []
    for limit in STORAGE:  # a card's speeds are a sweep's settings, as the CPU share is
        values = listed((storage or {}).get(limit.key, ()), limit.option)
        with named(limit.option):
            rates.append([None if v is None else limit.parse(v) for v in values] or [None])
    keys = [limit.key for limit in STORAGE]
    speeds: list[dict[str, Any]] = [
        dict(zip(keys, r, strict=True)) for r in itertools.product(*rates)
    ]
    return tuple(
        dataclasses.replace(Limits(cpus=c, cpuset=s, memory=m), **speed)
        for c, s, m, speed in itertools.product(counts or [None], sets, sizes or [None], speeds)
    )


def listed(items: Sequence[str], option: str) -> list[str | None]:
    """The values ``items`` list, each item split at its commas (``--cpus 1,2``)."""
    out: list[str | None] = []
    for item in items:
        parts = [p.strip() for p in item.split(",")]
        if not all(parts):
            raise ConfigError(f"{option} {item!r}: empty value in the list")
        out.extend(parts)
    return out


def one_setting(
    command: str,
    cpus: str | Sequence[str] | None = None,
    memory: str | Sequence[str] | None = None,
    *,
    sweep: bool = False,
    memory_first: str | None = None,
    storage: Mapping[str, str | Sequence[str] | None] | None = None,
) -> None:
    """Refuse a list (``--cpus 1,2``) for a command that runs one setting, in one line that
    says what to do instead, before anything runs (``bench --cpus 1,2`` had said "invalid
    CPU count '1,2'", a tester's, where ``run --cpus 1,2`` sweeps both; a list given to
    ``fit`` had been a traceback).  ``sweep``: ``run`` can sweep the command's work (a bench
    function can be a run's phase, a layer profile cannot).  ``memory_first``: the command's
    own better way for a list of memories, said before "once per value" (``fit``: its answer
    without ``--memory`` is the need, which each board's memory can be read against).
    ``storage``: the storage options by :data:`~edgeprof.model.STORAGE` key, read as
    ``cpus`` (``bench --read-bps 10m,40m`` had said "invalid read rate").  The
    one place every such command says it: ``bench``, ``layers profile`` and ``fit`` had each
    worded it their own way."""
    verb = command.split()[-1]
    given = (
        ("--cpus", cpus, "CPU setting", None),
        ("--memory", memory, "memory limit", memory_first),
        *((s.option, (storage or {}).get(s.key), s.what, None) for s in STORAGE),
    )
    for option, value, what, first in given:
        items = (value,) if isinstance(value, str) else tuple(value or ())
        parts = [p for p in listed(items, option) if p is not None]
        if len(parts) < 2:
            continue
        how = f"{verb} once per value ({option} {parts[0]}, then {option} {parts[1]})"
        if first is not None:
            how = f"{first}, or {how}"
        if sweep:
            how += f", or sweep them with edgeprof run {option} {','.join(parts)} -- COMMAND"
        said = ", ".join(items)
        raise ConfigError(f"{option} {said}: edgeprof {command} takes one {what}: {how}")


FORMULA_FIRST = ("=", "-")
"""The characters :func:`safe_dir` keeps that a spreadsheet reads as a formula's first (it
replaces ``+`` and ``@`` anywhere): ``--name '=1+2,q é'`` had made ``=1_2_q_é``, which
``runs.csv``'s formula guard wrote ``'=1_2_q_é/1``, a ``dir`` that named no directory."""


def safe_dir(label: str) -> str:
    """A label as one directory name: never a path, never hidden, and never started by a
    formula's character (``runs.csv``'s ``dir`` is then written as on disk, unguarded; a
    name starting with ``-`` was also an option to ``ls`` or ``rm``)."""
    cleaned = "".join(c if c.isalnum() or c in "._-=" else "_" for c in label).lstrip(".")
    if cleaned.startswith(FORMULA_FIRST):
        cleaned = "_" + cleaned[1:]
    return cleaned[:100] or "model"


def model_labels(models: Sequence[str]) -> list[str]:
    """Each model's label: its file name, or as many of its path's last parts as tell it
    apart from the others (``fp32/model.onnx``, ``int8/model.onnx``: one file name made them
    one model's repeats).  A model listed twice, or labels that would share a run directory,
    are refused."""
    dup = next((m for m in models if models.count(m) > 1), None)
    if dup is not None:
        raise ConfigError(f"the model {dup!r} is listed twice")
    parts = [Path(m).parts or (m,) for m in models]
    depth = [1] * len(models)
    while True:
        labels = [str(Path(*p[-d:])) for p, d in zip(parts, depth, strict=True)]
        clash = [
            i for i, lab in enumerate(labels) if labels.count(lab) > 1 and depth[i] < len(parts[i])
        ]
        if not clash:
            break
        for i in clash:
            depth[i] += 1
    dirs = [safe_dir(lab) for lab in labels]
    same = next((lab for lab, d in zip(labels, dirs, strict=True) if dirs.count(d) > 1), None)
    if same is not None:
        raise ConfigError(
            f"the model {same!r} and another would share the run directory "
            f"{safe_dir(same)!r}: rename one"
        )
    return labels


def model_names(models: str | None, model_file: Path | None) -> list[str]:
    """``-m a,b`` or ``-f models.txt`` (one name a line; blank lines and # comments skipped)."""
    if models and model_file:
        raise ConfigError("give models with -m or -f, not both")
    if model_file is not None:
        lines = read_input(model_file, "model file ").splitlines()
        names = [ln.strip() for ln in lines if ln.strip() and not ln.strip().startswith("#")]
        if not names:
            raise ConfigError(f"model file {model_file} lists no model")
        return [check_name(n, f"model in {model_file}") for n in names]
    if models is None:
        return []
    names = [m.strip() for m in models.split(",")]
    if not all(names):
        raise ConfigError(f"-m {models!r}: empty model name in the list")
    return [check_name(n, "model") for n in names]
