"""Shards of one sweep joined back into it: ``edgeprof merge``.

A sweep split with ``--shard I/N`` runs, on each machine, the measured rounds I, I + N …
of the same plan (and every warm-up round).  Rounds, not models, are what is split: every
shard measures every model, so each host is a block of the design, and a ranking compares
models measured alike on every host (a slower host slows them all).  Merging puts the rounds
back in order, so the merged ``sweep.json`` holds the runs, cells and statistics an unsplit
sweep of the same plan would have, in the same order.

Refused, each as one error naming the files: a sweep that is not a shard; shards of
different plans (command, models, limits, repeats, warm-ups, shard count, the runs' sampling
interval; not ``--env`` or ``--timeout``, which no result records); a shard missing
or given twice; a shard that did not finish; shards measured by different backends (a
process tree's RSS is not a group's charge; cgroup v1 and v2 hosts both charge a group, and
a cluster may hold both: a host note, below).  Shards from different kinds
of host are merged and said (:func:`edgeprof.analysis.hosts.host_notes`): the blocked design
keeps the rankings comparable, the absolute figures are a mix of the hosts.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..analysis.hosts import shard_notes
from ..analysis.sweepfile import sweep_dict
from ..errors import ConfigError
from ..model import RunResult
from ..resultfiles import read_sweep
from ..samplefiles import found_files
from .plan import plan_difference

PLAN_KEYS = ("command", "models", "limits", "repeat", "warmup")
"""What shards of one sweep share (``sweep.json``'s keys)."""


@dataclass(frozen=True)
class Shard:
    path: Path
    index: int
    count: int
    rounds: tuple[int, ...]
    data: Mapping[str, Any]
    """The shard's whole ``sweep.json``."""


@dataclass(frozen=True)
class Merged:
    plan: dict[str, Any]
    """The plan's keys (:data:`PLAN_KEYS`) as the shards recorded them."""
    runs: list[RunResult]
    """Each run with its files where they are now (in its shard's directory)."""
    run_dicts: list[dict[str, Any]]
    """Each run as its shard's ``sweep.json`` holds it (its files named from there)."""
    warmup_runs: list[tuple[dict[str, Any], RunResult]]
    shards: list[Shard]
    by_shard: list[list[RunResult]]
    """Each shard's runs (in the order of :attr:`shards`)."""
    notes: list[str]
    """What the shards' hosts make of the figures (:func:`shard_notes`), kept in the merged
    ``sweep.json`` (``notes``): said only on merge's stdout, they had reached no report.md,
    CI summary, JUnit file, HTML page or later ``report`` of the merged sweep."""

    def document(self, directory: Path) -> dict[str, Any]:
        """The merged ``sweep.json`` written in ``directory``: its runs, and its own keys (the
        plan, where each round came from), every file named relative to ``directory``, as a
        sweep's are.  As each shard had named them (relative to the shard), or as ``merge``
        was given the shards (relative to where it ran), they named nothing from the merged
        file: read from elsewhere, only a search of the shards' directories found them."""
        extra = {
            **self.plan,
            "argv": list(sys.argv),  # the merge's own; each part's is in its sweep.json
            "interrupted": False,
            "notes": list(self.notes),
            "warmup_runs": [_named_from(d, r, directory) for d, r in self.warmup_runs],
            "shards": [
                {
                    "index": s.index,
                    "count": s.count,
                    "rounds": list(s.rounds),
                    "path": os.path.relpath(s.path, directory),
                }
                for s in self.shards
            ],
        }
        pairs = zip(self.run_dicts, self.runs, strict=True)
        return sweep_dict(self.runs, extra, [_named_from(d, r, directory) for d, r in pairs])


def _named_from(data: dict[str, Any], run: RunResult, directory: Path) -> dict[str, Any]:
    """``data`` (a run as its shard recorded it) with its ``samples.csv`` and ``gpu.csv``
    named from ``directory``: where ``run`` (the same run) found them."""
    named = dict(data)
    for key, files in (("samples", run.samples), ("gpu", run.gpu)):
        if files is not None and files.path is not None and isinstance(data.get(key), dict):
            named[key] = {**data[key], "path": os.path.relpath(files.path, directory)}
    return named


def read_shard(path: Path) -> Shard:
    """The shard in ``path`` (a ``sweep.json`` or a directory holding one)."""
    found = read_sweep(path)
    if found is None:
        # A directory that is not there had been told "no edgeprof sweep.json there" (a
        # tester's): the fix is another path, not a sweep to make.
        there = "no such file or directory" if not path.exists() else "no edgeprof sweep.json there"
        raise ConfigError(f"{path}: {there}")
    sweep, data = found
    shard = data.get("shard")
    if shard is None:
        raise ConfigError(f"{sweep} is a whole sweep, not a shard (run --shard I/N)")
    try:
        index, count, rounds = int(shard["index"]), int(shard["count"]), shard["rounds"]
        rounds = tuple(int(k) for k in rounds)
    except (TypeError, KeyError, ValueError):
        raise ConfigError(f"{sweep}: 'shard' is not index, count and rounds") from None
    if any(k not in data for k in PLAN_KEYS) or not isinstance(data.get("runs"), list):
        raise ConfigError(f"{sweep}: not a sweep.json of this edgeprof (no plan or runs)")
    return Shard(sweep, index, count, rounds, data)


def merge_shards(paths: Sequence[Path]) -> Merged:
    """Every shard of one sweep, checked (module docstring) and merged in round order."""
    shards = sorted((read_shard(p) for p in paths), key=lambda s: s.index)
    first = shards[0]
    for s in shards[1:]:
        for key in ("count", *PLAN_KEYS):
            mine = s.count if key == "count" else s.data[key]
            theirs = first.count if key == "count" else first.data[key]
            if mine != theirs:
                raise ConfigError(
                    f"{first.path} and {s.path} are shards of different sweeps: "
                    f"{plan_difference(key, theirs, mine)}"
                )
    count = first.count
    seen: dict[int, Path] = {}
    for s in shards:
        if s.index in seen:
            raise ConfigError(f"shard {s.index}/{count} given twice: {seen[s.index]} and {s.path}")
        seen[s.index] = s.path
    missing = [i for i in range(1, count + 1) if i not in seen]
    if missing:
        have = ", ".join(f"{i}/{count}" for i in sorted(seen))
        want = ", ".join(f"{i}/{count}" for i in missing)
        raise ConfigError(f"shard {want} missing (given: {have})")
    cells = len(first.data["limits"]) * max(1, len(first.data["models"]))
    blocks: dict[int, list[tuple[dict[str, Any], RunResult]]] = {}
    by_shard = []
    warmups: list[tuple[dict[str, Any], RunResult]] = []
    for s in shards:
        dicts = s.data["runs"]
        # A run cut short by the interruption is in the file, but not finished: counted, it
        # had made "6 of 6 runs" of a shard whose sixth was interrupted.
        finished = sum(
            1 for d in dicts if not isinstance(d, dict) or d.get("termination") != "interrupted"
        )
        if s.data.get("interrupted") or finished != len(dicts) or finished != cells * len(s.rounds):
            # The interrupted run said apart: report counts it among the runs made ("stopped
            # after 2 run(s)" beside merge's "1 of 4"), and --resume finishes a part.
            cut = len(dicts) - finished
            also = f", and {cut} interrupted" if cut else ""
            raise ConfigError(
                f"{s.path}: shard {s.index}/{count} did not finish ({finished} of "
                f"{cells * len(s.rounds)} runs finished{also}): finish it with run --resume "
                "(its own options and --out) before merging"
            )
        try:
            # Each run's files where they are now (under its shard's directory): merge's
            # runs.csv ties each row to its directory, and --html draws its timeline.
            runs = [_found(d, s) for d in dicts]
            warmups += [(d, _found(d, s)) for d in s.data.get("warmup_runs") or ()]
        except ConfigError as exc:
            raise ConfigError(f"{s.path}: {exc}") from exc
        by_shard.append(runs)
        for k, rnd in enumerate(s.rounds):
            part = slice(k * cells, (k + 1) * cells)
            blocks[rnd] = list(zip(dicts[part], runs[part], strict=True))
    # Not in the plan's keys, but in every run: a shard sampled at another interval measured
    # other figures (a short run's average memory is n/a at 0.1 s, a figure at 0.01 s).
    intervals = [{r.samples.interval_s for r in runs} for runs in by_shard]
    for s, seen_here in zip(shards[1:], intervals[1:], strict=True):
        if seen_here != intervals[0]:
            raise ConfigError(
                f"{first.path} and {s.path} are shards of different sweeps: their sampling "
                f"intervals differ ({_seconds(intervals[0])}, {_seconds(seen_here)}: --interval)"
            )
    # Nor is the measuring method: the process backend's peak is a process tree's RSS, the
    # cgroup backends' the group's charge; merged, a cell's median had mixed the two under
    # one backend's name, said only as "2 kinds of host".
    methods = [{r.backend for r in runs} for runs in by_shard]
    for s, method in zip(shards[1:], methods[1:], strict=True):
        if method != methods[0]:
            raise ConfigError(
                f"{first.path} and {s.path} were measured differently: with the "
                f"{_methods(methods[0])} and the {_methods(method)}; merge parts measured "
                "one way (each part's --backend)"
            )
    rounds = range(1, int(first.data["repeat"]) + 1)
    if sorted(blocks) != list(rounds):
        raise ConfigError(f"the shards' rounds are not 1 … {first.data['repeat']}")
    ordered = [pair for rnd in rounds for pair in blocks[rnd]]
    plan = {k: first.data[k] for k in PLAN_KEYS}
    names = [f"shard {s.index}/{s.count}" for s in shards]
    notes = shard_notes(list(zip(names, by_shard, strict=True)))
    runs, run_dicts = [r for _, r in ordered], [d for d, _ in ordered]
    return Merged(plan, runs, run_dicts, warmups, shards, by_shard, notes)


def _found(data: Any, shard: Shard) -> RunResult:
    """The run ``data`` of ``shard``, its files where they are now (:func:`found_files`)."""
    return found_files(RunResult.from_dict(data), [shard.path.parent], beside=False)


def _methods(values: set[str]) -> str:
    """``cgroup backend``, ``process backend``: one shard's way of measuring."""
    return " and ".join(f"{b} backend" for b in sorted(values))


def _seconds(values: set[float]) -> str:
    return " and ".join(f"{v:g} s" for v in sorted(values))
