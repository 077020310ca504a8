"""examples/mnist: train.py trains its small CNN on scikit-learn's digits to > 85 % test
accuracy in 2 epochs, and takes its torch thread count from OMP_NUM_THREADS.  Needs torch and
scikit-learn (skipped without them, except in CI).  About 12 s: two runs of train.py, most of
it the torch and scikit-learn imports."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import require

REPO = Path(__file__).resolve().parents[2]
TRAIN = REPO / "examples" / "mnist" / "train.py"
ACC = re.compile(r"^epoch (\d+)/(\d+): loss (\S+)  test accuracy ([0-9.]+)  time ([0-9.]+) s$",
                 re.MULTILINE)


@pytest.fixture(autouse=True)
def _needs_torch_and_sklearn() -> None:
    missing = [m for m in ("torch", "sklearn") if importlib.util.find_spec(m) is None]
    require(not missing, f"examples/mnist needs {', '.join(missing)}: "
                         "pip install torch==2.13.0 scikit-learn (the CPU wheel)")


def _train(*args: str, omp: str | None = None) -> str:
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
    if omp is not None:
        env["OMP_NUM_THREADS"] = omp
    r = subprocess.run([sys.executable, str(TRAIN), *args], capture_output=True, text=True,
                       env=env, timeout=120, cwd=REPO)
    assert r.returncode == 0, f"train.py exited {r.returncode}:\n{r.stdout}\n{r.stderr}"
    return r.stdout


def test_two_epochs_reach_85_percent() -> None:
    out = _train("--epochs", "2", "--batch-size", "64", "--seed", "0")
    epochs = ACC.findall(out)
    assert [(e, n) for e, n, *_ in epochs] == [("1", "2"), ("2", "2")], out
    for _, _, loss, acc, secs in epochs:
        assert float(loss) > 0 and 0 <= float(acc) <= 1 and float(secs) > 0, out
    final = float(epochs[-1][3])
    assert final > 0.85, f"test accuracy {final} after 2 epochs:\n{out}"
    m = re.search(r"^total training time ([0-9.]+) s \(2 epochs\); final test accuracy "
                  r"([0-9.]+)$", out, re.MULTILINE)
    assert m, out
    assert float(m.group(2)) == final
    assert float(m.group(1)) == pytest.approx(sum(float(e[4]) for e in epochs), abs=0.002)


def test_omp_num_threads_sets_torch_threads() -> None:
    out = _train("--epochs", "1", omp="1")
    assert re.search(r"^torch \S+, threads: 1 \(OMP_NUM_THREADS=1\)$", out, re.MULTILINE), out
