"""``edgeprof doctor``: what this host offers each backend, and how to fix what is missing."""

from __future__ import annotations

import dataclasses
import os
import platform
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ..backends import CgroupV1Backend, CgroupV2Backend, get_backend
from ..backends import cgroupfs as fs
from ..backends.base import Backend
from ..backends.cgroup_v2 import fix as v2_fix
from ..backends.helpers import SYS_BLOCK, disks
from ..backends.nvml import LOST, GpuInfo, Nvml, NvmlUnavailable
from ..errors import BackendError, EdgeprofError
from ..units import format_binary
from . import tick
from .gpu_device import nested_pid_namespace
from .limits import host_memory


@dataclass(frozen=True)
class Finding:
    topic: str
    ok: bool | None
    """True: works; False: missing (``fix`` says what to do); None: informational."""
    detail: str
    fix: str | None = None


def _mounts(mountinfo: Path) -> list[str]:
    out = []
    for line in fs.read_text(mountinfo).splitlines():
        left, _, right = line.partition(" - ")
        rf = right.split()
        if rf and rf[0] in ("cgroup", "cgroup2"):
            opts = [
                o
                for o in rf[2].split(",")
                if o not in ("rw", "ro", "relatime", "nosuid", "nodev", "noexec")
            ]
            out.append(f"{left.split()[4]} ({rf[0]}{': ' + ','.join(opts) if opts else ''})")
    return out


def diagnose(
    mountinfo: Path = Path("/proc/self/mountinfo"),
    proc_self_cgroup: Path = Path("/proc/self/cgroup"),
    python: str | None = None,
) -> list[Finding]:
    """What this host offers each backend; with ``python``, also whether that interpreter (the
    one that will run the workload) can import edgeprof."""
    f: list[Finding] = []
    f.append(
        Finding(
            "kernel",
            None,
            f"Linux {platform.release()}, {os.cpu_count()} CPUs, running as uid {os.geteuid()}",
        )
    )
    f.append(Finding("cpu quota", None, tick.describe(tick.scheduler_hz())))
    mounts = _mounts(mountinfo)
    f.append(
        Finding(
            "cgroup mounts",
            bool(mounts),
            "; ".join(mounts) or "none",
            None if mounts else "mount cgroup2 at /sys/fs/cgroup",
        )
    )
    own = fs.own_cgroups(proc_self_cgroup)
    f.append(
        Finding("own groups", None, ", ".join(f"{k or 'unified'}:{v}" for k, v in own.items()))
    )

    v2 = CgroupV2Backend(proc_self_cgroup=proc_self_cgroup)
    v2_miss: int | None = None  # where its MISS is, to be information if v1 serves
    try:
        v2.check()
        parent = v2.parent()
        f.append(
            Finding(
                "cgroup v2",
                True,
                f"run groups under {parent}; controllers: "
                + ", ".join(sorted(fs.read_text(parent / "cgroup.subtree_control").split())),
            )
        )
        for w in v2.warnings():
            f.append(Finding("cgroup v2", False, w, "delegate the controller to the parent"))
        kernel_has = _kernel_features_v2(parent)
        for feat, (present, why) in kernel_has.items():
            f.append(Finding(feat, present, why, None if present else "a newer kernel"))
    except EdgeprofError as exc:
        v2_miss = len(f)
        f.append(Finding("cgroup v2", False, str(exc)))

    v1 = CgroupV1Backend(mountinfo=mountinfo, proc_self_cgroup=proc_self_cgroup)
    try:
        v1.check()
        h = v1.hierarchies()
        f.append(
            Finding(
                "cgroup v1",
                True,
                "run groups under: " + ", ".join(f"{c or 'unified'}={h[c].own}" for c in sorted(h)),
            )
        )
        if v2_miss is not None:  # not missing: the cgroup backend uses v1 here
            f[v2_miss] = dataclasses.replace(f[v2_miss], ok=None)
        for w in v1.warnings():
            f.append(Finding("cgroup v1", False, w))
        kill = "" in h and "cgroup.kill" in _probe_files(h[""].own)
        f.append(
            Finding(
                "tree kill",
                True,
                "cgroup.kill in the unified hierarchy (atomic)"
                if kill
                else "freezer + SIGKILL (no cgroup.kill in the unified hierarchy)",
            )
        )
    except EdgeprofError as exc:
        # Not missing where v2 serves: the cgroup backend uses v2 there.
        f.append(Finding("cgroup v1", False if v2_miss is not None else None, str(exc)))

    try:
        be = get_backend("auto")
        if be.name == "process":
            f.append(
                Finding(
                    "auto backend",
                    False,
                    "process (no cgroup can be created here): CPU time exact, memory is the "
                    "process tree's resident set size sampled, cores held by CPU affinity; a "
                    "CPU share (--cpus 0.5), --memory, --pids and a storage speed are refused",
                    v2_fix(v2=v2.holds_controllers()),
                )
            )
        else:
            f.append(Finding("auto backend", True, f"{be.name} ({be.mechanism})"))
        f.extend(memory_ceiling(be))
    except EdgeprofError as exc:
        f.append(Finding("auto backend", False, str(exc)))
    f.append(Finding("counter reader", None, fs.READER))
    f.append(storage_speed())
    f.append(dead_runs())
    f.extend(_docker())
    f.extend(gpu_findings())
    if python is not None:
        f.append(workload_python(python))
    return f


def storage_speed(sys_block: Path = SYS_BLOCK) -> Finding:
    """The disks the storage limits (``--read-bps``, ``--read-iops`` and their ``--write-``
    forms) would slow: every one with media, as a run's group gets a rule for each; none
    (a root on 9p or tmpfs) refuses them."""
    found = disks(sys_block)
    if not found:
        return Finding(
            "storage speed",
            None,
            f"{sys_block} lists no disk with media (files on a share or tmpfs): --read-bps, "
            "--write-bps, --read-iops and --write-iops are refused here",
        )
    named = ", ".join(f"{d.name} ({d.dev})" for d in found)
    options = "--read-bps, --write-bps, --read-iops and --write-iops"
    return Finding("storage speed", None, f"{options} slow every disk: {named}")


def dead_runs(roots: Iterable[Path] | None = None, proc: Path = Path("/proc")) -> Finding:
    """The groups of runs whose edgeprof died (``kill -9``, a lost runner), and the processes
    still running in them: each run removes them as it starts, and ``edgeprof gc`` now.  The
    processes are counted because an orphaned workload keeps its CPU until then: a tester's
    dead run's ``python kinfer.py`` burnt 75 % of a core under a line that named only its 8
    groups.  The search is gc's own (:func:`~edgeprof.measure.gc.find_dead_runs`)."""
    from .gc import find_dead_runs

    try:
        runs = find_dead_runs(roots, proc)
    except (OSError, EdgeprofError) as exc:
        return Finding("dead runs", None, f"cannot look for leftovers: {exc}")
    if not runs:
        return Finding("dead runs", True, "no groups left by an edgeprof that died")
    groups = sum(len(r.groups) for r in runs)
    pids = sorted({x.pid for r in runs for x in r.processes})
    shown = ", ".join(r.name for r in runs[:3]) + (", …" if len(runs) > 3 else "")
    detail = f"{groups} cgroup(s) of {len(runs)} run(s) whose edgeprof died ({shown})"
    if pids:
        listed = ", ".join(map(str, pids[:8])) + (", …" if len(pids) > 8 else "")
        detail += f" with {len(pids)} process(es) still running in them (pid {listed})"
    return Finding(
        "dead runs",
        False,
        detail + "; every run removes them as it starts",
        "edgeprof gc removes them now (edgeprof gc --dry-run lists them first; as the user "
        "that ran them)",
    )


NOT_FOUND = "not found"
NOT_EXECUTABLE = "not executable"
NOT_PYTHON = "not a Python interpreter"
_SAID = "edgeprof imported from "
"""What the probe's code prints: a program that exits 0 without it is no interpreter that
imported edgeprof (``doctor --python /bin/true`` had been "[ok] /bin/true imports edgeprof")."""


def memory_ceiling(be: Backend) -> list[Finding]:
    """The memory a run may have when a group above the runs limits it below ``MemTotal``:
    a larger ``--memory`` is refused, and ``fit``'s unlimited runs are held to its room."""
    memory, source = host_memory(be)
    if source == "MemTotal":
        return []
    detail = f"a run may have at most {format_binary(memory)} here: {source}"
    return [Finding("memory ceiling", None, detail + " (a larger --memory is refused)")]


def interpreter_imports_edgeprof(python: str, timeout: float = 10) -> str | None:
    """``None`` when ``python -c "import edgeprof"`` works, else why not in one line (the
    last line of its stderr: ``ModuleNotFoundError: No module named 'edgeprof'``).

    It runs in this process's environment, which a workload inherits (``PYTHONPATH``
    included), but from ``/``: ``-c`` puts the working directory on ``sys.path``, so from a
    checkout of edgeprof the import would work where the workload's (whose path holds its
    script's directory instead) fails.  A relative ``python`` is resolved here first."""
    program = os.path.abspath(python) if os.sep in python else python
    try:
        done = subprocess.run(
            [program, "-c", f"import edgeprof; print({_SAID!r} + edgeprof.__file__)"],
            cwd="/",
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
        )
    except FileNotFoundError:
        return NOT_FOUND
    except PermissionError:
        return NOT_EXECUTABLE
    except OSError as exc:
        return exc.strerror or str(exc)
    except subprocess.TimeoutExpired:
        return f"no answer within {timeout:g}s"
    if done.returncode == 0:
        said = any(line.startswith(_SAID) for line in done.stdout.splitlines())
        return None if said else NOT_PYTHON
    lines = [ln.strip() for ln in done.stderr.splitlines() if ln.strip()]
    return lines[-1] if lines else f"exit {done.returncode}"


def workload_python(python: str) -> Finding:
    """Whether the workload's interpreter records phases and iterations: a script that falls
    back to no-ops without edgeprof would otherwise run silently uninstrumented."""
    why = interpreter_imports_edgeprof(python)
    if why is None:
        return Finding("workload python", True, f"{python} imports edgeprof")
    if why in (NOT_FOUND, NOT_EXECUTABLE, NOT_PYTHON):  # a wrong path: installing would not help
        return Finding(
            "workload python",
            False,
            f"{python}: {why}",
            "--python takes the interpreter that runs the workload (its command's first word)",
        )
    return Finding(
        "workload python",
        False,
        f"{python} cannot import edgeprof ({why}): a workload it runs reports no phases, "
        "iterations or marks",
        import_fix(python),
    )


def import_fix(python: str | None) -> str:
    """What makes ``python`` (``None``: the one that runs the script) import edgeprof: this
    same edgeprof installed into it, or its phase client copied beside the script, named by
    where it really is.  It had said ``python -m pip install edgeprof``, which no index
    serves (``No matching distribution found``, a team installing a wheel they built), and
    ``edgeprof/workload/instrument.py``, relative to nothing (it is in site-packages)."""
    from ..workload import instrument  # loaded already: ``import edgeprof`` loads it

    into = "the interpreter that runs the script" if python is None else python
    return (
        f"install edgeprof into {into} (the same package or wheel as this one), or copy "
        f"{instrument.__file__} beside the script and `import instrument as edgeprof`"
    )


def _probe_files(parent: Path) -> set[str]:
    """The files a run group gets here: create a throwaway child group, list it, remove it."""
    probe = parent / f"edgeprof-doctor-{os.getpid()}"
    try:
        probe.mkdir()
    except OSError:
        return set()
    try:
        return {p.name for p in probe.iterdir()}
    finally:
        fs.remove_tree([probe])


def _kernel_features_v2(parent: Path) -> dict[str, tuple[bool, str]]:
    names = _probe_files(parent)
    if not names:
        return {}
    return {
        "memory.peak": (
            "memory.peak" in names,
            "exact peak memory"
            if "memory.peak" in names
            else "no memory.peak (Linux < 5.19): peak memory is sampled",
        ),
        "cgroup.kill": (
            "cgroup.kill" in names,
            "atomic tree kill"
            if "cgroup.kill" in names
            else "no cgroup.kill (Linux < 5.14): freezer + SIGKILL instead",
        ),
    }


GPU_READINGS = (
    ("processes", "per-process memory"),
    ("energy", "energy counter"),
    ("power", "power"),
    ("clocks", "clocks"),
    ("temperature", "temperature"),
    ("reasons", "throttle reasons"),
)
""":meth:`Nvml.supported`'s names as ``doctor`` says them; utilisation, per process or
device-wide only, goes second."""

GPU_LOST_FIX = "see nvidia-smi and the kernel log (Xid errors): the GPU may need a reset"
NESTED_PID_NS = (
    "edgeprof runs in a nested PID namespace, where NVML's pids are not the ones it sees: "
    "a run's GPU memory is the device's used memory above its level at the start, another "
    "job's on the same GPU included (result.gpu.devices[].memory_source: device)"
)


def gpu_findings(
    open_nvml: Callable[[], Nvml] = Nvml,
    nested: Callable[[], bool] = nested_pid_namespace,
) -> list[Finding]:
    """One finding per GPU NVML lists: what it is and what a run can measure on it.  No
    NVML, no driver or no GPU is information, never missing: most hosts have none, and a
    run then simply has no ``gpu`` block."""
    try:
        nvml = open_nvml()
    except NvmlUnavailable as exc:
        return [Finding("gpu", None, f"not measured (a run's result has no gpu block): {exc}")]
    with nvml:
        try:
            gpus = nvml.devices()
        except NvmlUnavailable as exc:
            return [Finding("gpu", None, f"not measured: {exc}")]
        except Exception as exc:  # pynvml's NVMLError (not importable here) or a lost GPU
            return [Finding("gpu", False, f"NVML started but cannot list the GPUs: {exc}")]
        driver = nvml.driver()
        if not gpus and not nvml.skipped:
            return [Finding("gpu", None, f"NVML (driver {driver or '?'}) lists no GPU")]
        found = [_gpu_finding(nvml, g, driver) for g in gpus]
        for i, why in nvml.skipped:
            fix = GPU_LOST_FIX if why == LOST else None
            found.append(Finding(f"gpu {i}", False, f"not measured: {why}", fix))
    if nested():
        found.append(Finding("gpu memory", None, NESTED_PID_NS))
    return found


def _gpu_finding(nvml: Nvml, gpu: GpuInfo, driver: str | None) -> Finding:
    """What one GPU offers, from one reading: a call the GPU does not support (or does not
    permit) shows up in :meth:`Nvml.supported` only once it has been asked."""
    topic = f"gpu {gpu.number}"
    what = f"{gpu.name} ({gpu.uuid}), {format_binary(gpu.memory_total)}, driver {driver or '?'}"
    try:
        reading = nvml.read(gpu.number)
    except BackendError as exc:  # fell off the bus
        return Finding(topic, False, f"{what}: cannot be read: {exc}", GPU_LOST_FIX)
    except Exception as exc:  # pynvml's NVMLError: an answer doctor cannot place
        return Finding(topic, False, f"{what}: cannot be read: {exc}")
    can = nvml.supported(gpu.number)
    if reading.process_util is not None:
        util = ("per-process utilisation", True)
    else:  # the driver gives no per-process samples here: only the device's figure
        util = ("utilisation (device-wide only)" if can["utilization"] else "utilisation",
                can["utilization"])  # fmt: skip
    readings = [(GPU_READINGS[0][1], can["processes"]), util]
    readings += [(label, can[name]) for name, label in GPU_READINGS[1:]]
    have = [label for label, ok in readings if ok]
    lack = [label for label, ok in readings if not ok]
    detail = f"{what}; measures {', '.join(have) or 'nothing'}"
    if lack:
        detail += f"; not given: {', '.join(lack)}"
    return Finding(topic, True, detail)


def render(findings: list[Finding]) -> str:
    marks = {True: "ok  ", False: "MISS", None: "info"}
    lines = []
    for x in findings:
        lines.append(f"[{marks[x.ok]}] {x.topic}: {x.detail}")
        if x.fix:
            lines.append(f"       fix: {x.fix}")
    return "\n".join(lines) + "\n"


def render_json(findings: list[Finding]) -> str:
    """The findings as a JSON list, in :func:`render`'s order, for a CI step that checks
    one (``ok`` is ``false`` where something is missing and ``fix`` says what to do)."""
    import dataclasses
    import json

    return json.dumps([dataclasses.asdict(x) for x in findings], indent=2) + "\n"


def _docker() -> list[Finding]:
    from ..backends.docker import DockerBackend

    be = DockerBackend()
    try:
        be.check()
        info = be.info()
        version = be.version()
    except EdgeprofError as exc:
        # The daemon's errors end in what to do ("…; start dockerd, …"): that is the fix,
        # which --json had left null with it inside the detail (a user's).
        detail, _, fix = str(exc).partition("; ")
        fix = fix or "start dockerd, or point DOCKER_HOST at a running daemon"
        return [Finding("docker", False, detail, fix)]
    exact = be.mechanism != "docker+stats"
    return [
        Finding(
            "docker",
            True,
            f"daemon {version.get('Version')} (API "
            f"{version.get('ApiVersion')}), cgroup driver {info.get('CgroupDriver')}, "
            f"cgroup v{be.cgroup_version}",
        ),
        Finding(
            "docker measurement",
            exact,
            "exact: kernel counters of an edgeprof-named cgroup parent"
            if exact
            else "stats API only (the daemon is not on this host): sampled peaks",
            None if exact else "run the daemon on this host for exact figures",
        ),
    ]
