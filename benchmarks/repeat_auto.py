"""``--repeat auto``'s stopping rule on pairs drawn from known distributions.

The statistician's simulation (their ``sim.py``), with the per-look level a choice: each
pair starts at ``--min-runs`` runs a side, and a round more of both is drawn until a look
resolves it (:func:`edgeprof.analysis.repeats.resolve`: different, or within ``±target``)
or it reaches ``--max-runs``.  It prints, per case, the share of pairs called different,
equivalent, or left open, and the mean runs a side:

* identical cells (normal, CV 2, 5, 10, 20 %): "different" is the false-positive rate;
* a real 10 % difference at a CV of 5 %, 5 % at 5 %, 10 % at 10 %: the cost in runs.

    python benchmarks/repeat_auto.py [--level plan|95|POCOCK_ALPHA] [--pairs N]

``plan`` (the default) is :func:`~edgeprof.analysis.repeats.look_confidence`; ``95`` the
uncorrected 95 % at every look (the rule before it); a number such as ``0.012`` a constant
per-look alpha (Pocock-type).  No root, no cgroup: pure arithmetic, seeded (seed 1).
"""

from __future__ import annotations

import argparse
import random
import statistics

from edgeprof.analysis.repeats import Resolution, look_confidence, resolve

MIN_RUNS, MAX_RUNS, TARGET = 3, 10, 0.05
IDENTICAL = (0.02, 0.05, 0.10, 0.20)
APART = ((0.05, 0.10), (0.05, 0.05), (0.10, 0.10))  # (CV, difference)


def trial(rng: random.Random, cv: float, delta: float, level: float) -> tuple[Resolution, int]:
    a = [rng.gauss(1, cv) for _ in range(MIN_RUNS)]
    b = [rng.gauss(1 + delta, cv) for _ in range(MIN_RUNS)]
    while True:
        # The ranking puts the smaller median first, as the sweep's does.
        x, y = (a, b) if statistics.median(a) <= statistics.median(b) else (b, a)
        _, how = resolve(x, y, TARGET, level)
        if how is not Resolution.UNRESOLVED or len(a) >= MAX_RUNS:
            return how, len(a)
        a.append(rng.gauss(1, cv))
        b.append(rng.gauss(1 + delta, cv))


def line(rng: random.Random, what: str, cv: float, delta: float, level: float, n: int) -> str:
    res = [trial(rng, cv, delta, level) for _ in range(n)]

    def share(how: Resolution) -> float:
        return sum(r is how for r, _ in res) / n * 100

    return (
        f"{what:<22} CV {cv:4.0%}: different {share(Resolution.DIFFERENT):5.1f}%  "
        f"equivalent {share(Resolution.EQUIVALENT):5.1f}%  "
        f"open {share(Resolution.UNRESOLVED):5.1f}%  "
        f"mean runs {statistics.fmean(k for _, k in res):.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--level", default="plan")
    parser.add_argument("--pairs", type=int, default=5000)
    args = parser.parse_args()
    level = {"plan": look_confidence(MIN_RUNS, MAX_RUNS), "95": 0.95}.get(args.level)
    if level is None:
        level = 1 - float(args.level)
    rng = random.Random(1)
    print(f"per-look confidence {level:.5f}, {args.pairs} pairs each")
    for cv in IDENTICAL:
        print(line(rng, "identical", cv, 0.0, level, args.pairs))
    for cv, delta in APART:
        print(line(rng, f"{delta:.0%} apart", cv, delta, level, args.pairs))


if __name__ == "__main__":
    main()
