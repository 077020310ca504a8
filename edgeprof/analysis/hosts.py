"""Which host measured a run, and when figures from different hosts may be compared.

A run's *host kind* is what makes its figures this machine's: the CPU model and feature
flags, the cores, the memory, the kernel, the cgroup mechanism and edgeprof's version (the
host name is not part of it: two identical CI runners are one kind).  The speed probe
(:attr:`~edgeprof.model.HostInfo.speed`) is compared apart, with a tolerance: one host's
speed drifts.

The rule: a ranking is made of models measured alike.  When every model of a ranking was
measured on the same kinds of host (a sweep split by rounds with ``--shard``: each host a
block of the design), the ranking stands and the notes say the absolute figures mix hosts.
When the models' hosts differ (model A only on one kind, B only on another), the ranking
compares the hosts as much as the models, and says so.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence

from ..model import RunResult
from ..units import counted, format_binary

HostKind = tuple[object, ...]

SPEED_SPREAD = 0.10
"""Speed probes further apart than this (max / min − 1) are said: more than a probe's own
noise of a few per cent."""


def host_kind(r: RunResult) -> HostKind:
    """The machine's fields (:func:`machine`), the mechanism, then :func:`made_by`'s two,
    flat: an older file's unknown origin (``None``) is then unknown to :func:`_agree` as its
    missing memory is (a tuple of it had been a difference: an old baseline of this very
    machine read "different hosts" again once results recorded their origin)."""
    h = r.host
    return (h.cpu_model, h.cpu_flags, h.cpus, h.memory_bytes, h.kernel, r.mechanism,
            *made_by(r))  # fmt: skip


def made_by(r: RunResult) -> tuple[str, str | None]:
    """The edgeprof that measured ``r``: its version and where its code came from (one
    version's code changes for weeks; ``None``: not known, as in older files)."""
    return (r.edgeprof_version, None if r.edgeprof_origin is None else r.edgeprof_origin.source)


def versions(runs: Iterable[RunResult], sources: bool) -> str:
    """The edgeprof versions of ``runs`` in first-seen order, ``0.1.0``; with ``sources``
    (where the compared runs' versions alone do not tell them apart) each with its code's
    origin: ``0.1.0 (git 6c8a290d1e2f)``, ``0.1.0 (origin unknown)``."""
    if not sources:
        return ", ".join(dict.fromkeys(r.edgeprof_version for r in runs))
    return ", ".join(dict.fromkeys(f"{v} ({_short(s)})" for v, s in map(made_by, runs)))


def _short(source: str | None) -> str:
    """A checkout's commit cut to 12 hex digits, enough to name it in a note (the file
    keeps it whole); any other origin as it is."""
    if source is None:
        return "origin unknown"
    head, _, commit = source.partition(" ")
    return f"git {commit[:12]}" if head == "git" and commit.isalnum() else source


def sources_differ(*sides: Iterable[RunResult]) -> bool:
    """Whether runs of one edgeprof version came from different code: ``made_by`` tells
    more of them apart than ``edgeprof_version`` does."""
    runs = [r for side in sides for r in side]
    return len({made_by(r) for r in runs}) > len({r.edgeprof_version for r in runs})


def describe(r: RunResult, version: bool = True, source: bool = False) -> str:
    """``Intel Xeon, 2 CPUs, 23.6GiB, Linux 6.18.4, cgroup1, edgeprof 0.9.0`` (without
    ``version``: no edgeprof, said apart; with ``source``: its code's origin too,
    ``edgeprof 0.9.0 (git 6c8a290d1e2f)``, where the runs described differ in it alone)."""
    h = r.host
    memory = "" if h.memory_bytes is None else f", {format_binary(h.memory_bytes)}"
    made = f", edgeprof {versions([r], source)}" if version else ""
    return (
        f"{h.cpu_model or 'unknown CPU'}, {h.cpus} CPUs{memory}, Linux {h.kernel}, "
        f"{r.mechanism}{made}"
    )


def _agree(a: HostKind, b: HostKind) -> bool:
    """Equal in every field both know: a field one side did not record (``None``) is unknown,
    not a difference."""
    return all(x == y or x is None or y is None for x, y in zip(a, b, strict=True))


def kinds(runs: Iterable[RunResult]) -> dict[HostKind, RunResult]:
    """Each host kind among ``runs`` → its first run (to describe it), in first-seen order.

    A kind with a field its runs did not record (an older file's ``host.memory_bytes`` and
    ``host.cpu_flags``) is one with a kind that agrees with it in every field both know, the
    one that knows most: a 7f83ae4 baseline of this very machine had been "different hosts"
    to ``compare`` and "2 kinds of host" to ``--resume``, for its missing memory alone."""
    seen: dict[HostKind, RunResult] = {}
    for r in runs:
        seen.setdefault(host_kind(r), r)
    fuller = sorted(seen, key=lambda k: sum(v is None for v in k))  # stable: first-seen ties
    kept: list[HostKind] = []
    for k in fuller:
        if not any(_agree(k, other) for other in kept):
            kept.append(k)
    return {k: r for k, r in seen.items() if k in kept}


def kind_of(r: RunResult, every: Mapping[HostKind, RunResult]) -> HostKind:
    """The kind of :func:`kinds`' ``every`` that ``r`` is of (its own, or the one it was
    merged into)."""
    mine = host_kind(r)
    return mine if mine in every else next(k for k in every if _agree(mine, k))


def _by_kind(
    runs: Iterable[RunResult], every: Mapping[HostKind, RunResult]
) -> dict[HostKind, RunResult]:
    """Each kind of ``every`` among ``runs`` → its first run of ``runs`` (to describe them
    by what they recorded)."""
    out: dict[HostKind, RunResult] = {}
    for r in runs:
        out.setdefault(kind_of(r, every), r)
    return out


def mixed_hosts_note(by_model: Mapping[str, Sequence[RunResult]]) -> str | None:
    """A ranking's note when its models were not all measured on the same kinds of host."""
    every = kinds(r for runs in by_model.values() for r in runs)
    sets = {name: frozenset(_by_kind(runs, every)) for name, runs in by_model.items()}
    if len(set(sets.values())) <= 1:
        return None
    source = sources_differ(every.values())
    if len({frozenset(map(_measured_on, s)) for s in sets.values()}) <= 1:
        # One machine and mechanism, another edgeprof: not "different hosts" (a user's runs
        # made before and after a commit on this very machine had read so).
        made = list(dict.fromkeys(made_by(r) for r in every.values()))
        ids = {m: f"edgeprof {i + 1}" for i, m in enumerate(made)}
        by = "; ".join(
            f"{name} by {', '.join(dict.fromkeys(ids[made_by(every[k])] for k in s))}"
            for name, s in sets.items()
        )
        each = "; ".join(
            f"{ids[made_by(r)]}: {versions([r], source)}"
            for r in {made_by(r): r for r in every.values()}.values()
        )
        return (
            f"the models were measured on one host by different edgeprof versions ({by}; "
            f"{each}): this ranking compares how the versions measure as much as the "
            "models; measure every model with one edgeprof"
        )
    names = {k: f"host {i + 1}" for i, k in enumerate(every)}
    where = "; ".join(
        f"{name} on {', '.join(names[k] for k in every if k in s)}" for name, s in sets.items()
    )
    hosts = "; ".join(f"{names[k]}: {describe(r, source=source)}" for k, r in every.items())
    return (
        f"the models were measured on different hosts ({where}; {hosts}): this ranking "
        "compares the hosts as much as the models; measure every model on every host "
        "(run --shard I/N splits the rounds so that each host does)"
    )


def resumed_hosts_note(kept: Sequence[RunResult], made: Sequence[RunResult]) -> str | None:
    """A resumed sweep's note when the runs it kept and those it made ran on different kinds
    of host (a CI job resumed on another runner): its cells pool both."""
    every = kinds([*kept, *made])
    if len(every) <= 1:
        return None
    parts, source = [], sources_differ(every.values())
    for k, r in every.items():
        named = [n for n, rs in (("kept", kept), ("made now", made)) if k in _by_kind(rs, every)]
        parts.append(f"{describe(r, source=source)} (runs {' and '.join(named)})")
    return (
        f"the resumed sweep's runs ran on {len(every)} kinds of host: {'; '.join(parts)}: "
        "its cells' figures mix the hosts"
    )


def machine(kind: HostKind) -> HostKind:
    """The machine of a host kind (:func:`host_kind`), without how edgeprof measured on it."""
    return kind[:5]


def _measured_on(kind: HostKind) -> HostKind:
    """The machine and mechanism of a host kind, without which edgeprof measured."""
    return kind[:6]


def _same_machines(a: Iterable[HostKind], b: Iterable[HostKind]) -> bool:
    """Whether each machine of ``a`` agrees with one of ``b`` and the other way round, a
    field one side did not record being unknown (:func:`_agree`), not a difference."""
    ma, mb = {machine(k) for k in a}, {machine(k) for k in b}
    return all(any(_agree(x, y) for y in mb) for x in ma) and all(
        any(_agree(y, x) for x in ma) for y in mb
    )


BACKEND_DIFFERENCE = (
    "a Docker run's command is the image's (its interpreter and libraries, not this host's), "
    "its peak memory includes runc init's set-up (about 4 MiB) and its wall time starts at "
    "the container's StartedAt (docs/method.md); the cgroup and process backends run this "
    "host's command from the moment it is in its group (the process backend holds cpus as "
    "whole cores, not a quota): a change may be the backends', not the model's"
)


def sides_note(base: Sequence[RunResult], cur: Sequence[RunResult]) -> str | None:
    """What ``compare`` says when its two sides were not measured alike: on different
    machines, or on the same machine by different backends or edgeprof versions."""
    every = kinds([*base, *cur])
    b, c = _by_kind(base, every), _by_kind(cur, every)
    if b.keys() == c.keys():
        return None
    if not _same_machines(b, c):
        return (
            "the baseline and the current results ran on different hosts ("
            + "; ".join(describe(r) for r in b.values())
            + " → "
            + "; ".join(describe(r) for r in c.values())
            + "): a change may be the host's, not the model's"
        )
    how = ", ".join(dict.fromkeys(f"{r.backend} ({r.mechanism})" for r in b.values()))
    now = ", ".join(dict.fromkeys(f"{r.backend} ({r.mechanism})" for r in c.values()))
    if how != now:
        return (
            f"the baseline and the current results ran on the same host by different backends "
            f"({how} → {now}): {BACKEND_DIFFERENCE}"
        )
    sources = sources_differ(b.values(), c.values())
    was, is_ = versions(b.values(), sources), versions(c.values(), sources)
    return (
        f"the baseline and the current results ran on the same host by different edgeprof "
        f"versions ({was} → {is_}): a change may be how it measures, not the model's"
    )


def same_runs_note(base: Sequence[RunResult], cur: Sequence[RunResult]) -> str | None:
    """What ``compare`` says when both sides are the very same runs (``compare sw sw``, or a
    copy of a sweep): "0 regressions" had been said of runs compared with themselves, with
    no word (a tester's).  Runs are the same when every figure is: only where their sample
    files are may differ (a copied sweep's)."""

    def ids(runs: Sequence[RunResult]) -> list[RunResult]:
        where = {"samples": None, "gpu": None}
        bare = [dataclasses.replace(r, **where) for r in runs]  # type: ignore[arg-type]
        return sorted(bare, key=lambda r: (r.started_at, r.name or "", r.wall_s))

    if not base or len(base) != len(cur) or ids(base) != ids(cur):
        return None
    return (
        f"the baseline and the current results are the same {counted(len(cur), 'run')} "
        "(every figure and start time alike): nothing was measured again, so no change can show"
    )


def shard_notes(shards: Sequence[tuple[str, Sequence[RunResult]]]) -> list[str]:
    """What a merge says of its shards' hosts: their kinds, edgeprof's versions, and their
    speed probes.  A version is not a host: a part measured by another edgeprof had been
    said as "2 kinds of host" whose rankings "compare like with like", more than a merge
    of two ways of measuring can hold."""
    notes = []
    every = kinds(r for _, runs in shards for r in runs)
    hosts = _shards_by(shards, lambda r: _measured_on(kind_of(r, every)))
    if len(hosts) > 1:
        each = "; ".join(f"{describe(r, version=False)} ({named})" for r, named in hosts)
        notes.append(
            f"the shards ran on {len(hosts)} kinds of host: {each}. Every shard measured "
            "every model, so the rankings compare like with like; the absolute figures are a "
            "mix of the hosts"
        )
    # By the merged kind's edgeprof: an older part's unknown origin is unknown, not another.
    made = _shards_by(shards, lambda r: kind_of(r, every)[6:])
    if len(made) > 1:
        sources = sources_differ(r for r, _ in made)
        each = "; ".join(f"{versions([r], sources)} ({named})" for r, named in made)
        notes.append(
            f"the shards were measured by {len(made)} edgeprof versions: {each}. A version "
            "may measure differently: the figures mix the versions' ways; run every part with "
            "one edgeprof"
        )
    speeds = [
        (name, statistics.median(s))
        for name, runs in shards
        if (s := [r.host.speed for r in runs if r.host.speed is not None])
    ]
    if len(speeds) > 1:
        lo, hi = min(v for _, v in speeds), max(v for _, v in speeds)
        if lo > 0 and hi / lo - 1 > SPEED_SPREAD:
            each = ", ".join(f"{name} {v:g}" for name, v in speeds)
            # One kind of host (a user's three shards on one machine): it was busier for some
            # shards than others, not "faster and slower hosts".
            mix = (
                "one kind of host, busier for some shards: the absolute figures mix its busy "
                "and quiet times"
                if len(hosts) == 1
                else "the absolute figures mix faster and slower hosts"
            )
            notes.append(
                f"the hosts' speed probes differ by {(hi / lo - 1) * 100:.0f}% across the "
                f"shards ({each} M loops/s): {mix}"
            )
    return notes


def _shards_by(
    shards: Sequence[tuple[str, Sequence[RunResult]]], key: Callable[[RunResult], object]
) -> list[tuple[RunResult, str]]:
    """Each value of ``key`` among the shards' runs: its first run (to describe it) and the
    shards that have it (``shard 1/3, shard 2/3``), in first-seen order."""
    seen: dict[object, tuple[RunResult, list[str]]] = {}
    for name, runs in shards:
        for r in runs:
            named = seen.setdefault(key(r), (r, []))[1]
            if name not in named:
                named.append(name)
    return [(r, ", ".join(named)) for r, named in seen.values()]
