"""Docker backend figures: its wall-time overhead over `docker run --rm` of the same image,
and the time of a run whose environment is unchanged (no build) against the first run.

    DOCKER_HOST=unix:///path/docker.sock python benchmarks/docker_overhead.py \\
        --image IMAGE --base-image PYTHON_IMAGE [-n 10]

Uses the docker CLI for the anchor and `python -m edgeprof run --backend docker` for edgeprof.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PY = sys.executable


def timed(argv: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--image", required=True, help="an image with /bin/true")
    ap.add_argument("--base-image", required=True, help="an image with python3")
    ap.add_argument("-n", type=int, default=10)
    a = ap.parse_args()
    docker = shutil.which("docker") or "docker"

    anchor = [docker, "run", "--rm", "--network", "none", a.image, "true"]
    ours = [
        PY,
        "-m",
        "edgeprof",
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
    t_anchor = [timed(anchor) for _ in range(a.n)]
    t_ours = [timed(ours) for _ in range(a.n)]
    startup = statistics.median(timed([PY, "-c", "import edgeprof.cli"]) for _ in range(a.n))

    with tempfile.TemporaryDirectory() as d:
        app = Path(d) / "app"
        app.mkdir()
        (app / "main.py").write_text(f"print('run at {time.time()}')\n")
        env_run = [
            PY,
            "-m",
            "edgeprof",
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
    print(
        f"docker run --rm IMAGE true (median of {a.n}) {statistics.median(t_anchor) * ms:8.1f} ms"
    )
    print(f"edgeprof run --backend docker    (median)  {statistics.median(t_ours) * ms:8.1f} ms")
    print(f"  edgeprof start-up (import edgeprof.cli)  {startup * ms:8.1f} ms")
    print(
        f"  overhead over docker run --rm            "
        f"{(statistics.median(t_ours) - statistics.median(t_anchor)) * ms:8.1f} ms"
    )
    print(f"environment run, first (builds the image)  {first * ms:8.1f} ms")
    print(f"environment run, unchanged (no build)      {statistics.median(again) * ms:8.1f} ms")


if __name__ == "__main__":
    main()
