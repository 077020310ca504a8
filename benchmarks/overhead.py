"""What edgeprof costs around the workload, side by side with peers measured in the same run.

1. **Start-up.** Whole commands timed by hyperfine (``-N``, no shell; a timing loop of this
   script's own where hyperfine is not installed, and the table says which): ``python -c
   pass`` in edgeprof's interpreter, ``edgeprof --version``, ``edgeprof run -- /bin/true``,
   BenchExec's ``runexec --no-container -- /bin/true`` (BenchExec from PyPI, in a venv of
   this benchmark's own under ``--peers DIR``) and ``/usr/bin/time -v /bin/true``: the mean
   wall time and the mean CPU time (user + system) of each, after three warm-up runs.  The
   commands write their bytecode into a temporary ``PYTHONPYCACHEPREFIX`` removed at the end
   (not the checkout), ``PYTHONDONTWRITEBYTECODE`` unset for them: with it set, every command
   compiled every module it imported, which no installed copy does (with a prefix and no
   writes, ``python -c pass`` took 140–190 ms here against 20–40 ms).
2. **Sampling, end to end.** ``edgeprof run --interval 1/R --out TMP -- sleep D``: the CPU
   time of every thread of edgeprof's process (the scheduler's ``schedstat``, in ns) over
   D − 1 s once the workload runs, as a share of one core; at 10, 100 and 1000 Hz.  Beside
   it, psutil reading one process's CPU times and memory at the same rate (what
   psutil-based profilers do), measured the same way.
3. **A sweep of N short runs** in one edgeprof process: ``edgeprof run --repeat N --out TMP
   -- /bin/true``.  Its wall time against the sum of the workloads' own (``wall_s``), the
   overhead per run, and edgeprof's resident set after run 10 and after run N (read from
   ``/proc`` when the progress line of that run appears); then the same sweep with its
   progress on a pseudo-terminal (the rich display), whose cost is the difference.  runexec
   has no sweep of its own to set beside it (not measured here).

    python benchmarks/overhead.py [--json FILE] [--peers DIR]   # ~3 minutes
    python benchmarks/overhead.py --quick                        # ~30 s: what CI runs

``--peers`` defaults to ``~/.cache/edgeprof-bench/peers``: a cache kept on purpose, so that
BenchExec is downloaded once.

Needs root (cgroups).  Figures are this machine's, never asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pty
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, NamedTuple

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
PY = sys.executable
_SCRIPT = Path(PY).parent / "edgeprof"
EDGEPROF = [str(_SCRIPT)] if _SCRIPT.exists() else [PY, "-m", "edgeprof"]
"""The console script beside the interpreter, as a user runs it."""
BENCHEXEC = "benchexec==3.35"
"""The peer's version, pinned so that its figure means the same thing next time."""


def runexec(peers: Path) -> tuple[str | None, str]:
    """``runexec`` from a venv of the benchmark's own (created on first use), or None and
    why not."""
    exe = peers / "bin" / "runexec"
    if not exe.exists():
        try:
            subprocess.run([PY, "-m", "venv", str(peers)], check=True, capture_output=True)
            subprocess.run(
                [str(peers / "bin" / "python"), "-m", "pip", "install", "-q", BENCHEXEC],
                check=True,
                capture_output=True,
                text=True,
                timeout=600,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            err = getattr(exc, "stderr", "") or str(exc)
            return None, f"not available: pip install {BENCHEXEC}: {err.strip()[-200:]}"
    return str(exe), "runexec (BenchExec 3.35, PyPI)"


def time_commands(cmds: dict[str, list[str]], runs: int) -> tuple[str, dict[str, Timing]]:
    """Mean wall seconds and mean CPU seconds (user + system) of each command: hyperfine's
    where it is installed, else a timing loop that interleaves the commands (one run of each
    in turn, so that a change in the host's load falls on all of them alike)."""
    hyperfine = shutil.which("hyperfine")
    if hyperfine is not None:
        with tempfile.NamedTemporaryFile(suffix=".json") as out:
            argv = [hyperfine, "-N", "-w", "3", "-r", str(runs), "--export-json", out.name]
            for name, cmd in cmds.items():
                argv += ["--command-name", name, " ".join(cmd)]
            subprocess.run(argv, check=True, capture_output=True)
            data = json.loads(Path(out.name).read_text())
        return "hyperfine", {
            r["command"]: Timing(r["mean"], r["user"] + r["system"]) for r in data["results"]
        }
    for cmd in cmds.values():
        for _ in range(3):
            subprocess.run(cmd, capture_output=True)
    got: dict[str, list[Timing]] = {name: [] for name in cmds}
    for _ in range(runs):
        for name, cmd in cmds.items():
            got[name].append(_timed(cmd))
    return "a timing loop, interleaved (hyperfine is not installed)", {
        name: Timing(statistics.mean(t.wall_s for t in ts), statistics.mean(t.cpu_s for t in ts))
        for name, ts in got.items()
    }


class Timing(NamedTuple):
    wall_s: float
    cpu_s: float
    """user + system of the command and its reaped children (``wait4``'s rusage)"""


def _timed(cmd: list[str]) -> Timing:
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    p.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
    return Timing(wall, usage.ru_utime + usage.ru_stime)


def startup(runs: int, peers: Path) -> dict[str, Any]:
    cmds = {
        "python -c pass": [PY, "-c", "pass"],
        "edgeprof --version": [*EDGEPROF, "--version"],
        "edgeprof run -- /bin/true": [*EDGEPROF, "run", "--", "/bin/true"],
    }
    exe, peer = runexec(peers)
    if exe is not None:
        cmds["runexec --no-container -- /bin/true"] = [
            exe, "--no-container", "--output", "/dev/null", "--", "/bin/true",
        ]  # fmt: skip
    if Path("/usr/bin/time").exists():
        cmds["/usr/bin/time -v /bin/true"] = ["/usr/bin/time", "-v", "/bin/true"]
    tool, means = time_commands(cmds, runs)
    print(f"\n1. Start-up (mean of {runs} runs each, {tool}; {peer})\n")
    print("| command | wall ms | ÷ runexec | CPU ms | ÷ runexec |")
    print("|---|---|---|---|---|")
    base = means.get("runexec --no-container -- /bin/true")
    for name, m in means.items():
        wall = f"{m.wall_s / base.wall_s:.2f}" if base else "n/a"
        cpu = f"{m.cpu_s / base.cpu_s:.2f}" if base and base.cpu_s else "n/a"
        print(f"| `{name}` | {m.wall_s * 1e3:.1f} | {wall} | {m.cpu_s * 1e3:.1f} | {cpu} |")
    return {
        "tool": tool,
        "peer": peer,
        "mean_s": {name: m.wall_s for name, m in means.items()},
        "cpu_mean_s": {name: m.cpu_s for name, m in means.items()},
    }


def _run_ns(pid: int) -> int:
    """CPU time of every thread of ``pid`` so far, in ns (``/proc/PID/task/*/schedstat``:
    the scheduler's own sum, not clock ticks)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, IndexError, ValueError):  # a thread that just ended
            continue
    return total


def _steady_share(cmd: list[str], window: float, ready: str) -> float:
    """Percent of one core that ``cmd``'s process uses over ``window`` seconds once it is
    steady: from when a child named ``ready`` exists (the workload, or the psutil target)."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not _has_child(p.pid, ready):
            time.sleep(0.01)
        time.sleep(0.2)  # past the spawn's own work
        t0, c0 = time.monotonic(), _run_ns(p.pid)
        time.sleep(window)
        used, elapsed = _run_ns(p.pid) - c0, time.monotonic() - t0
    finally:
        p.wait()
    return 100 * used / 1e9 / elapsed


def _has_child(pid: int, name: str) -> bool:
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return False
    for task in tasks:
        try:
            kids = (task / "children").read_text().split()
        except OSError:
            continue
        for kid in kids:
            try:
                if Path(f"/proc/{kid}/comm").read_text().strip() == name:
                    return True
            except OSError:
                continue
    return False


PSUTIL_LOOP = """
import subprocess, sys, time, psutil
rate, seconds = float(sys.argv[1]), float(sys.argv[2])
with subprocess.Popen(["sleep", str(seconds)]) as child:
    target = psutil.Process(child.pid)
    due = time.monotonic()
    while child.poll() is None:
        with target.oneshot():
            target.cpu_times(); target.memory_info()
        due += 1 / rate
        time.sleep(max(0.0, due - time.monotonic()))
"""


def sampling(seconds: float) -> dict[str, Any]:
    window = seconds - 1.0
    print(f"\n2. Sampling, end to end (the whole process over {window:g} s of a sleep)\n")
    print("| rate | edgeprof | psutil loop | ÷ psutil |")
    print("|---|---|---|---|")
    rows = {}
    for rate in (10, 100, 1000):
        with tempfile.TemporaryDirectory() as tmp:
            cmd = [*EDGEPROF, "run", "--interval", str(1 / rate), "--out", f"{tmp}/r"]
            ours = _steady_share([*cmd, "--", "sleep", str(seconds)], window, "sleep")
        loop = [PY, "-c", PSUTIL_LOOP, str(rate), str(seconds)]
        theirs = _steady_share(loop, window, "sleep")
        ratio = f"{ours / theirs:.2f}" if theirs > 0 else "n/a"
        print(f"| {rate} Hz | {ours:.2f} % | {theirs:.2f} % | {ratio} |")
        rows[str(rate)] = {"edgeprof_pct": ours, "psutil_pct": theirs}
    return rows


def _rss_kib(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            return next(int(ln.split()[1]) for ln in f if ln.startswith("VmRSS:"))
    except (OSError, StopIteration):
        return None


def _mib(kib: int | None) -> str:
    return "n/a" if kib is None else f"{kib / 1024:.1f} MiB"


def _sweep_once(n: int, tty: bool) -> dict[str, Any]:
    """One sweep of ``n`` runs of ``/bin/true``; its progress goes to a pipe (plain lines,
    which tell when runs 10 and ``n`` end) or to a pseudo-terminal (the rich display)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "sweep"
        cmd = [*EDGEPROF, "run", "--repeat", str(n), "--out", str(out), "--", "/bin/true"]
        rss: dict[int, int | None] = {}
        t0 = time.monotonic()
        if tty:
            master, terminal = pty.openpty()
            p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=terminal)
            os.close(terminal)

            def progress() -> None:  # drain the display, or edgeprof blocks on a full pty
                with contextlib.suppress(OSError):  # EIO once edgeprof has closed it
                    while os.read(master, 65536):
                        pass
                os.close(master)

        else:
            p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

            def progress() -> None:  # "edgeprof: [k/n] run …": the k-th run has ended
                assert p.stderr is not None
                for line in p.stderr:
                    if line.startswith(b"edgeprof: ["):
                        k = int(line.split(b"[", 1)[1].split(b"/", 1)[0])
                        if k in (10, n):
                            rss[k] = _rss_kib(p.pid)

        reader = threading.Thread(target=progress)
        reader.start()
        _, status, usage = os.wait4(p.pid, 0)
        reader.join()
        wall = time.monotonic() - t0
        runs = json.loads((out / "sweep.json").read_text())["runs"]
    own = sum(r["wall_s"] for r in runs)
    return {
        "runs": n,
        "exit_status": status,
        "wall_s": wall,
        "own_s": own,
        "per_run_ms": (wall - own) / n * 1e3,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "rss_kib": {"10": rss.get(10), "n": rss.get(n)},
    }


def sweep(n: int) -> dict[str, Any]:
    plain, tty = _sweep_once(n, tty=False), _sweep_once(n, tty=True)
    print(f"\n3. A sweep of {n} runs of /bin/true in one edgeprof process\n")
    print(
        "| progress to | wall s | workloads' own s | overhead per run ms | RSS after run 10 → N |"
    )
    print("|---|---|---|---|---|")
    for name, r in (("a pipe (plain lines)", plain), ("a terminal (rich)", tty)):
        rss = r["rss_kib"]
        memory = "n/a" if rss["10"] is None else f"{_mib(rss['10'])} → {_mib(rss['n'])}"
        print(
            f"| {name} | {r['wall_s']:.1f} | {r['own_s']:.2f} | {r['per_run_ms']:.1f} | {memory} |"
        )
    return {**plain, "tty": tty}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="few runs, short: CI's mode")
    ap.add_argument("--json", type=Path, help="write the figures here")
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    ap.add_argument("--peers", type=Path, default=cache / "edgeprof-bench" / "peers")
    ap.add_argument("--sweep-runs", type=int, help="runs in the sweep (default 1000; quick 30)")
    ap.add_argument(
        "--edgeprof",
        help="the edgeprof command to measure, e.g. 'python -m edgeprof' with another "
        "checkout on PYTHONPATH (default: the console script beside this interpreter)",
    )
    a = ap.parse_args()
    if a.edgeprof:
        EDGEPROF[:] = shlex.split(a.edgeprof)
    if os.geteuid() != 0:
        print("benchmarks/overhead.py creates cgroups: run it as root", file=sys.stderr)
        return 2
    u = os.uname()
    print(f"{u.sysname} {u.release}, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory(prefix="edgeprof-overhead-pycache-") as pycache:
        os.environ["PYTHONPYCACHEPREFIX"] = pycache  # the commands' bytecode: see (1.)
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
        figures = {
            "startup": startup(5 if a.quick else 20, a.peers),
            "sampling": sampling(2.0 if a.quick else 11.0),
            "sweep": sweep(a.sweep_runs or (30 if a.quick else 1000)),
        }
    if a.json is not None:
        a.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
