"""A private single-node Slurm cluster for the slurm tier: install, start, submit, wait, stop.

:func:`start_cluster` writes ``slurm.conf`` and ``cgroup.conf`` into a private directory and
starts ``slurmctld -D`` and ``slurmd -D -N <node>`` from it (each in a session of its own,
``PR_SET_PDEATHSIG=SIGTERM``), on two free TCP ports, and polls ``scontrol ping`` and
``sinfo`` until the node is ``idle``.  Client commands get the cluster through
:attr:`SlurmCluster.env` (``SLURM_CONF``); nothing global is set and ``/etc/slurm`` is never
read.

The node is named ``edgeprof-<pid>-<hex>``: Debian's Slurm 22.05 (cgroup/v1) puts every group
it makes below ``<hierarchy>/slurm_<node name>`` (``slurm_<node>/uid_0/job_<id>/step_batch``
in ``cpuset`` and ``freezer`` with this configuration), so the groups of two sessions never
meet, and :meth:`SlurmCluster.stop` knows exactly which directories are its own: that path
exists in no hierarchy before the start (checked), everything below it afterwards is this
cluster's.

:meth:`SlurmCluster.stop` cancels what still runs, stops both daemons by their pids
(SIGTERM, then SIGKILL), kills by pid whatever is left of the cluster (a process carrying the
cluster's ``SLURM_CONF`` in its environment, or one in its cgroups: slurmstepd daemonises and
does not die with slurmd), removes the cgroup directories deepest first (rmdir only) and
raises :class:`SlurmError` if a process or a directory remains.  A session that died before
its stop leaves directories named after its dead pid: the next :func:`start_cluster` removes
them (:func:`reap_stale_clusters`).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.apt import SBIN_PATH
from tests.daemon_tools import spawn_daemon
from tests.daemon_tools import tail as _tail
from tests.slurm.conf import CGROUP_CONF, slurm_conf
from tests.slurm.host import (
    FINAL_STATES,
    SOCKET_PATH_MAX,
    SlurmError,
    SlurmUnavailable,
    ancestors,
    cgroup_mountpoints,
    clean_env,
    dirs_below,
    free_ports,
    kill_pids,
    node_hardware,
    pid_alive,
    procs_in,
    reap_stale_clusters,
    rmdir_all,
    thaw,
    timed,
    which,
)

# ---------------------------------------------------------------------------------------------
# The cluster


@dataclass(frozen=True)
class JobResult:
    """The final state of one job, or of one task of an array job, as the controller holds
    it (``squeue --json``: it keeps a finished job for ``MinJobAge`` seconds)."""

    job_id: int
    """Slurm's own id of this record (an array task has one of its own)."""
    array_task_id: int | None
    state: str
    """``COMPLETED``, ``FAILED``, ``CANCELLED``, ``TIMEOUT``… (:data:`FINAL_STATES`)."""
    exit_code: int
    """The batch script's exit status (0–255); 0 when a signal ended it."""
    signal: int
    """The signal that ended the batch script; 0 if none."""
    reason: str


@dataclass
class SlurmCluster:
    """A running private cluster of one node.  :meth:`stop` exactly once (more do nothing)."""

    state_dir: Path
    conf: Path
    """``slurm.conf`` (``cgroup.conf`` beside it); :attr:`env` points ``SLURM_CONF`` here."""
    cluster_name: str
    node: str
    partition: str
    cpus: int
    """The node's CPUs, as ``slurmd -C`` detects them."""
    cores: int
    threads_per_core: int
    ctld_port: int
    slurmd_port: int
    slurmctld_log: Path
    slurmd_log: Path
    _ctld: subprocess.Popen[bytes] | None = field(repr=False)
    _slurmd: subprocess.Popen[bytes] | None = field(repr=False)
    _stopped: bool = field(default=False, repr=False)

    # --- clients --------------------------------------------------------------------------

    @property
    def env(self) -> dict[str, str]:
        """Environment for client commands, computed now from this process's: no inherited
        ``SLURM_*``/``SBATCH_*``, ``SLURM_CONF`` set, and a ``PATH`` with this interpreter's
        bin directory first (so a job finds the venv's ``edgeprof``) and the sbin
        directories last.  ``sbatch`` exports it into the job (``--export=ALL``)."""
        env = clean_env(os.environ)
        path = [
            str(Path(sys.executable).parent),
            *env.get("PATH", "").split(":"),
            *SBIN_PATH.split(":"),
        ]
        env["PATH"] = ":".join(dict.fromkeys(p for p in path if p))
        env["SLURM_CONF"] = str(self.conf)
        return env

    def run(
        self, *cmd: str, timeout: float = 60.0, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """Run a client command against this cluster."""
        r = subprocess.run(
            list(cmd), env=self.env, capture_output=True, text=True, timeout=timeout, check=False
        )
        if check and r.returncode != 0:
            raise SlurmError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stdout}{r.stderr}")
        return r

    def sbatch(self, script: Path, *args: str, cwd: Path, script_args: Iterable[str] = ()) -> int:
        """``sbatch --parsable ARGS SCRIPT SCRIPT_ARGS`` from ``cwd`` (the job's working
        directory, where ``slurm-%j.out`` goes unless ``-o`` says otherwise); the job id
        (an array's: its tasks are :meth:`wait`'s keys)."""
        r = subprocess.run(
            ["sbatch", "--parsable", *args, str(script), *script_args],
            env=self.env,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if r.returncode != 0:
            raise SlurmError(
                f"sbatch {' '.join(args)} {script} failed ({r.returncode}): {r.stdout}{r.stderr}"
            )
        return int(r.stdout.strip().split(";")[0])

    def jobs(self) -> list[dict[str, Any]]:
        """Every job record the controller holds (``squeue --json``: pending, running and,
        for ``MinJobAge`` seconds, finished; one record per array task that has started,
        plus the array's pending rest as one record with ``array_task_string``)."""
        r = self.run("squeue", "--json")
        data = json.loads(r.stdout)
        jobs: list[dict[str, Any]] = data.get("jobs", [])
        return jobs

    def _records(self, job_id: int) -> list[dict[str, Any]]:
        return [
            j
            for j in self.jobs()
            if j.get("array_job_id") == job_id
            or (j.get("job_id") == job_id and not j.get("array_job_id"))
        ]

    def wait(self, job_id: int, timeout: float = 120.0) -> dict[int | None, JobResult]:
        """Wait until job ``job_id`` (all of its tasks, for an array) has finished; its final
        states, keyed by array task id (``None`` for a job that is not an array).

        Polls ``squeue --json``, which holds every record the controller keeps: done when
        no record is an array's unsplit pending rest and every record's state is final
        (``COMPLETING`` is not: a job is ``COMPLETED`` only once its steps and epilog have
        ended on the node).  The controller keeps finished jobs for ``MinJobAge`` (300 s):
        call this within that time of the job's end."""
        deadline = time.monotonic() + timeout
        delay = 0.05
        while True:
            records = self._records(job_id)
            if not records:
                raise SlurmError(
                    f"job {job_id} is unknown to the controller (never submitted, "
                    "or finished more than MinJobAge ago)"
                )
            pending_rest = [r for r in records if r.get("array_task_string")]
            if not pending_rest and all(r.get("job_state") in FINAL_STATES for r in records):
                return {r.get("array_task_id"): _result(r) for r in records}
            if time.monotonic() > deadline:
                states = {
                    r.get("array_task_string") or r.get("array_task_id"): r.get("job_state")
                    for r in records
                }
                raise SlurmError(
                    f"job {job_id} not finished after {timeout:.0f} s: {states}\n"
                    + self.log_tails()
                )
            time.sleep(delay)
            delay = min(delay * 1.5, 0.5)

    def node_state(self) -> str:
        """The node's state as ``sinfo -h -o %t`` prints it: ``idle``, ``mix``, ``alloc``,
        ``comp`` (completing), ``idle*`` (not responding)…"""
        r = self.run("sinfo", "-h", "-n", self.node, "-o", "%t", check=False)
        return r.stdout.strip() if r.returncode == 0 else f"(sinfo: {r.stderr.strip()})"

    def cancel_all(self) -> list[int]:
        """Cancel every job that has not finished; the ids cancelled."""
        ids = sorted(
            {int(j["job_id"]) for j in self.jobs() if j.get("job_state") not in FINAL_STATES}
        )
        if ids:
            self.run("scancel", *map(str, ids))
        return ids

    def wait_idle(self, timeout: float = 60.0) -> None:
        """Wait until no job is unfinished and the node is ``idle`` (not completing)."""
        deadline = time.monotonic() + timeout
        while True:
            busy = [j.get("job_id") for j in self.jobs() if j.get("job_state") not in FINAL_STATES]
            state = self.node_state()
            if not busy and state == "idle":
                return
            if time.monotonic() > deadline:
                raise SlurmError(
                    f"cluster not idle after {timeout:.0f} s: unfinished jobs "
                    f"{busy}, node {state}\n" + self.log_tails()
                )
            time.sleep(0.1)

    # --- cgroups --------------------------------------------------------------------------

    def cgroup_roots(self) -> list[Path]:
        """``<hierarchy>/slurm_<node>`` in every hierarchy: where Slurm puts this cluster's
        groups (existing or not)."""
        return [mp / f"slurm_{self.node}" for mp in cgroup_mountpoints()]

    def cgroup_dirs(self) -> list[Path]:
        """Every cgroup directory this cluster's Slurm (and what ran in its jobs) has now,
        deepest first."""
        return dirs_below(self.cgroup_roots())

    def job_cgroup_dirs(self) -> list[Path]:
        """The ``job_<id>`` directories (and below) that exist now: none once every job has
        finished and Slurm has cleaned up after it."""
        return [d for d in self.cgroup_dirs() if any(p.startswith("job_") for p in d.parts)]

    def wait_job_cgroups_gone(self, timeout: float = 30.0) -> list[Path]:
        """Wait until Slurm has removed every job's cgroup directories; those still there
        after ``timeout`` (none when it cleaned up)."""
        deadline = time.monotonic() + timeout
        while True:
            left = self.job_cgroup_dirs()
            if not left or time.monotonic() > deadline:
                return left
            time.sleep(0.05)

    # --- logs -----------------------------------------------------------------------------

    def log_tails(self, lines: int = 25) -> str:
        parts = []
        for p in (
            self.slurmctld_log,
            self.slurmd_log,
            self.state_dir / "slurmctld.stderr",
            self.state_dir / "slurmd.stderr",
        ):
            parts.append(f"--- {p.name} (last {lines} lines) ---\n{_tail(p, lines)}")
        return "\n".join(parts)

    # --- stop -----------------------------------------------------------------------------

    def _processes(self) -> set[int]:
        """Every live process of this cluster: one whose environment carries our
        ``SLURM_CONF`` (the daemons, slurmscriptd, every slurmstepd, the jobs' processes) or
        that sits in one of our cgroups; never this process or an ancestor."""
        marker = f"SLURM_CONF={self.conf}".encode()
        found = procs_in(self.cgroup_dirs())
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                environ = (entry / "environ").read_bytes()
            except OSError:
                continue
            if marker in environ.split(b"\0"):
                found.add(int(entry.name))
        return {p for p in found - ancestors() if pid_alive(p)}

    @timed("stop")
    def stop(self) -> None:
        """Cancel what runs, stop the daemons, kill the rest, remove our cgroups; raise
        :class:`SlurmError` naming whatever could not be cleaned up."""
        if self._stopped:
            return
        self._stopped = True
        problems: list[str] = []
        daemons = [p for p in (self._ctld, self._slurmd) if p is not None and p.poll() is None]
        if len(daemons) == 2:  # both up: let Slurm end the jobs itself
            try:
                self.cancel_all()
                self.wait_idle(timeout=30)
            except (SlurmError, subprocess.TimeoutExpired, ValueError) as exc:
                problems.append(f"jobs did not end when cancelled: {exc}")
        for name, proc in (("slurmd", self._slurmd), ("slurmctld", self._ctld)):
            if proc is None:
                continue
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    problems.append(f"{name} (pid {proc.pid}) ignored SIGTERM for 20 s")
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGKILL)  # its own group: it is alive
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        proc.wait(timeout=10)
        thaw(self.cgroup_dirs())
        left = self._processes()
        if left:
            described = [f"{p} {_cmdline(p)}" for p in sorted(left)]
            still = kill_pids(left)
            problems.append(
                "processes outlived the daemons (killed): "
                + ", ".join(described)
                + (f"; still alive: {sorted(still)}" if still else "")
            )
        failed = rmdir_all(self.cgroup_dirs())
        if failed:
            problems.append("cgroup directories that cannot be removed:\n  " + "\n  ".join(failed))
        remaining = [str(d) for d in self.cgroup_dirs()]
        if remaining and not failed:
            problems.append(f"cgroup directories left: {remaining}")
        if problems:
            raise SlurmError(
                "the Slurm cluster's stop left things behind:\n"
                + "\n".join(problems)
                + "\n"
                + self.log_tails(10)
            )


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return "?"


def _result(record: Mapping[str, Any]) -> JobResult:
    """A ``squeue --json`` record's final state.  22.05 gives ``exit_code`` as the raw wait
    status (``exit 3`` is 768; a SIGKILL is 9): decoded here."""
    status = int(record.get("exit_code") or 0)
    sig = status & 0x7F
    task = record.get("array_task_id")
    return JobResult(
        job_id=int(record["job_id"]),
        array_task_id=int(task) if task is not None else None,
        state=str(record.get("job_state")),
        exit_code=0 if sig else (status >> 8) & 0xFF,
        signal=sig,
        reason=str(record.get("state_reason", "")),
    )


@timed("start")
def start_cluster(state_dir: Path, timeout: float = 60.0) -> SlurmCluster:
    """Start a private cluster in ``state_dir`` and wait until its node is idle
    (:class:`SlurmError`, with the daemons' log tails, if it is not within ``timeout``)."""
    reap_stale_clusters()
    hw = node_hardware()
    for attempt in range(3):
        cluster = _launch(state_dir / f"c{attempt}", hw)
        try:
            _wait_ready(cluster, timeout)
            return cluster
        except BaseException as exc:
            try:
                cluster.stop()
            except SlurmError as stop_exc:
                raise SlurmError(f"{exc}\n... and its stop failed too: {stop_exc}") from exc
            # Another process took a port between free_ports and the daemon's bind: retry.
            if not ("Address already in use" in str(exc) and attempt < 2):
                raise
    raise AssertionError("unreachable")


def _launch(d: Path, hw: Mapping[str, int]) -> SlurmCluster:
    d.mkdir(parents=True)
    (d / "state").mkdir()
    (d / "spool").mkdir()
    (d / "plugstack.conf").write_text("")
    node = f"edgeprof-{os.getpid()}-{secrets.token_hex(3)}"
    if len(str(d / "spool" / f"{node}_4294967295.4294967295")) > SOCKET_PATH_MAX:
        raise SlurmUnavailable(f"{d} is too long a path for slurmstepd's sockets")
    host = socket.gethostname().split(".")[0]
    ctld_port, slurmd_port = free_ports(2)
    conf = d / "slurm.conf"
    conf.write_text(
        slurm_conf(
            cluster=node,
            node=node,
            partition="edgeprof",
            host=host,
            hw=hw,
            ctld_port=ctld_port,
            slurmd_port=slurmd_port,
            d=d,
        )
    )
    (d / "cgroup.conf").write_text(CGROUP_CONF)
    cores = hw["Boards"] * hw["SocketsPerBoard"] * hw["CoresPerSocket"]
    cluster = SlurmCluster(
        state_dir=d,
        conf=conf,
        cluster_name=node,
        node=node,
        partition="edgeprof",
        cpus=hw["CPUs"],
        cores=cores,
        threads_per_core=hw["ThreadsPerCore"],
        ctld_port=ctld_port,
        slurmd_port=slurmd_port,
        slurmctld_log=d / "slurmctld.log",
        slurmd_log=d / "slurmd.log",
        _ctld=None,
        _slurmd=None,
    )
    existing = [str(r) for r in cluster.cgroup_roots() if r.exists()]
    if existing:
        raise SlurmError(f"cgroup directories of node {node} exist before its start: {existing}")
    env = cluster.env
    cluster._ctld = _spawn(["slurmctld", "-D", "-f", str(conf)], d / "slurmctld.stderr", env, d)
    cluster._slurmd = _spawn(
        ["slurmd", "-D", "-N", node, "-f", str(conf)], d / "slurmd.stderr", env, d
    )
    return cluster


def _spawn(cmd: list[str], out: Path, env: dict[str, str], cwd: Path) -> subprocess.Popen[bytes]:
    binary = which(cmd[0])
    if binary is None:
        raise SlurmUnavailable(f"{cmd[0]} not found")
    return spawn_daemon([str(binary), *cmd[1:]], out, env, cwd)


def _wait_ready(cluster: SlurmCluster, timeout: float) -> None:
    """Poll until ``scontrol ping`` answers UP and ``sinfo`` shows the node ``idle``; fail
    at once if a daemon exits or the node turns invalid or drained."""
    deadline = time.monotonic() + timeout
    ping = state = ""
    while True:
        for name, proc in (("slurmctld", cluster._ctld), ("slurmd", cluster._slurmd)):
            if proc is not None and proc.poll() is not None:
                raise SlurmError(
                    f"{name} exited ({proc.returncode}) during start\n" + cluster.log_tails()
                )
        if "is UP" not in ping:
            with contextlib.suppress(subprocess.TimeoutExpired):
                r = cluster.run("scontrol", "ping", check=False, timeout=15)
                ping = (r.stdout + r.stderr).strip()
        if "is UP" in ping:
            state = cluster.node_state()
            if state == "idle":
                return
            if state.startswith(("inval", "drain", "drng", "fail")):
                raise SlurmError(
                    f"node {cluster.node} is {state} after registering\n" + cluster.log_tails()
                )
        if time.monotonic() > deadline:
            raise SlurmError(
                f"cluster not ready after {timeout:.0f} s (ping: {ping!r}, node: "
                f"{state!r})\n" + cluster.log_tails()
            )
        time.sleep(0.05)
