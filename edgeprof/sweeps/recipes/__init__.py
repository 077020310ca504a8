"""Recipes: the files an existing engine needs to run a sweep's parts on many machines (a
GitHub Actions matrix, a Kubernetes indexed Job, a Slurm job array) and merge them.

Every engine runs the same two commands: ``edgeprof run … --shard I/N --out PART`` once per
part, then ``edgeprof merge PART… --out SWEEP`` with the sweep's budgets, so the gate is the
merged sweep's (:mod:`edgeprof.sweeps.merge`).  Only how ``I`` reaches the command and
how the parts come back differ: that, and the resources a part asks for, are each engine's
module.  A recipe is text rendered from a checked plan; nothing here starts anything.
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from ...errors import ConfigError
from ...model import Limits
from ...names import has_control
from ...units import format_binary

PART_CPU_MARGIN = 1
"""Whole CPUs a part asks for beyond the sweep's largest ``--cpus``: edgeprof's own process
(the runner, the sampler) runs beside the pinned cores, never on the workload's time."""

PART_MEMORY_MARGIN = 256 << 20
"""Memory a part asks for beyond the sweep's largest ``--memory``: edgeprof's own process
(the CLI's resident set was 22–28 MiB on our hosts) and the page cache of its files, which
the run's group does not hold."""


@dataclass(frozen=True)
class Sweep:
    """A sweep to split, as a recipe renders it.

    ``options`` are ``edgeprof run``'s options without those a part's engine sets
    (``--shard``, ``--out``); ``command`` the workload; ``gate`` the options ``merge`` takes
    over (budgets, the CI summary and JUnit files, the HTML report)."""

    parts: int
    options: tuple[str, ...]
    command: tuple[str, ...]
    gate: tuple[str, ...]
    cpus: int
    """Whole CPUs one part asks its engine for."""
    memory: int
    """Bytes of memory one part asks its engine for."""
    edgeprof: str = "edgeprof"
    """The edgeprof executable on the machines that run the parts."""
    gpus: int = 0
    """GPUs one part asks its engine for (``--gpus N``)."""
    origin: str = ""
    """The ``edgeprof recipe`` command line that rendered the recipe, for its header."""
    largest: tuple[int | None, int | None] = (None, None)
    """The sweep's largest ``--cpus`` (whole CPUs, rounded up) and ``--memory`` (bytes);
    ``None`` where a setting has none (:func:`largest_limits`): what a machine of a fixed
    size (a hosted runner) must hold."""

    def part_line(self, var: str, out_prefix: str, executable: str | None = None) -> str:
        """Part ``$var``'s command as a shell line: its results in ``out_prefix`` followed by
        the part's index.  ``executable``: shell text for edgeprof (default: the quoted
        :attr:`edgeprof`)."""
        index = f'"${{{var}}}"'
        words = [
            executable or shlex.quote(self.edgeprof),
            "run --shard",
            f"{index}/{self.parts}",
            "--out",
            shlex.quote(out_prefix) + index,
            shlex.join(self.options),
            "--",
            shlex.join(self.command),
        ]
        return " ".join(w for w in words if w)

    def merge_command(
        self, part_dirs: Sequence[str], out: str, *, files_in_out: bool = False
    ) -> list[str]:
        """``merge``'s words.  ``files_in_out``: the gate's files (``--html``, ``--summary``,
        ``--junit``) are written into ``out`` under their own names, for an engine that
        keeps only ``out`` (an uploaded artifact, a volume): written where they were named,
        they had stayed on the merge job's runner or in its container."""
        gate = _files_into(self.gate, out) if files_in_out else list(self.gate)
        return [self.edgeprof, "merge", *part_dirs, "--out", out, *gate]

    def describe(self) -> str:
        """One line for a recipe's header: what each part asks for."""
        gpus = f" and {self.gpus} GPU(s)" if self.gpus else ""
        return f"{self.parts} parts, each {self.cpus} CPUs and {format_binary(self.memory)}{gpus}"

    @property
    def memory_mib(self) -> int:
        """The part's memory in whole MiB, rounded up: the unit both Kubernetes (``Mi``) and
        Slurm (``--mem``) take."""
        return -(-self.memory // (1 << 20))


GATE_FILES = ("--html", "--summary", "--junit")
"""The gate's options that name a file ``merge`` writes."""

MERGE_WRITES = ("sweep.json", "runs.csv", "cells.csv", "report.md")
"""The files ``merge`` writes in its ``--out`` (:func:`edgeprof.report.merged.merge_saved`)."""


def _files_into(gate: Sequence[str], out: str) -> list[str]:
    """``gate`` with each file of :data:`GATE_FILES` moved into the directory ``out``."""
    words: list[str] = []
    named: dict[str, str] = {}
    rest = iter(gate)
    for word in rest:
        option, eq, value = word.partition("=")
        if option not in GATE_FILES:
            words.append(word)
            continue
        given = value if eq else next(rest, "")
        name = PurePosixPath(given).name
        if name in MERGE_WRITES or name in named:
            clash = f"{named[name]}'s file" if name in named else f"merge's own {name}"
            raise ConfigError(
                f"{option} {given}: it goes into the merged sweep's directory as {name}, as "
                f"{clash} does: name it otherwise"
            )
        named[name] = option
        words += [option, f"{out}/{name}"]
    return words


def largest_limits(limits: Sequence[Limits]) -> tuple[int | None, int | None]:
    """The whole CPUs (``--cpus`` rounded up) and the memory of the sweep's largest setting;
    ``None`` for a resource some setting leaves unlimited: what one part must be given, at
    the least, to run every setting."""
    cpus = [s.cpus for s in limits]
    memory = [s.memory for s in limits]
    return (
        None if None in cpus else math.ceil(max(c for c in cpus if c is not None)),
        None if None in memory else max(m for m in memory if m is not None),
    )


def part_resources(
    limits: Sequence[Limits], cpus: int | None = None, memory: int | None = None
) -> tuple[int, int]:
    """The whole CPUs and the memory one part asks for: given, else the largest limit of the
    sweep's settings plus edgeprof's margins.  Each setting must limit what is not given:
    a part sized for an unlimited run would take whatever the engine gives it."""
    most_cpus, most_memory = largest_limits(limits)
    if cpus is None:
        if most_cpus is None:
            raise ConfigError(
                "a setting of the sweep has no --cpus: say how many CPUs a part gets with "
                "--part-cpus N"
            )
        cpus = most_cpus + PART_CPU_MARGIN
    if memory is None:
        if most_memory is None:
            raise ConfigError(
                "a setting of the sweep has no --memory: say how much memory a part gets "
                "with --part-memory SIZE"
            )
        memory = most_memory + PART_MEMORY_MARGIN
    if cpus < 1:
        raise ConfigError(f"--part-cpus {cpus}: a part needs at least one CPU")
    return cpus, memory


def part_gpus(selection: str | None) -> int:
    """The GPUs one part asks for: ``--gpus N`` (a count: the engine gives each part its own
    N, which the part sees as its first N); none without ``--gpus`` or with ``none``.  ``all``
    and GPUs by index or UUID name one machine's GPUs, not an amount to ask for."""
    if selection is None or selection == "none":
        return 0
    if selection.isdigit():
        if int(selection) == 0:  # every part's run refuses it: a count of no GPU
            raise ConfigError("--gpus 0 in a part: give a count of 1 or more, or --gpus none")
        return int(selection)
    raise ConfigError(
        f"--gpus {selection} in a part: it names one machine's GPUs; each part gets its GPUs "
        "from its engine: give --gpus N"
    )


def one_line(words: Sequence[str]) -> str:
    """``words`` as one line of shell text, for a recipe's header comment: each quoted as
    :func:`shlex.quote` does, and a word holding a control character as bash's ``$'…'``
    (``$'x\\ny'``).  ``shlex.join`` keeps a newline as it is, which ended the comment: an
    argument ``$'x\\ntouch PWN #'`` had run ``touch PWN`` from ``submit.sh``, and a
    multi-line ``python3 -c`` broke every recipe (a security review's)."""
    return " ".join(_word(w) for w in words)


def _word(word: str) -> str:
    if not has_control(word):
        return shlex.quote(word)
    escaped = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\t": "\\t", "\r": "\\r"}
    return "$'" + "".join(
        escaped.get(c) or (_code(c) if has_control(c) else c) for c in word
    ) + "'"


def _code(c: str) -> str:
    return f"\\x{ord(c):02x}" if ord(c) < 128 else f"\\u{ord(c):04x}"


def dump_yaml(doc: Mapping[str, Any]) -> str:
    """``doc`` as block YAML, in its own key order, with no anchors: a step or a size used
    twice is written twice, as a reader of the file (and not every engine reads anchors)
    expects."""
    import yaml

    class _Plain(yaml.SafeDumper):
        def ignore_aliases(self, data: Any) -> bool:
            return True

    return yaml.dump(dict(doc), Dumper=_Plain, sort_keys=False, width=1 << 20)


Files = dict[str, str]
"""A recipe: file name → text."""

Renderer = Callable[[Sweep, Mapping[str, str]], tuple[Files, list[str]]]
"""An engine's: the sweep and its options (``--image`` …) → the files and the lines that
say how to start them (``{out}`` in a line: the directory the files are written in).  Each
engine's module has its ``render`` and its ``OPTIONS``: every option it takes, with its
default."""
