"""The counts of a run request, checked before anything is made: how many runs (``--repeat
N`` or ``auto`` with its bounds, ``--warmup``) and which part (``--shard I/N``)."""

from __future__ import annotations

from pathlib import Path

from ..errors import ConfigError
from ..units import parse_fraction
from .plan import AutoRepeat

MAX_RUNS = 100_000
"""The most runs per cell that ``--repeat``, ``--warmup`` and ``--max-runs`` may ask for,
and so the most parts a sweep splits into (``--shard I/N``, ``recipe --shards``: a part is
a set of rounds).  Far above any real use: a run of ``/bin/true`` costs ~0.24 s here, so
100 000 runs of one cell take ~7 hours.  A sweep's plan (one step per run) is made before
anything starts: 100 000 measured and 100 000 warm-up rounds of one cell took 0.8 s and
93 MB here, while ``--repeat 99999999999`` died of a MemoryError (after making ``--out``)
and ``recipe --shards 99999999999`` ran past 60 s and 3.9 GB."""


def check_count(value: int, option: str) -> int:
    """``value`` if it is at most :data:`MAX_RUNS`; a :class:`ConfigError` naming ``option``
    otherwise, before anything is made (the least is each option's: :class:`SweepPlan`)."""
    if value > MAX_RUNS:
        raise ConfigError(f"{option} {value}: must be at most {MAX_RUNS}")
    return value


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/3"`` → (2, 3); the range is :class:`SweepPlan`'s to check."""
    index, slash, count = text.strip().partition("/")
    try:
        if not slash:
            raise ValueError
        return int(index), int(count)
    except ValueError:
        raise ConfigError(f"--shard {text}: expected I/N, e.g. 2/3") from None


def repeats(
    repeat: int | str, min_runs: int | None, max_runs: int | None, target: str | None
) -> tuple[int, AutoRepeat | None]:
    """``--repeat N``, or ``--repeat auto`` with its bounds and precision."""
    if isinstance(repeat, str) and repeat.strip().lower() == "auto":
        default = AutoRepeat()
        auto = AutoRepeat(
            min_runs=default.min_runs if min_runs is None else min_runs,
            max_runs=default.max_runs if max_runs is None else max_runs,
            target=default.target if target is None else parse_fraction(target, "--target", 1),
        )
        return check_count(auto.max_runs, "--max-runs"), auto
    given = [n for n, v in (("--min-runs", min_runs), ("--max-runs", max_runs),
                            ("--target", target)) if v is not None]  # fmt: skip
    if given:
        raise ConfigError(f"{given[0]} goes with --repeat auto")
    try:
        repeat = int(repeat)
    except ValueError:
        raise ConfigError(f"--repeat {repeat}: expected a number of runs or auto") from None
    return check_count(repeat, "--repeat"), None


def check_dir(
    env_dir: Path | str | None,
    *,
    base_image: str | None,
    image: str | None,
    dockerfile: Path | None,
    template: bool,
) -> None:
    """``--dir`` is copied into the image built from ``--base-image``, and only there: with
    ``--image`` it had been dropped without a word (the workload then failed on its own
    missing script inside the container).  ``template``: ``-e`` refuses ``--dir`` itself,
    naming the template."""
    if env_dir is None or base_image or template:
        return
    where = f"--dir {env_dir} is copied into the image built from --base-image"
    if dockerfile is not None:
        raise ConfigError(
            f"{where}, not into one from --dockerfile: its build context is "
            f"{dockerfile.parent} (COPY the files there), so leave out --dir"
        )
    if image is not None:
        raise ConfigError(
            f"{where}; --image runs {image} as it is: build from it instead "
            f"(--base-image {image} --dir {env_dir})"
        )
    # Alone it may mean "run in this directory": "give --base-image" had then been answered
    # by "need --backend docker" on a host without Docker (a verifier's circle).
    raise ConfigError(
        f"{where}: give --base-image to build one with it (Docker), or --cwd {env_dir} to "
        "run in it on this host"
    )
