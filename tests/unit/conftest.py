"""Fixtures of the unit tier: fake cgroupfs trees in tmp_path and hand-built results.

Nothing here touches the host's cgroups or needs root.  The fake cgroupfs is plain
directories and files with just enough of the kernel's behaviour emulated for the backends:

* ``mkdir`` of a group gives it its interface files (from the hierarchy's template);
* a write to a control file must hit an existing file (as in cgroupfs, where nothing can be
  created) and then *replaces* its value; ``cgroup.subtree_control`` takes ``+c``/``-c``
  edits and refuses them with EBUSY while a non-root group holds processes;
  ``cgroup.procs`` moves a pid into the group, out of every other group of the hierarchy;
  ``cgroup.kill`` kills the group's members, which leave every hierarchy;
  ``cgroup.freeze`` shows up in ``cgroup.events``;
* ``rmdir`` removes a group (its files vanish with it) unless it still lists processes
  (EBUSY) or has child groups;
* ``signal_pids`` of the cgroup runs (and of ``terminate_pids``) is replaced by a recorder:
  no test ever signals a real process through a fake members file.  A SIGKILL removes the
  pids (> 1, as the real ``signal_pids`` skips the others) from every fake ``cgroup.procs``.

The child of a real launch writes ``0`` into the fake ``cgroup.procs`` (the kernel would
translate it to its pid); tests call :meth:`FakeCgroupFs.processes_exited` once they have
reaped it, as the kernel would empty the file then.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import pathlib
import signal
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

from edgeprof.backends import (
    _cgroup_run,
    _process,
    cgroup_parse,
    nvml,
    register_backend,
    unregister_backend,
)
from edgeprof.backends import cgroupfs as fs
from edgeprof.errors import BackendError
from edgeprof.measure import host, limits
from edgeprof.model import (
    CpuStats,
    HostInfo,
    IoStats,
    Limits,
    MemoryStats,
    RunResult,
    SampleStats,
    Termination,
)
from tests.fakes import FakeBackend

IMPOSSIBLE_PID = 99_999_999
"""Above the kernel's largest pid_max (2**22): cannot name a real process."""

Template = Callable[[Path], Mapping[str, str]]


class FakeCgroupFs:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self._templates: dict[Path, Template] = {}
        self.writes: list[tuple[Path, str]] = []
        self.signals: list[tuple[list[int], int]] = []
        self.refuse: dict[str, int] = {}
        """File name → errno: the fake kernel refuses writes to such files."""

        real_mkdir = pathlib.Path.mkdir
        real_rmdir = os.rmdir
        real_write = fs.write
        fake = self

        def mkdir(
            p: Path, mode: int = 0o777, parents: bool = False, exist_ok: bool = False
        ) -> None:
            existed = p.is_dir()
            real_mkdir(p, mode, parents, exist_ok)
            mount = fake.mount_of(p)
            if not existed and mount is not None and p != mount:
                for name, text in fake._templates[mount](p).items():
                    (p / name).write_text(text)

        def rmdir(path: str | os.PathLike[str], *args: object, **kwargs: object) -> None:
            p = Path(path)
            if fake.mount_of(p) is not None and p.is_dir():
                members = fake.pids(p) if (p / "cgroup.procs").exists() else []
                if members or any(c.is_dir() for c in p.iterdir()):
                    raise OSError(errno.EBUSY, os.strerror(errno.EBUSY), str(p))
                for c in p.iterdir():
                    c.unlink()
            real_rmdir(path, *args, **kwargs)  # type: ignore[arg-type]

        def write(path: Path, value: str) -> None:
            code = fake.refuse.get(path.name)
            if code is None and path.name == "cgroup.subtree_control":
                mount = fake.mount_of(path)
                if path.parent != mount and fake.pids(path.parent):
                    code = errno.EBUSY  # the no-internal-process rule
            if code is not None:
                try:
                    raise OSError(code, os.strerror(code), str(path))
                except OSError as exc:
                    raise BackendError(f"cannot write {value!r} to {path}: {exc.strerror}") from exc
            before = path.read_text() if path.is_file() else ""
            real_write(path, value)  # raises as cgroupfs does when the file does not exist
            fake.writes.append((path, value))
            fake._apply(path, value, before)

        def signal_pids(pids: list[int], sig: int = signal.SIGKILL) -> None:
            fake.signals.append((list(pids), sig))
            if sig == signal.SIGKILL:
                fake._drop_pids({p for p in pids if p > 1})

        monkeypatch.setattr(pathlib.Path, "mkdir", mkdir)
        monkeypatch.setattr(os, "rmdir", rmdir)
        monkeypatch.setattr(fs, "write", write)
        monkeypatch.setattr(_cgroup_run, "signal_pids", signal_pids)
        monkeypatch.setattr(_process, "signal_pids", signal_pids)  # terminate_pids' own
        # A bug that leaves a member behind fails in 1 s instead of hanging for 10.
        monkeypatch.setattr(_cgroup_run, "KILL_TIMEOUT_S", 1.0)

    # -- building trees ----------------------------------------------------------------------

    def hierarchy(self, mountpoint: Path, template: Template, files: Mapping[str, str]) -> Path:
        """A mounted hierarchy: its root directory with ``files``; new groups get ``template``."""
        mountpoint.mkdir(parents=True, exist_ok=True)
        self._templates[mountpoint] = template
        for name, text in files.items():
            (mountpoint / name).write_text(text)
        return mountpoint

    def group(self, path: Path, files: Mapping[str, str] | None = None) -> Path:
        """An existing group (with every parent): template files plus ``files``."""
        path.mkdir(parents=True, exist_ok=True)
        for name, text in (files or {}).items():
            (path / name).write_text(text)
        return path

    def mount_of(self, p: Path) -> Path | None:
        for m in self._templates:
            if p == m or m in p.parents:
                return m
        return None

    # -- inspecting ----------------------------------------------------------------------------

    @staticmethod
    def read(path: Path) -> str:
        return path.read_text()

    @staticmethod
    def pids(group: Path) -> list[int]:
        procs = group / "cgroup.procs"
        return [int(x) for x in procs.read_text().split()] if procs.exists() else []

    def written(self, name: str) -> list[str]:
        """Every value written to files called ``name``, in order."""
        return [v for p, v in self.writes if p.name == name]

    def run_groups(self) -> list[Path]:
        out: list[Path] = []
        for m in self._templates:
            out.extend(p for p in m.rglob("edgeprof-*") if p.is_dir() and p.name != "edgeprof-self")
        return sorted(out)

    # -- the kernel's side ------------------------------------------------------------------

    def processes_exited(self) -> None:
        """The workload has been reaped: the kernel empties its groups' ``cgroup.procs``."""
        for g in self.run_groups():
            if (g / "cgroup.procs").exists():
                (g / "cgroup.procs").write_text("")

    def _drop_pids(self, gone: set[int]) -> None:
        """Dead processes leave every group of every hierarchy."""
        for m in self._templates:
            for procs in m.rglob("cgroup.procs"):
                left = [x for x in procs.read_text().split() if int(x) not in gone]
                procs.write_text("".join(f"{x}\n" for x in left))

    def _apply(self, path: Path, value: str, before: str) -> None:
        name, group = path.name, path.parent
        if name == "cgroup.subtree_control":
            current = set(before.split())
            for tok in value.split():
                if tok.startswith("+"):
                    current.add(tok[1:])
                elif tok.startswith("-"):
                    current.discard(tok[1:])
            path.write_text(" ".join(sorted(current)))
        elif name == "cgroup.procs":
            pid = int(value)
            mount = self.mount_of(path)
            assert mount is not None
            members = [x for x in before.split() if int(x) != pid] + [str(pid)]
            for procs in mount.rglob("cgroup.procs"):
                if procs != path:
                    left = [x for x in procs.read_text().split() if int(x) != pid]
                    procs.write_text("".join(f"{x}\n" for x in left))
            path.write_text("".join(f"{x}\n" for x in members))
        elif name == "io.max" or name.startswith("blkio.throttle."):
            # One rule a disk: a write replaces that disk's line and keeps the others'.
            dev = value.split()[0]
            kept = [ln for ln in before.splitlines() if ln.split()[:1] != [dev]]
            path.write_text("".join(f"{ln}\n" for ln in [*kept, value]))
        elif name in ("memory.max", "memory.limit_in_bytes", "memory.memsw.limit_in_bytes"):
            # The kernel keeps a memory limit in whole pages, rounded down (both versions):
            # v1's 100000001 reads back 99999744 (a researcher's host).
            page = os.sysconf("SC_PAGESIZE")
            part = value.strip().isdigit() and int(value) % page != 0
            path.write_text(str(int(value) // page * page) if part else value)
        elif name == "cgroup.kill" and value.strip() == "1":
            # Everything in the group dies, and so leaves its groups in other hierarchies
            # too ("0" stands for the launched child, which wrote itself in as "0").
            killed = {
                int(x) for procs in group.rglob("cgroup.procs") for x in self.pids(procs.parent)
            }
            self._drop_pids(killed)
        elif name == "cgroup.freeze":
            events = group / "cgroup.events"
            if events.exists():
                kv = cgroup_parse.parse_kv(events.read_text())
                kv["frozen"] = int(value.strip())
                events.write_text("".join(f"{k} {v}\n" for k, v in kv.items()))
            path.write_text(value)
        else:
            path.write_text(value)


SEED_COLUMNS = [
    "NAME",
    "AVG CPU %",
    "PEAK CPU",
    "AVG MEM USAGE / LIMIT",
    "PEAK MEM",
    "NET I/O",
    "BLOCK I/O",
    "TOTAL TIME (ms)",
]
"""The columns of the seed's "Final Usage Stats" table, spelled out (not read from edgeprof):
the reports must keep them first and in this order."""


@pytest.fixture(autouse=True)
def fake_backend() -> Iterator[None]:
    """``--backend fake`` and ``profile(backend="fake")``: the scripted backend, plugged in
    as an outside backend would be (it is not part of edgeprof)."""
    register_backend("fake", FakeBackend)
    yield
    unregister_backend("fake")


@pytest.fixture(autouse=True)
def any_affinity(monkeypatch: pytest.MonkeyPatch) -> None:
    """edgeprof's own affinity allows every CPU: a fake backend's CPU list is then the
    allowed set, whatever machine (or ``taskset``) the unit tier runs on."""
    monkeypatch.setattr(limits, "own_affinity", lambda: frozenset(range(4096)))


@pytest.fixture(autouse=True)
def no_gpu_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    """No NVIDIA driver, whatever host the unit tier runs on: a run has no ``gpu`` block
    unless a test plugs in the NVML double (``tests/nvml_double.py``)."""
    monkeypatch.setattr(nvml, "DRIVER_FILES", ())
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)


FAKE_HOST_CPUS = 2
"""The CPUs of the host every run of the unit tier reports (``result.host.cpus``): the fake
backend's two (:class:`~tests.fakes.FakeBackend`), whatever machine the tier runs on.  What
edgeprof derives from a host's CPUs (the kernel's per-CPU batching of memory statistics:
``fit``'s room over the floor, and so its probes and answer) is then the same on a 16-CPU
runner as on a 2-CPU one."""


@pytest.fixture(autouse=True)
def fake_host_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        host, "_HOST", dataclasses.replace(host.host_info(), cpus=FAKE_HOST_CPUS)
    )


@pytest.fixture
def no_fake_backend(fake_backend: None) -> Iterator[None]:
    """Only the built-in backends, as a user's edgeprof has them."""
    unregister_backend("fake")
    yield
    register_backend("fake", FakeBackend)


@pytest.fixture
def cgfs(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeCgroupFs]:
    yield FakeCgroupFs(monkeypatch)


# -- cgroup v2 trees -------------------------------------------------------------------------

V2_CONTROLLER_FILES: dict[str, dict[str, str]] = {
    "cpu": {"cpu.max": "max 100000\n", "cpu.weight": "100\n"},
    "memory": {
        "memory.current": "0\n",
        "memory.max": "max\n",
        "memory.peak": "0\n",
        "memory.swap.max": "max\n",
        "memory.oom.group": "0\n",
        "memory.stat": "anon 0\nfile 0\ninactive_file 0\n",
        "memory.events": "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n",
        "memory.events.local": "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n",
    },
    "io": {"io.stat": "", "io.max": ""},
    "pids": {"pids.current": "0\n", "pids.max": "max\n"},
    "cpuset": {"cpuset.cpus": "\n", "cpuset.cpus.effective": "0-3\n", "cpuset.mems": "\n"},
}
V2_CORE_FILES = {
    "cgroup.procs": "",
    "cgroup.subtree_control": "",
    "cgroup.events": "populated 0\nfrozen 0\n",
    "cgroup.kill": "",
    "cgroup.freeze": "0\n",
    "cpu.stat": "usage_usec 0\nuser_usec 0\nsystem_usec 0\n",
}


def v2_template(
    omit: frozenset[str] = frozenset(), overrides: Mapping[str, str] | None = None
) -> Template:
    """A new v2 group: core files, plus each controller's files when its parent enabled it."""

    def make(group: Path) -> dict[str, str]:
        sub = group.parent / "cgroup.subtree_control"
        controllers = sub.read_text().split() if sub.exists() else []
        files = dict(V2_CORE_FILES)
        files["cgroup.controllers"] = " ".join(controllers) + "\n"
        for c in controllers:
            files.update(V2_CONTROLLER_FILES.get(c, {}))
        if "cpu" in controllers:
            files["cpu.stat"] += "nr_periods 0\nnr_throttled 0\nthrottled_usec 0\n"
        files.update(overrides or {})
        return {k: v for k, v in files.items() if k not in omit}

    return make


def write_proc_self_cgroup(path: Path, lines: Mapping[str, str]) -> Path:
    """A fake ``/proc/self/cgroup``: {hierarchy key: path}, key ``""`` for the v2 line."""
    text = "".join(
        f"{i}:{key}:{group}\n" for i, (key, group) in enumerate(reversed(list(lines.items())))
    )
    path.write_text(text)
    return path


# -- results ---------------------------------------------------------------------------------


def make_result(**overrides: object) -> RunResult:
    """A hand-built result with every figure set (override any field)."""
    base: dict[str, object] = {
        "edgeprof_version": "0.1.0",
        "backend": "cgroup",
        "mechanism": "cgroup2",
        "host": HostInfo(kernel="6.1.0", cpus=4, cpu_model="Test CPU", hostname="h"),
        "command": ("python3", "infer.py"),
        "limits": Limits(cpus=1.5, cpuset="0-1", memory="512m"),
        "started_at": "2026-01-01T00:00:00.000+00:00",
        "termination": Termination.EXITED,
        "exit_code": 0,
        "signal": None,
        "wall_s": 1.5,
        "cpu": CpuStats(
            user_s=1.0,
            system_s=0.2,
            total_s=1.2,
            avg_pct=80.0,
            peak_pct=120.0,
            peak_window_s=1.0,
            throttled_s=0.0123,
            nr_throttled=7,
            nr_periods=15,
        ),
        "memory": MemoryStats(
            peak_bytes=120 * 2**20,
            peak_source="kernel",
            avg_bytes=100 * 2**20,
            limit_bytes=512 * 2**20,
            oom_kills=0,
            peak_working_set_bytes=110 * 2**20,
            avg_working_set_bytes=90 * 2**20,
        ),
        "io": IoStats(read_bytes=742, write_bytes=12_000_000, net_rx_bytes=None, net_tx_bytes=None),
        "samples": SampleStats(count=15, interval_s=0.1, path=None),
        "pids_peak": 3,
        "warnings": ("a warning",),
        "name": None,
    }
    base.update(overrides)
    return RunResult(**base)  # type: ignore[arg-type]


READERS = [False, True] if fs.NATIVE_AVAILABLE else [False]
"""Counter readers to test: pure Python always, the native helper when it is built here."""
