"""Fuzzed limits against the host: a ``cpus`` above its CPUs, a ``cpuset`` naming others,
a memory limit above its ``MemTotal`` are refused with the host's figure in one line, unless
``--allow-over-host`` (``run``, ``fit``, ``bench``); the host's memory read from any
``meminfo``, and a Docker daemon's from the daemon.  The fake backend has CPUs 0-1; this
host's memory is read here, never written into a test."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from edgeprof.backends.docker import DockerBackend
from edgeprof.backends.host_resources import meminfo_total as memory_total
from edgeprof.cli import main
from edgeprof.cpu_units import MIN_CPUS, format_cpuset
from edgeprof.measure.limits import resolve
from edgeprof.model import Limits
from edgeprof.resultfiles import load_runs
from edgeprof.units import format_binary
from tests.conftest import require

from .fuzz_strategies import Refused, accepted, fuzz, hostile


@fuzz(300)
@given(
    available=st.sets(st.integers(0, 63), min_size=1, max_size=16).map(sorted).map(tuple),
    cpus=st.none() | st.floats(min_value=MIN_CPUS, max_value=80),
    cpuset=st.none() | st.sets(st.integers(0, 70), min_size=1, max_size=8),
    memory=st.none() | st.integers(6 * 2**20, 2**42),
    total=st.none() | st.integers(2**20, 2**42),
    allow=st.booleans(),
)
def test_limits_beyond_the_host_are_refused_with_its_figure(
    available: tuple[int, ...],
    cpus: float | None,
    cpuset: set[int] | None,
    memory: int | None,
    total: int | None,
    allow: bool,
) -> None:
    lim = Limits(cpus=cpus, cpuset=None if cpuset is None else sorted(cpuset), memory=memory)
    got = accepted(resolve, lim, available, memory=total, allow_over_host=allow)
    over_memory = memory is not None and total is not None and memory > total
    missing = cpuset is not None and not cpuset <= set(available)
    over_cpus = cpus is not None and cpuset is None and cpus > len(available)
    if over_memory and not allow:
        assert isinstance(got, Refused) and format_binary(total) in got.message
    elif missing and not allow:
        assert isinstance(got, Refused) and f"available: {format_cpuset(available)}" in got.message
    elif cpus is not None and cpuset is not None and cpus > len(cpuset):
        assert isinstance(got, Refused) and "--allow-over-host" not in got.message
        return  # the two options contradict each other on any host
    elif over_cpus and not allow:
        assert isinstance(got, Refused) and f"{len(available)} CPU(s)" in got.message
    else:
        assert not isinstance(got, Refused), got.message
        applied, pinned = got
        assert applied.memory == memory and applied.cpus == cpus
        if pinned:  # pinned to as many of the host's cores, never more than there are
            assert applied.cpuset is not None and set(applied.cpuset) <= set(available)
            assert len(applied.cpuset) == cpus
        return
    assert "--allow-over-host" in got.message


MEMINFO_LINES = st.one_of(
    st.integers(0, 2**64).map("MemTotal:       {} kB".format),
    st.sampled_from(["MemFree: 1 kB", "MemTotal:", "MemTotal: -1 kB", "MemTotal: 1 MB", ""]),
    hostile(),
)


@fuzz(100)
@given(st.lists(MEMINFO_LINES, max_size=4), st.binary(max_size=8))
def test_host_memory_from_any_meminfo(tmp_path: Path, lines: list[str], junk: bytes) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_bytes("\n".join(lines).encode("utf-8", "surrogatepass") + junk)
    got = memory_total(meminfo)  # a file it cannot read is no figure, never an exception
    assert got is None or (isinstance(got, int) and got >= 0)


def _host_memory() -> int:
    meminfo = Path("/proc/meminfo")
    require(meminfo.is_file(), "no /proc/meminfo: this host's figure cannot be compared")
    line = next(ln for ln in meminfo.read_text().splitlines() if ln.startswith("MemTotal:"))
    return int(line.split()[1]) * 1024


def test_host_memory_of_this_host() -> None:
    assert memory_total() == _host_memory()


def test_a_docker_daemons_memory_is_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """A remote daemon's machine is not this one: its ``docker info`` figure counts."""
    be = DockerBackend.__new__(DockerBackend)  # no daemon: only its info is asked
    monkeypatch.setattr(be, "info", lambda: {"MemTotal": 3 * 2**30, "NCPU": 4})
    assert be.memory_total() == 3 * 2**30
    monkeypatch.setattr(be, "info", lambda: {"MemTotal": "3g"})
    assert be.memory_total() is None  # a figure it cannot read checks nothing


RUN = ["run", "--backend", "fake", "--interval", "0.01"]


@pytest.mark.parametrize(
    ("option", "value", "figure"),
    [
        ("--memory", lambda mem: f"{mem + 2**20}b", lambda mem: format_binary(mem)),
        ("--cpus", lambda mem: "3", lambda mem: "2 CPU(s) available here (0-1)"),
        ("--cpuset", lambda mem: "1,5", lambda mem: "(available: 0-1)"),
    ],
)
def test_limits_beyond_the_host_need_allow_over_host(
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    option: str,
    value: Callable[[int], str],
    figure: Callable[[int], str],
) -> None:
    """The fake backend has CPUs 0-1; the memory is this host's MemTotal, read here."""
    mem = _host_memory()
    args = [option, value(mem), "--out", str(tmp_path / "out"), "--", "true"]
    assert main([*RUN, *args]) == 2
    (line,) = capfd.readouterr().err.splitlines()
    assert line.startswith(f"edgeprof: error: {option} ") and figure(mem) in line
    assert line.endswith("; --allow-over-host to run anyway")
    assert not (tmp_path / "out").exists()
    assert main([*RUN, "--allow-over-host", *args]) == 0
    result = load_runs([tmp_path / "out" / "result.json"])[0]
    asked = Limits(**{option[2:]: value(mem)})
    assert (result.limits.cpus, result.limits.memory) == (asked.cpus, asked.memory)
    if option == "--cpus":
        assert result.limits.cpuset is None and result.lease is None  # not pinned: no cores
    # What the host could not give is said with the run, not only at the refusal.
    said = {
        "--memory": f"--memory {format_binary(mem + 2**20)} is more than the "
        f"{format_binary(mem)} a run may have here (MemTotal)",
        "--cpus": "--cpus 3 is more than the 2 CPU(s) this run may use (0-1): it had at most 2",
    }
    over = [w for w in result.warnings if "(--allow-over-host)" in w]
    assert [w.startswith(said[option]) for w in over] == ([True] if option in said else [])


def test_fit_takes_allow_over_host(capfd: pytest.CaptureFixture[str]) -> None:
    assert main(["fit", "--backend", "fake", "--cpus", "3", "--", "true"]) == 2
    assert "--allow-over-host to run anyway" in capfd.readouterr().err


def test_bench_takes_allow_over_host(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "tiny.py").write_text("def load(bs):\n    return bs\n\ndef infer(s):\n    pass\n")
    bench = ["bench", "tiny.py:infer", "--backend", "fake", "--cwd", str(tmp_path), "--cpus", "3"]
    assert main(bench) == 2
    assert capfd.readouterr().err.endswith("; --allow-over-host to run anyway\n")
    assert main([*bench, "--allow-over-host", "--iterations", "1", "--warmup", "0"]) == 0
