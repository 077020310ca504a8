"""Docker backend figures: its wall-time overhead over `docker run --rm` of the same image, as a
ratio of the two measured alternately in one run, and the time of a run whose environment is
unchanged (no build) against the first run.

    DOCKER_HOST=unix:///path/docker.sock python benchmarks/docker_overhead.py \\
        --image IMAGE --base-image PYTHON_IMAGE [-n 20]

Uses the docker CLI for the anchor and edgeprof's console script beside this interpreter (as a
user runs it) for edgeprof.  Bytecode is compiled first, as an installed copy has it.
"""

from __future__ import annotations

import argparse
import compileall
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PY = sys.executable
REPO = Path(__file__).resolve().parent.parent
_SCRIPT = Path(PY).parent / "edgeprof"
EDGEPROF = [str(_SCRIPT)] if _SCRIPT.exists() else [PY, "-m", "edgeprof"]


def timed(argv: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--image", required=True, help="an image with /bin/true")
    ap.add_argument("--base-image", required=True, help="an image with python3")
    ap.add_argument("-n", type=int, default=20)
    a = ap.parse_args()
    docker = shutil.which("docker") or "docker"

    anchor = [docker, "run", "--rm", "--network", "none", a.image, "true"]
    compileall.compile_dir(str(REPO / "edgeprof"), quiet=1)
    ours = [
        *EDGEPROF,
        "run",
        "--backend",
        "docker",
        "--image",
        a.image,
        "--docker-args",
        "--network none",
        "--",
        "true",
    ]
    timed(anchor)
    timed(ours)
    t_anchor: list[float] = []
    t_ours: list[float] = []
    for _ in range(a.n):  # alternately: a drift of the machine hits both alike
        t_anchor.append(timed(anchor))
        t_ours.append(timed(ours))
    # The same container runs as one sweep in one edgeprof process: start-up paid once.
    repeat = max(2, a.n)
    sweep = [
        *ours[: ours.index("--")],
        "--repeat",
        str(repeat),
        "--out",
        "SWEEP",
        *ours[ours.index("--") :],
    ]
    with tempfile.TemporaryDirectory() as d:
        sweep[sweep.index("SWEEP")] = str(Path(d) / "sweep")
        per_run = timed(sweep) / repeat
    startup = statistics.median(
        timed([PY, "-c", "import edgeprof.cli.run, edgeprof.backends.docker"]) for _ in range(a.n)
    )

    with tempfile.TemporaryDirectory() as d:
        app = Path(d) / "app"
        app.mkdir()
        (app / "main.py").write_text(f"print('run at {time.time()}')\n")
        env_run = [
            *EDGEPROF,
            "run",
            "--backend",
            "docker",
            "--base-image",
            a.base_image,
            "--dir",
            str(app),
            "--prerun",
            "python3 -c 'print(1)'",
            "--docker-args",
            "--network none",
            "--",
            "python3",
            "main.py",
        ]
        first = timed(env_run)
        again = [timed(env_run) for _ in range(3)]

    ms = 1000
    anchor_ms, ours_ms = statistics.median(t_anchor) * ms, statistics.median(t_ours) * ms
    print(f"docker run --rm IMAGE true (median of {a.n}) {anchor_ms:8.1f} ms")
    print(f"edgeprof run --backend docker    (median)  {ours_ms:8.1f} ms")
    print(f"  ratio to docker run --rm                 {ours_ms / anchor_ms:8.2f}")
    print(f"  overhead over docker run --rm            {ours_ms - anchor_ms:8.1f} ms")
    print(f"  Python with edgeprof's run and Docker    {startup * ms:8.1f} ms")
    print(f"a sweep of {repeat} in one edgeprof, per run   {per_run * ms:8.1f} ms")
    print(f"  ratio to docker run --rm                 {per_run * ms / anchor_ms:8.2f}")
    print(f"environment run, first (builds the image)  {first * ms:8.1f} ms")
    print(f"environment run, unchanged (no build)      {statistics.median(again) * ms:8.1f} ms")


if __name__ == "__main__":
    main()
