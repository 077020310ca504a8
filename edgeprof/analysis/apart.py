"""Runs that share a label but are not repeats, named apart before they are put in cells.

A cell (:mod:`edgeprof.analysis.cells`) is one label under one limit setting, and its runs
are read as repeats of one setting: their mean ± sd, their medians, the test of "different"
between cells.  That holds only where the runs ran the same thing.  A label does not say so:
a plain run is labelled with its program's name, so ``report mem1 iv0.1`` of
``python read_and_hold.py model.bin 48`` and ``python quickstart/infer.py`` had read "2 runs
of python", peak memory 124.1MiB ± 82.4MiB; one script under ``--iterations 100`` and
``300`` gave a latency row of ``ITER 200``, which no run had; two benches of one target
under ``-E THREADS=1`` and ``-E THREADS=2`` ranked "≈ within noise" as 2 repeats.

The rule: runs of one label are repeats only where they ran the same code (a bench's
target), the same command (program and arguments) and the same ``--env`` overrides
(:attr:`~edgeprof.model.RunResult.env`); the limits are the cell's other half already.
Where a label's runs differ in any of these, each is named with what differs
(``python (--iterations 100)``, ``infer bs=1 (THREADS=2)``) and a note says so: each
setting keeps its own statistics, and nothing is lost.  Named apart rather than refused:
reading two scripts' or two settings' directories together is what ``report DIR1 DIR2`` is
for, and their figures side by side are the answer; pooled, even with a warning, every
figure of the cell would be wrong.  Only ``-E`` is recorded, not what a run inherited: a
run whose ``-E`` did not set a key is named "no -E KEY", never "KEY unset".  A file from
before ``env`` was recorded (``None``) is not told apart by it (nothing says its
environment differed), but a note says where it is pooled with runs that recorded some.

A sweep's runs of one label always agree (one command, one environment; each ``-m`` model
has its own label), so a sweep, and one bench, reads as it was.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ..measure.limits import MKL_EXACT, THREAD_VARS
from ..model import RunResult
from ..names import printable
from .cells import cells, group_by
from .targets import targets

Words = tuple[str, ...]


def words(r: RunResult) -> Words:
    """What the run's command asked, the part that can differ between settings: the whole
    command, but a bench's boot source (``python -c SOURCE TARGET ...``: its source changes
    with edgeprof's version, and the target is said by :attr:`RunResult.target`) is left
    out, keeping the interpreter and the bench's own options (``--iterations 30``).  Not its
    ``--loader``, which the target records (``…:infer, loader load``): kept, two loaders'
    runs were named "(bench_variants.py:infer, loader load_fp32, --loader load_fp32)", and
    both notes, of targets and of commands, were said of the one difference (a tester's)."""
    c = r.command
    if r.target is not None and len(c) >= 4 and c[1] == "-c":
        rest = list(c[4:])
        if "--loader" in rest[:-1]:
            at = rest.index("--loader")
            del rest[at : at + 2]
        return (c[0], *rest)
    return c


@dataclass(frozen=True)
class _Differs:
    """Which of a label's runs' identities differ: its targets, commands, environments,
    devices."""

    target: bool
    command: bool
    env: bool
    device: bool = False
    """``--device`` names: two boards of the same limits measure alike here, but they are
    two boards, each with its own calibration and verdicts; pooled, ``report`` of two
    boards' sweeps had headed a cell "device boardA … 6 runs" beside its memory line's
    "(device boardC)" (a user's)."""

    def __bool__(self) -> bool:
        return self.target or self.command or self.env or self.device

    def __or__(self, other: _Differs) -> _Differs:
        return _Differs(
            self.target or other.target, self.command or other.command, self.env or other.env,
            self.device or other.device,
        )  # fmt: skip


def _differs(group: Sequence[RunResult]) -> _Differs:
    return _Differs(
        target=len(targets(group)) > 1,
        command=len({words(r) for r in group}) > 1,
        env=len({frozenset(r.env) for r in group if r.env is not None}) > 1,
        device=len({r.device for r in group}) > 1,
    )


def _found(runs: Sequence[RunResult]) -> dict[str, _Differs]:
    """Each label some cell of which pools runs that are not repeats, with what differs in
    its cells.  Judged per cell, not per label: two boards' sweeps of one model, whose
    thread pools (``--device``'s ``OMP_NUM_THREADS=2`` and ``=1``) differ with their
    limits, pool no unlike runs, and had been named "small (OMP_NUM_THREADS=2 …)" in every
    table and ranking sentence (a tester's).  A label found is named apart in all its
    cells, so that it reads alike across them."""
    found: dict[str, _Differs] = {}
    for (label, _), group in cells(runs).items():
        if d := _differs(group):
            found[label] = found[label] | d if label in found else d
    return found


def apart(runs: Sequence[RunResult]) -> tuple[list[RunResult], list[str]]:
    """``runs`` with each run of a label whose runs are not repeats named with what tells
    it apart, and the notes that say so (none: the runs are returned as they were)."""
    found = _found(runs)
    unrecorded = _unrecorded([runs], found)
    if not found:
        return list(runs), unrecorded
    name = _namer(runs, found)
    return [name(r) for r in runs], [*_notes(runs, found, "these runs"), *unrecorded]


def apart_sides(
    baseline: Sequence[RunResult], current: Sequence[RunResult]
) -> tuple[list[RunResult], list[RunResult], list[str]]:
    """``compare``'s :func:`apart`: a label whose runs differ within either side is named
    apart on both sides, by what both sides' runs of it record, so that each setting's cell
    pairs with the same setting's (a baseline of one file's bench against a directory of two
    files' pairs with its own file's runs).  What differs only between the sides (a changed
    command, another ``--env``) is the change compare measures and stays paired; a label of
    one target on each side, different ones, is refused by
    :func:`~edgeprof.analysis.targets.check_targets`."""
    found: dict[str, _Differs] = {}
    for side in (baseline, current):
        for label, d in _found(side).items():
            found[label] = found[label] | d if label in found else d
    unrecorded = _unrecorded([baseline, current], found)
    if not found:
        return list(baseline), list(current), unrecorded
    both = [*baseline, *current]
    name = _namer(both, found)
    notes = [*_notes(both, found, "the baseline and current results"), *unrecorded]
    return [name(r) for r in baseline], [name(r) for r in current], notes


def between_sides(base: Sequence[RunResult], current: Sequence[RunResult]) -> str | None:
    """What one cell's baseline and current runs ran differently, the change
    :func:`apart_sides` leaves paired: the words that tell their commands apart
    (:func:`_shown_commands`: ``--iterations 100 → --iterations 130``) and their differing
    ``-E`` settings; ``None`` where they ran alike.  ``compare`` of a script at
    ``--iterations 100`` against ``130`` under one label had said "+18.1% ± 10.1%
    regression" of CPU time with no word that the commands differed (a tester's), while a
    host's or a version's difference was noted."""
    said = []
    sides = (base, current)
    was, now = [words(r) for r in base], [words(r) for r in current]
    differ = _scripts_differ(base, current)
    if differ and set(was) == set(now):
        # The same words from other directories: other files.
        dirs = [", ".join(dict.fromkeys(str(r.workdir) for r in side)) for side in (base, current)]
        said.append(f"scripts (from {dirs[0]} → from {dirs[1]})")
    elif differ and (inserted := _inserted(set(was), set(now))) is not None:
        said.append(f"commands ({inserted})")
    elif differ:
        shown = _shown_commands([*was, *now])
        said.append(
            "commands ("
            + ", ".join(dict.fromkeys(shown[c] for c in was))
            + " → "
            + ", ".join(dict.fromkeys(shown[c] for c in now))
            + ")"
        )
    devices = [", ".join(dict.fromkeys(r.device or "no --device" for r in s)) for s in sides]
    recorded = [r for r in (*base, *current) if r.env is not None]
    pools = ""
    if recorded and all(r.env is not None for r in (*base, *current)):
        keys = _differing_keys(recorded)
        was_env, now_env = (
            ", ".join(dict.fromkeys(_env_part(r, keys) for r in side)) for side in (base, current)
        )
        if keys and was_env != now_env:
            by_device = set(keys) <= DEVICE_ENV and "-E" not in was_env + now_env
            if devices[0] != devices[1] and by_device:
                pools = f", whose thread pools: {was_env} → {now_env}"
            else:
                said.append(f"-E settings ({was_env} → {now_env})")
    if devices[0] != devices[1]:
        said.insert(0, f"devices ({devices[0]} → {devices[1]}{pools})")
    return " and ".join(said) or None


DEVICE_ENV = frozenset((*THREAD_VARS, *MKL_EXACT))
"""What a ``--device`` adds to a run's ``env`` (its thread-pool sizes,
:mod:`edgeprof.analysis.devices`): where the sides' devices differ and these alone do, the
device set them, and a note of "different -E settings" had blamed options a tester never
gave."""


def _inserted(was: set[Words], now: set[Words]) -> str | None:
    """``+ WORDS`` where each side ran one command and the current one is the baseline's with
    ``WORDS`` added in one place (``− WORDS``: left out); else ``None``.  ``--batch 16``
    against ``--batch 16 --width 128`` had read "(16 → 16 --width 128)", as if 16 had
    changed (a tester's)."""
    if len(was) != 1 or len(now) != 1:
        return None
    (a,), (b,) = was, now
    short, long, sign = (a, b, "+") if len(a) < len(b) else (b, a, "−")
    head = 0
    while head < len(short) and short[head] == long[head]:
        head += 1
    tail = 0
    while tail < len(short) - head and short[-1 - tail] == long[-1 - tail]:
        tail += 1
    if len(short) == len(long) or head + tail != len(short):
        return None  # a word changed, not only added
    return f"{sign} {shlex.join(long[head : len(long) - tail])}"


def _scripts_differ(base: Sequence[RunResult], current: Sequence[RunResult]) -> bool:
    """Whether the sides' commands differ, a relative script (``w.py``, ``../w.py``) read as
    the file it names from its run's ``workdir`` where every run records one: one script
    run from two directories had been "different commands (w.py → ../w.py)" (a
    verifier's)."""
    every = (*base, *current)
    if any(r.workdir is None for r in every):  # an older file: as its words are
        return {words(r) for r in base} != {words(r) for r in current}
    return {_resolved(r, r.workdir) for r in base} != {_resolved(r, r.workdir) for r in current}


def _resolved(r: RunResult, where: str | None) -> Words:
    """``r``'s words, its files as the paths they name: a ``.py`` script, and the program
    where it is a path (``../venv/bin/python``; a bare ``python3`` is the ``PATH``'s, left
    as it is), read from ``where`` where relative and normalized (``proj/../venv``).  A
    baseline run from ``proj/`` as ``../venv/bin/python mypkg/model.py`` had been "different
    commands" from ``/tmp/t-pytest/proj/../venv/bin/python /tmp/t-pytest/proj/mypkg/model.py``
    (``sys.executable`` and an absolute script, a test author's); other words, arguments
    that may name no file, stay as they are."""
    return tuple(
        _as_path(w, where) if w.endswith(".py") or (i == 0 and "/" in w) else w
        for i, w in enumerate(words(r))
    )


def _as_path(word: str, where: str | None) -> str:
    if os.path.isabs(word):
        return os.path.normpath(word)
    return word if where is None else os.path.normpath(os.path.join(where, word))


def _namer(
    runs: Sequence[RunResult], found: Mapping[str, _Differs]
) -> Callable[[RunResult], RunResult]:
    """The function that names a run of ``found``'s labels with what differs among
    ``runs``' runs of its label (the others are returned as they are)."""
    groups = group_by(runs, lambda r: r.label)
    shown = {label: _shown_commands([words(r) for r in groups[label]]) for label in found}
    keys = {label: _differing_keys(groups[label]) for label in found}
    shown_targets = {label: _shown_targets(groups[label]) for label in found}

    def name(r: RunResult) -> RunResult:
        d = found.get(r.label)
        if d is None:
            return r
        parts = []
        if d.target and r.target is not None:
            parts.append(shown_targets[r.label][r.target])
        if d.command:
            parts.append(shown[r.label][words(r)])
        if d.env:
            parts.append(_env_part(r, keys[r.label]))
        if d.device:
            parts.append("no --device" if r.device is None else f"device {r.device}")
        if not parts:  # a run without a target among targets: nothing to name it by
            return r
        return dataclasses.replace(r, name=f"{r.label} ({printable(', '.join(parts))})")

    return name


def _shown_targets(group: Sequence[RunResult]) -> dict[str, str]:
    """Each of the label's targets as the part that tells it from the others: its file
    where each file has one target, its loader (``loader load_fp32``) where one function
    of one file is loaded by several, else the whole target."""
    found = targets(group)
    files = [t.rpartition(":")[0] for t in found]
    if len(set(files)) == len(found):
        return dict(zip(found, files, strict=True))
    split = [t.partition(", ") for t in found]
    loaders = [loader for _, _, loader in split]
    if len({code for code, _, _ in split}) == 1 and all(w.startswith("loader ") for w in loaders):
        return dict(zip(found, loaders, strict=True))
    return {t: t for t in found}


def _shown_commands(commands: Sequence[Words]) -> dict[Words, str]:
    """Each distinct command as the words that tell it from the others: the words the
    commands share at their start and end are left out, an option's name kept with its
    value (``--iterations 100`` and ``--iterations 300`` of one script), and a command
    that would show nothing (``a.py`` beside ``a.py --fast``) keeps one more shared word."""
    distinct = list(dict.fromkeys(commands))
    shortest = min(len(c) for c in distinct)
    head = 0
    while head < shortest and len({c[head] for c in distinct}) == 1:
        head += 1
    tail = 0
    while tail < shortest - head and len({c[-1 - tail] for c in distinct}) == 1:
        tail += 1
    if head > 0 and distinct[0][head - 1].startswith("-"):
        head -= 1
    while any(len(c) - tail <= head for c in distinct) and (head or tail):
        if head > 0:
            head -= 1
        else:
            tail -= 1
    return {c: shlex.join(c[head : len(c) - tail]) for c in distinct}


def _differing_keys(group: Sequence[RunResult]) -> list[str]:
    """The ``--env`` keys whose values differ among the runs that recorded their env."""
    recorded = [dict(i.partition("=")[::2] for i in r.env) for r in group if r.env is not None]
    every = list(dict.fromkeys(k for env in recorded for k in env))
    return [k for k in every if len({env.get(k) for env in recorded}) > 1]


def _env_part(r: RunResult, keys: Sequence[str]) -> str:
    """The run's ``-E`` values of ``keys``, and the keys its ``-E`` did not set.  Only ``-E``
    is recorded, not the environment the run inherited: ``A=1 B=2 edgeprof run …`` beside
    ``run -E A=1 -E B=2 …`` had been labelled "A unset B unset", which edgeprof cannot
    know (a verifier's); "no -E A, B" is what it does know."""
    if r.env is None:
        return "-E not recorded"
    env = dict(i.partition("=")[::2] for i in r.env)
    parts = [" ".join(f"{k}={env[k]}" for k in keys if k in env)]
    missing = [k for k in keys if k not in env]
    if missing:
        parts.append("no -E " + ", ".join(missing))
    return ", ".join(p for p in parts if p)


def _notes(runs: Sequence[RunResult], found: Mapping[str, _Differs], whose: str) -> list[str]:
    notes = []
    by_target = {label: d for label, d in found.items() if d.target}
    if by_target:
        groups = group_by(runs, lambda r: r.label)
        every = list(dict.fromkeys(t for label in by_target for t in targets(groups[label])))
        notes.append(
            f"{whose} bench {len(every)} targets ({'; '.join(every)}) under the same labels "
            f"({_listed(by_target)}): each such run is named with its target, and no cell "
            "pools two targets"
        )
    other = {label: d for label, d in found.items() if d.command or d.env or d.device}
    if other:
        differ = [
            w
            for w, on in (
                ("commands", any(d.command for d in other.values())),
                ("-E settings", any(d.env for d in other.values())),
                ("devices", any(d.device for d in other.values())),
            )
            if on
        ]
        what = " and ".join([", ".join(differ[:-1]), differ[-1]] if len(differ) > 1 else differ)
        inherited = ""
        if any(d.env for d in other.values()):
            inherited = "; only -E settings are recorded, not the environment a run inherited"
        groups = group_by(runs, lambda r: r.label)
        notes.append(
            f"{whose} share a label but not their {what} ({_listed(other)}): they are not "
            "repeats of one setting, so each such run is named with what differs and no cell "
            f"pools two settings{inherited}"
            + _advice([r for label in other for r in groups[label]])
        )
    return notes


def _advice(runs: Sequence[RunResult]) -> str:
    """How to label such runs yourself: ``--name`` of ``run`` (``fit``, ``recipe``) and of
    ``bench`` (``NAME bs=8``); not said of benches alone, whose names here say what differs
    already."""
    benches = sum(r.target is not None for r in runs)
    if benches == len(runs):
        return ""
    return " (--name labels a run or a bench as you choose)" if benches else (
        " (--name labels a run as you choose)"
    )


def _unrecorded(sides: Sequence[Sequence[RunResult]], found: Mapping[str, _Differs]) -> list[str]:
    """The note for a label whose runs are pooled though some come from files that did not
    record their ``-E`` settings (``env`` ``None``, older files) and others recorded some:
    pooled in silence, they had read as one setting (a verifier's).  Not where the label is
    named apart by ``-E`` (those runs are named "-E not recorded"), nor between
    ``compare``'s sides, which are paired, not pooled."""
    pooled: dict[str, str] = {}
    for side in sides:
        for label, group in group_by(side, lambda r: r.label).items():
            given = [r.env for r in group if r.env]
            if given and any(r.env is None for r in group) and not found.get(label, _NONE).env:
                pooled.setdefault(label, f"{label}: -E {' '.join(given[0])}")
    if not pooled:
        return []
    return [
        f"some runs of {_listed(pooled)} come from files that did not record their -E "
        f"settings (an older edgeprof), pooled with runs under recorded ones "
        f"({'; '.join(list(pooled.values())[:4])}): nothing says they ran under the same"
    ]


_NONE = _Differs(target=False, command=False, env=False)


def _listed(labels: Mapping[str, object]) -> str:
    names = list(labels)
    return ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
