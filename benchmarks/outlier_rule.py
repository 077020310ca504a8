"""The outlier rule of a cell's repeats on samples drawn from known distributions.

For each number of runs: the share of samples in which the rule names any outlier when
there is none (false alarms), and the share in which it names exactly the one run made
1.5× slower (power).  Three columns:

1. false alarms of the test alone (no minimum deviation), logarithms normal, σ = 0.3;
2. false alarms of the whole rule on quiet noise: normal, 3 % of the mean;
3. power: 2 % noise (log-normal), one run in a random place 1.5× the others.

    python benchmarks/outlier_rule.py [--quick] [--json FILE]

No root, no cgroup: pure arithmetic, seeded (the same figures on every machine).
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from edgeprof.analysis import outliers as rule

SIZES = (3, 4, 5, 6, 8, 10, 20, 40)


def rates(n: int, samples: int, seed: int) -> dict[str, float]:
    rng = random.Random(seed)
    minimum, rule.MIN_DEVIATION = rule.MIN_DEVIATION, 0.0
    try:
        test_alone = sum(
            bool(rule.outliers([rng.lognormvariate(0, 0.3) for _ in range(n)]))
            for _ in range(samples)
        )
    finally:
        rule.MIN_DEVIATION = minimum
    quiet = sum(bool(rule.outliers([rng.gauss(1, 0.03) for _ in range(n)])) for _ in range(samples))
    found = 0
    for _ in range(samples):
        values = [rng.lognormvariate(0, 0.02) for _ in range(n)]
        k = rng.randrange(n)
        values[k] *= 1.5
        found += rule.outliers(values) == [k]
    return {
        "false_alarms_test": test_alone / samples,
        "false_alarms_quiet": quiet / samples,
        "power_1.5x": found / samples,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 samples per size, not 5000")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    samples = 200 if args.quick else 5000
    print(
        f"Outlier rule: α = {rule.ALPHA:g}, minimum deviation {rule.MIN_DEVIATION:.0%}, "
        f"{samples} samples per size"
    )
    print(
        f"{'RUNS':>4}  {'FALSE ALARMS (TEST)':>19}  {'FALSE ALARMS (3 % NOISE)':>24}  "
        f"{'FOUND 1.5x AMONG 2 %':>20}"
    )
    table = {}
    for n in SIZES:
        r = rates(n, samples, seed=n)
        table[n] = r
        print(
            f"{n:>4}  {r['false_alarms_test']:>19.2%}  {r['false_alarms_quiet']:>24.2%}  "
            f"{r['power_1.5x']:>20.1%}"
        )
    if args.json is not None:
        args.json.write_text(json.dumps({"samples": samples, "sizes": table}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
