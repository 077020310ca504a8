"""measure/leases.py: core leases on lock files in tmp_path, and their use by the runner.

Real ``flock`` on real files (the lock is per open file description, so two leases of this
one process exclude each other as two processes would); the clock, the sleep between
attempts and edgeprof's affinity are fakes.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import edgeprof
from edgeprof.cli import main
from edgeprof.errors import ConfigError, CoresBusy, LimitError
from edgeprof.measure import leases, limits
from edgeprof.measure.leases import Lease, acquire, holder, lease_cores, lease_dir
from edgeprof.measure.limits import THREAD_VARS, allowed_cpus
from edgeprof.measure.runner import profile
from edgeprof.model import Limits, RunResult, RunSpec
from edgeprof.sweeps.plan import SweepPlan
from edgeprof.sweeps.sweep import run_sweep
from tests.fakes import FakeBackend, FakeRun


@pytest.fixture(autouse=True)
def _no_inherited_thread_vars(monkeypatch: pytest.MonkeyPatch) -> None:
    for v in THREAD_VARS:
        monkeypatch.delenv(v, raising=False)


def no_sleep(seconds: float) -> None:
    raise AssertionError("a lease that should not wait waited")


def held(directory: Path, cores: range | tuple[int, ...]) -> set[int]:
    """The cores of ``cores`` that some descriptor holds (probed with a lease of our own)."""
    out = set()
    for c in cores:
        try:
            acquire((c,), 1, cores_busy="fail", directory=directory, sleep=no_sleep).close()
        except CoresBusy:
            out.add(c)
    return out


# -- where the lock files live ----------------------------------------------------------------


def test_lease_dir_default_paths() -> None:
    assert lease_dir({}, euid=0) == Path("/run/edgeprof/cores")
    assert lease_dir({"XDG_RUNTIME_DIR": "/run/user/1000"}, euid=1000) == Path(
        "/run/user/1000/edgeprof/cores"
    )
    fallback = lease_dir({}, euid=1000)
    assert fallback.name == "cores" and fallback.parent.name == "edgeprof-1000"
    # The override wins for root and users alike (tests, a directory shared by users).
    for euid in (0, 1000):
        assert lease_dir({"EDGEPROF_LEASE_DIR": "/x/y", "XDG_RUNTIME_DIR": "/r"}, euid) == Path(
            "/x/y"
        )


def test_an_empty_lease_dir_is_unset_and_a_relative_one_is_refused() -> None:
    """A relative ``EDGEPROF_LEASE_DIR`` had been made in each run's working directory: two
    runs started in two directories leased the same core unknowingly."""
    assert lease_dir({"EDGEPROF_LEASE_DIR": ""}, euid=0) == Path("/run/edgeprof/cores")
    with pytest.raises(ConfigError) as e:
        lease_dir({"EDGEPROF_LEASE_DIR": "relleases"}, euid=0)
    assert str(e.value) == (
        "EDGEPROF_LEASE_DIR=relleases is a relative path: give an absolute directory (runs "
        "started in other directories would not see its leases)"
    )


def test_a_lease_dir_that_is_a_file_is_said_to_be_one(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """It had read "…: File exists", as if the directory were there."""
    afile = tmp_path / "afile"
    afile.write_text("")
    for given in (afile, afile / "x"):
        monkeypatch.setenv("EDGEPROF_LEASE_DIR", str(given))
        assert main(["run", "--backend", "fake", "--cpus", "1", "--", "true"]) == 2
        assert capfd.readouterr().err == (
            f"edgeprof: error: cannot create the core lease directory {given}: {afile} is a "
            "file, not a directory (set EDGEPROF_LEASE_DIR to a writable directory)\n"
        )
    monkeypatch.setenv("EDGEPROF_LEASE_DIR", "relleases")
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--backend", "fake", "--cpus", "1", "--", "true"]) == 2
    assert not (tmp_path / "relleases").exists()


def test_the_suite_isolates_its_leases(isolated_core_leases: Path) -> None:
    assert lease_dir() == isolated_core_leases


def test_a_default_directory_of_another_user_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ``/tmp`` fallback could be a symlink planted by another user."""
    monkeypatch.delenv("EDGEPROF_LEASE_DIR")
    (tmp_path / "real").mkdir()
    (tmp_path / "planted").symlink_to(tmp_path / "real")
    monkeypatch.setattr(leases, "lease_dir", lambda: tmp_path / "planted")
    with pytest.raises(ConfigError, match="not a directory of this user"):
        acquire((0,), 1, sleep=no_sleep)


def test_a_lease_directory_that_takes_no_file_is_one_line(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``/proc/1`` takes no file (nor a read-only or full file system): a traceback, exit 1,
    had said so."""
    monkeypatch.setenv("EDGEPROF_LEASE_DIR", "/proc/1")
    with pytest.raises(ConfigError, match=r"^cannot lock the core lease file /proc/1/cpu0: "):
        acquire((0,), 1, sleep=no_sleep)
    assert main(["run", "--backend", "fake", "--cpus", "1", "--", "true"]) == 2
    err = capfd.readouterr().err
    assert err.startswith("edgeprof: error: cannot lock the core lease file /proc/1/cpu0: ")
    assert err.endswith("(set EDGEPROF_LEASE_DIR to a writable directory)\n")


# -- choosing and holding ---------------------------------------------------------------------


def test_first_free_cores_are_taken_and_excluded(tmp_path: Path) -> None:
    a = acquire((0, 1, 2, 3), 1, directory=tmp_path, sleep=no_sleep)
    b = acquire((0, 1, 2, 3), 2, directory=tmp_path, sleep=no_sleep)
    c = acquire((3, 2, 1, 0), 1, directory=tmp_path, sleep=no_sleep)  # tried in the order given
    assert (a.cores, b.cores, c.cores) == ((0,), (1, 2), (3,))
    assert (a.waited_s, b.waited_s) == (0.0, 0.0)
    assert holder(tmp_path, 1) == os.getpid()
    b.close()
    assert holder(tmp_path, 1) is None  # a free core's file names no holder
    assert acquire((0, 1, 2, 3), 2, directory=tmp_path, sleep=no_sleep).cores == (1, 2)


def test_lock_descriptors_are_close_on_exec(tmp_path: Path) -> None:
    """The workload must never inherit a lease (and keep it after edgeprof)."""
    with acquire((0, 1), 2, directory=tmp_path, sleep=no_sleep) as lease:
        fds = list(lease._fds.values())
        assert fds and all(fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC for fd in fds)
    for fd in fds:
        with pytest.raises(OSError):
            os.fstat(fd)  # closed: the kernel dropped the lock


def test_close_is_idempotent(tmp_path: Path) -> None:
    lease = acquire((0,), 1, directory=tmp_path, sleep=no_sleep)
    lease.close()
    lease.close()
    assert held(tmp_path, (0,)) == set()


def test_fail_names_the_holders_and_holds_nothing(tmp_path: Path) -> None:
    blocker = acquire((1,), 1, directory=tmp_path, sleep=no_sleep)
    with pytest.raises(CoresBusy) as e:  # exactly 0-2 (an explicit cpuset): 1 is busy
        acquire((0, 1, 2), 3, cores_busy="fail", directory=tmp_path, sleep=no_sleep)
    assert str(e.value) == (
        f"cores busy: needs cores 0-2: core 1 is held by another run of this process (pid "
        f"{os.getpid()}) "
        f"(leases in {tmp_path}); --cores-busy wait waits for them"
    )
    assert held(tmp_path, range(3)) == {1}  # 0 was taken during the attempt, and given back
    other = acquire((2,), 1, directory=tmp_path, sleep=no_sleep)
    busy = (
        r"needs 2 free cores of 0-2: core 1 is held by another run of this process \(pid \d+\), "
        r"core 2 by another run"
    )
    with pytest.raises(CoresBusy, match=busy):
        acquire((0, 1, 2), 2, cores_busy="fail", directory=tmp_path, sleep=no_sleep)
    blocker.close()
    other.close()


def test_several_cores_are_named_as_cores(tmp_path: Path) -> None:
    """"waiting for core 0-1" and "leased core 0-1" had said one core for two (a shared
    host's tester); one core stays "core 1"."""
    blocker = acquire((1,), 1, directory=tmp_path, sleep=no_sleep)
    told: list[str] = []

    def sleep(seconds: float) -> None:
        blocker.close()

    lease = acquire((0, 1), 2, directory=tmp_path, on_wait=told.append, sleep=sleep)
    mine = f"another run of this process (pid {os.getpid()})"
    assert told[0].startswith(f"waiting for cores 0-1: core 1 is held by {mine} ")
    assert told[1].startswith("leased cores 0-1 after waiting ")
    assert leases.named_cores((1,)) == "core 1"
    assert leases.named_cores((0, 2, 3)) == "cores 0,2-3"
    lease.close()


def test_wait_tells_once_and_takes_the_cores_when_freed(tmp_path: Path) -> None:
    blockers = [acquire((c,), 1, directory=tmp_path, sleep=no_sleep) for c in (0, 1)]
    told: list[str] = []
    now = [100.0]
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        now[0] += seconds
        if len(sleeps) == 3:
            blockers[1].close()  # the other run ends

    lease = acquire(
        (0, 1), 1, directory=tmp_path, on_wait=told.append, sleep=sleep, clock=lambda: now[0]
    )
    assert lease.cores == (1,)
    assert lease.waited_s == pytest.approx(3 * leases.POLL_S)
    assert sleeps == [leases.POLL_S] * 3
    mine = f"another run of this process (pid {os.getpid()})"
    assert told == [
        f"waiting for 1 free core of 0-1: core 0 is held by {mine}, core 1 by {mine} "
        f"(leases in {tmp_path}); --cores-busy fail refuses instead",
        "leased core 1 after waiting 0.3s",
    ]
    lease.close()
    blockers[0].close()


def test_an_interrupted_wait_holds_nothing(tmp_path: Path) -> None:
    blocker = acquire((1,), 1, directory=tmp_path, sleep=no_sleep)

    def interrupted(seconds: float) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        acquire((0, 1), 2, directory=tmp_path, sleep=interrupted)
    assert held(tmp_path, range(2)) == {1}
    blocker.close()


@pytest.mark.parametrize(
    ("candidates", "count", "policy", "message"),
    [
        ((0, 1), 3, "wait", "cannot lease 3 of the cores 0-1"),
        ((0, 1), 0, "wait", "cannot lease 0"),
        ((0,), 1, "later", "expected wait or fail"),
    ],
)
def test_bad_requests(
    tmp_path: Path, candidates: tuple[int, ...], count: int, policy: str, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        acquire(candidates, count, cores_busy=policy, directory=tmp_path, sleep=no_sleep)


@pytest.mark.parametrize("seed", range(20))
def test_leases_never_overlap(tmp_path: Path, seed: int) -> None:
    """Random sequences of leases and releases over 4 cores: held sets are disjoint, a lease
    fails exactly when fewer cores than it needs are free, and a failure holds nothing."""
    rng = random.Random(seed)  # seeded: a failure replays
    directory = tmp_path
    cores = (0, 1, 2, 3)
    live: list[Lease] = []
    try:
        for _ in range(25):
            take, count, pick = rng.random() < 0.6, rng.randint(1, 4), rng.randint(0, 7)
            if not take and live:
                live.pop(pick % len(live)).close()
                continue
            taken = {c for lease in live for c in lease.cores}
            free = len(cores) - len(taken)
            try:
                lease = acquire(cores, count, cores_busy="fail", directory=directory)
            except CoresBusy:
                assert free < count
                assert held(directory, cores) == taken
                continue
            assert free >= count
            assert not set(lease.cores) & taken and len(lease.cores) == count
            live.append(lease)
    finally:
        for lease in live:
            lease.close()


# -- the allowed set --------------------------------------------------------------------------


def test_allowed_is_the_cpuset_within_the_affinity(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "own_affinity", lambda: frozenset({1, 3, 5}))
    assert allowed_cpus(FakeBackend(cpus=(0, 1, 2, 3))) == (1, 3)
    with pytest.raises(LimitError, match=r"cpuset \(0,2\) and in edgeprof's own affinity"):
        allowed_cpus(FakeBackend(cpus=(0, 2)))


class ContainerBackend(FakeBackend):
    """A backend whose workload is not this process's child (as Docker's)."""

    runs_on_host = False


def test_a_container_backend_is_not_bound_by_our_affinity(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(limits, "own_affinity", lambda: frozenset({1}))
    assert allowed_cpus(ContainerBackend(cpus=(0, 1, 2, 3))) == (0, 1, 2, 3)
    assert ContainerBackend().leases_cores is False and FakeBackend().leases_cores is True


class Guard:
    """The runner's interrupt guard, scripted: ``received`` set by the test."""

    def __init__(self, received: int | None = None) -> None:
        self.received = received

    def armed(self) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()


def test_lease_cores_only_for_pinned_runs_on_this_hosts_cores() -> None:
    for lim, be in [
        (Limits(cpus=0.5), FakeBackend()),
        (Limits(memory="64m"), FakeBackend()),
        (Limits(cpus=1, cpuset="0"), ContainerBackend()),
    ]:
        assert lease_cores(be, lim, None, "wait", None, Guard()) is None
    with pytest.raises(ConfigError, match="--cores-busy never"):
        lease_cores(FakeBackend(), Limits(), None, "never", None, Guard())


def test_a_signal_during_the_attempt_gives_the_lease_back(isolated_core_leases: Path) -> None:
    with pytest.raises(KeyboardInterrupt):
        lease_cores(FakeBackend(), Limits(cpus=1, cpuset="0"), (0, 1), "wait", None, Guard(2))
    assert held(isolated_core_leases, range(2)) == set()


# -- through the runner -----------------------------------------------------------------------


def run_capture(tmp_path: Path, limits_: Limits, **kw: object) -> tuple[RunResult, str]:
    out = tmp_path / "stdout"
    with out.open("w") as f:
        r = profile(
            ["sh", "-c", 'echo "$OMP_NUM_THREADS"'],
            limits_,
            interval=0.01,
            stdout=f.fileno(),
            **kw,  # type: ignore[arg-type]
        )
    return r, out.read_text()


def test_a_run_takes_a_free_core_and_threads_follow(
    tmp_path: Path, isolated_core_leases: Path
) -> None:
    blocker = acquire((0,), 1, sleep=no_sleep)
    be = FakeBackend(cpus=(0, 1, 2, 3))
    r, text = run_capture(tmp_path, Limits(cpus=2), backend=be)
    assert r.limits.cpuset == (1, 2)
    assert r.lease is not None and (r.lease.cores, r.lease.chosen) == ((1, 2), True)
    assert r.lease.waited_s == 0.0 and text == "2\n"
    assert held(isolated_core_leases, range(4)) == {0}  # released when the run ended
    blocker.close()
    r, _ = run_capture(tmp_path, Limits(cpuset="3"), backend=be)
    assert r.lease is not None and (r.lease.cores, r.lease.chosen) == ((3,), False)
    r, _ = run_capture(tmp_path, Limits(cpus=1.5), backend=be)
    assert r.lease is None and r.limits.cpuset is None  # not pinned: shares every core


def test_fail_leaves_nothing_and_wait_waits(tmp_path: Path) -> None:
    be = FakeBackend(cpus=(0, 1))
    blocker = acquire((0, 1), 2, sleep=no_sleep)
    with pytest.raises(CoresBusy):
        profile(["true"], Limits(cpus=1), backend=be, cores_busy="fail", out_dir=tmp_path / "o")
    assert not (tmp_path / "o").exists() and be.runs == []
    told: list[str] = []

    def on_wait(message: str) -> None:
        told.append(message)
        blocker.close()  # the holder ends while we wait

    r = profile(["true"], Limits(cpus=1), backend=be, interval=0.01, on_wait=on_wait)
    assert r.lease is not None and r.lease.cores == (0,) and r.lease.waited_s > 0
    assert len(told) == 2
    assert told[0].startswith(
        "waiting for 1 free core of 0-1: core 0 is held by another run of this process (pid "
    )
    assert told[1].startswith("leased core 0 after waiting ")


def test_the_library_names_the_policy_as_python(
    isolated_core_leases: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """A library caller read the CLI's ``--cores-busy fail refuses instead`` on stderr and
    ``cores_busy wait waits for them`` in CoresBusy (a test author's xdist workers): both
    say the keyword as Python now; the command line's words stay (the test above)."""
    be = FakeBackend(cpus=(0, 1))
    blocker = acquire((0, 1), 2, sleep=no_sleep)
    with pytest.raises(CoresBusy) as e:
        edgeprof.profile(["true"], Limits(cpus=1), backend=be, cores_busy="fail")
    assert str(e.value).endswith('; cores_busy="wait" waits for them')
    told: list[str] = []

    def on_wait(message: str) -> None:
        told.append(message)
        blocker.close()

    edgeprof.profile(["true"], Limits(cpus=1), backend=be, interval=0.01, on_wait=on_wait)
    assert told[0].endswith('; cores_busy="fail" refuses instead')
    capfd.readouterr()
    blocker = acquire((0, 1), 2, sleep=no_sleep)
    threading.Timer(0.3, blocker.close).start()  # the holder ends while edgeprof waits
    edgeprof.profile(["true"], Limits(cpus=1), backend=be, interval=0.01)  # told on stderr
    err = capfd.readouterr().err
    assert '; cores_busy="fail" refuses instead\n' in err and "--cores-busy" not in err


def test_ctrl_c_while_waiting_leaves_nothing(tmp_path: Path, isolated_core_leases: Path) -> None:
    be = FakeBackend(cpus=(0, 1))
    blocker = acquire((1,), 1, sleep=no_sleep)
    # What was there before, not Python's default: a suite started in the background by a
    # non-interactive shell (`make test &`) inherits SIGINT ignored, and keeps it so.
    before = signal.getsignal(signal.SIGINT)

    def on_wait(message: str) -> None:
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C, while the runner guards the wait

    with pytest.raises(KeyboardInterrupt):
        profile(["true"], Limits(cpuset="0-1"), backend=be, on_wait=on_wait, out_dir=tmp_path / "o")
    assert not (tmp_path / "o").exists() and be.runs == []
    assert held(isolated_core_leases, range(2)) == {1}
    assert signal.getsignal(signal.SIGINT) is before  # handlers restored
    blocker.close()


class FailingBackend(FakeBackend):
    def launch(self, spec: RunSpec) -> FakeRun:
        raise OSError("launch failed")


def test_the_lease_is_released_when_the_run_raises(isolated_core_leases: Path) -> None:
    with pytest.raises(OSError, match="launch failed"):
        profile(["true"], Limits(cpus=2), backend=FailingBackend(cpus=(0, 1)))
    assert held(isolated_core_leases, range(2)) == set()


def test_a_cpu_the_machine_lacks_takes_no_lease(isolated_core_leases: Path) -> None:
    """``--cpuset 5 --allow-over-host`` on a 2-CPU host had leased core 5 (its file left in
    the lease directory) before the kernel refused the CPU at launch: now it is refused
    before anything is taken."""
    be = FailingBackend(cpus=(0, 1), possible=frozenset({0, 1}))
    with pytest.raises(LimitError, match=r"^--cpuset 5: CPU 5 does not exist on this machine"):
        profile(["true"], Limits(cpuset="5"), backend=be, allow_over_host=True)
    assert not (isolated_core_leases / "cpu5").exists()


def test_a_sweep_does_not_wait_for_itself(tmp_path: Path) -> None:
    """Each run releases before the next leases: every round gets the first core again."""
    plan = SweepPlan(command=("true",), models=("a", "b"), limits=(Limits(cpus=1),), repeat=3)
    sweep = run_sweep(
        plan,
        backend=FakeBackend(cpus=(0, 1)),
        profile_options={"interval": 0.01, "cores_busy": "fail"},
    )
    assert [r.lease.cores for r in sweep.runs if r.lease] == [(0,)] * 6


def test_result_json_keeps_the_lease_and_reads_older_files(tmp_path: Path) -> None:
    r, _ = run_capture(tmp_path, Limits(cpus=1), backend=FakeBackend())
    d = r.to_dict()
    assert d["lease"] == {"cores": [0], "waited_s": 0.0, "chosen": True}
    assert RunResult.from_dict(d) == r
    del d["lease"]  # a file written before leases
    assert RunResult.from_dict(d).lease is None


# -- the command line -------------------------------------------------------------------------


@pytest.fixture
def all_cores_held() -> Iterator[None]:
    with acquire((0, 1), 2, sleep=no_sleep):
        yield


@pytest.mark.usefixtures("all_cores_held")
def test_cli_fail_is_one_line_and_exit_2(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    argv = ["run", "--backend", "fake", "--cpus", "1", "--cores-busy", "fail"]
    assert main([*argv, "--out", str(tmp_path / "o"), "--", "true"]) == 2
    out, err = capfd.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith("edgeprof: error: cores busy: needs 1 free core of 0-1: core 0 is held")
    assert not (tmp_path / "o").exists()


def test_cli_refuses_an_unknown_policy(capfd: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--backend", "fake", "--cores-busy", "later", "--", "true"]) == 2
    _, err = capfd.readouterr()
    assert err == "edgeprof: error: --cores-busy later: expected wait or fail\n"


def test_fit_bench_and_layers_take_cores_busy_as_run_does(
    tmp_path: Path, isolated_core_leases: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Their waiting line ends "--cores-busy fail refuses instead", which fit and bench had
    refused as "No such option" (a shared host's tester): fail is one line, exit 2, no run."""
    (tmp_path / "tiny.py").write_text("def load(bs):\n    return bs\n\ndef infer(s):\n    pass\n")
    mine = f"another run of this process (pid {os.getpid()})"
    held = f"core 0 is held by {mine} (leases in {isolated_core_leases})"
    fail = ["--backend", "fake", "--cpuset", "0", "--cores-busy", "fail"]
    with acquire((0,), 1, sleep=no_sleep):
        for args in (
            ["fit", *fail, "--", "touch", str(tmp_path / "ran")],
            ["bench", "tiny:infer", *fail, "--cwd", str(tmp_path)],
        ):
            assert main(args) == 2
            assert capfd.readouterr().err.endswith(
                f"edgeprof: error: cores busy: needs core 0: {held}; --cores-busy wait waits "
                "for them\n"
            )
    assert not (tmp_path / "ran").exists()
    assert main(["layers", "profile", "--help"]) == 0
    assert "--cores-busy" in capfd.readouterr().out
