"""Fixtures of the docker tier: one private Docker daemon per test session.

``docker_daemon`` starts a private dockerd (see ``daemon.py``), makes sure the base images are
there and yields a :class:`DockerSession`; nothing global is set (no ``DOCKER_HOST``): pass
``session.host`` or use ``session.client``.  At the end of the session the daemon is stopped
and everything it made is removed; a leftover fails the session's teardown.

Every test that uses the fixture is also checked for leaks: no container may outlive it, and
no cgroup directory of this session's may appear below this process's own group (in any
hierarchy) other than the daemon's parent group and the directories on the way to it
(:func:`_groups_below_own` says which are this session's).

If Docker cannot be set up here (no root, no apt-get, no network for the first install), the
tests skip with the reason, or fail when ``CI=true``: no tier may skip in CI.
``EDGEPROF_DOCKER_FRESH=1`` gives the session a fresh data root instead of the cached one.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from edgeprof.backends import owner
from tests.conftest import require
from tests.docker.daemon import (
    TIMINGS,
    DockerSession,
    DockerUnavailable,
    cgroup_hierarchies,
    default_cache_dir,
    ensure_base_images,
    ensure_docker_installed,
    own_cgroup,
    start_daemon,
)


@pytest.fixture(scope="session")
def docker_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DockerSession]:
    """A private Docker daemon with the base images, for the whole session."""
    require(os.geteuid() == 0, "the docker tier starts its own Docker daemon: needs root")
    try:
        import docker
    except ImportError as exc:
        require(False, f"the Docker SDK is missing ({exc}): pip install docker")
        raise
    require(hasattr(docker, "APIClient"), "the Docker SDK is missing: pip install docker")
    fresh = os.environ.get("EDGEPROF_DOCKER_FRESH", "") not in ("", "0")
    try:
        ensure_docker_installed()
        daemon = start_daemon(
            tmp_path_factory.mktemp("docker"),
            data_root=None if fresh else default_cache_dir() / "data-root",
        )
    except DockerUnavailable as exc:
        require(False, f"cannot start a private Docker daemon: {exc}")
        raise
    client: docker.DockerClient | None = None
    try:
        images = ensure_base_images(daemon.host)
        client = docker.DockerClient(base_url=daemon.host, timeout=300)
    except BaseException as exc:
        daemon.stop()
        if isinstance(exc, DockerUnavailable):
            require(False, f"cannot build the base images: {exc}")
        raise
    try:
        yield DockerSession(daemon.host, images, client, daemon)
    finally:
        client.close()
        daemon.stop()


def _groups_below_own() -> set[Path]:
    """Every group directory below this process's memory group's path, in every hierarchy,
    that this session may have made: one with an edgeprof name on its path (a run's parent,
    ``edgeprof-<pid>-…``; a daemon's, ``edgeprof-docker-<pid>``; the tests' own
    ``edgeprof-…``), except those of another live process's run or daemon.

    Our memory group is often the root (a CI runner, a container): what other sessions,
    daemons and system services create there meanwhile is not ours (tests/host/conftest.py
    filters the kernel tier's run groups the same way)."""
    mem = own_cgroup("memory")
    found: set[Path] = set()
    for h in cgroup_hierarchies():
        d = h.dir_of(mem)
        if d is None or not d.is_dir():
            continue
        for top, dirs, _ in os.walk(d):
            for x in dirs:
                g = Path(top) / x
                names = g.relative_to(d).parts
                if any(n.startswith("edgeprof") for n in names) and not _foreign(names):
                    found.add(g)
    return found


_DAEMON_PARENT = re.compile(r"^edgeprof-docker-(\d+)(?:-\d+)?$")


def _foreign(names: tuple[str, ...]) -> bool:
    """Whether a group on this path belongs to a live process outside this session: the
    edgeprof run or the test session whose pid its name carries, alive and neither this
    process nor one of its descendants."""
    for n in names:
        o = owner.owner_of(n)
        if o is not None:
            return owner.alive(o) and not _ours(o.pid)
        m = _DAEMON_PARENT.match(n)
        if m is not None:
            return Path(f"/proc/{m.group(1)}").exists() and not _ours(int(m.group(1)))
    return False


def _ours(pid: int) -> bool:
    """``pid`` is this process or a descendant of it."""
    me = os.getpid()
    for _ in range(64):
        if pid == me:
            return True
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        pid = int(stat.rpartition(")")[2].split()[1])
        if pid <= 1:
            return False
    return False


@pytest.fixture(autouse=True)
def _docker_leak_check(request: pytest.FixtureRequest) -> Iterator[None]:
    """For tests that use ``docker_daemon``: no container, no stray cgroup left behind."""
    if "docker_daemon" not in request.fixturenames:
        yield
        return
    session: DockerSession = request.getfixturevalue("docker_daemon")
    before = _groups_below_own()
    yield
    left = session.client.containers.list(all=True)
    names = [f"{c.name} ({c.status})" for c in left]
    for c in left:
        c.remove(force=True, v=True)
    daemon_dirs = set(session.daemon.group_dirs().values())
    allowed = {a for d in daemon_dirs for a in (d, *d.parents)}
    new = sorted(g for g in _groups_below_own() - before if g not in allowed and g.exists())
    assert not names, f"containers left behind: {names}"
    assert not new, f"cgroup directories left behind: {[str(g) for g in new]}"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print how long the docker tier's set-up steps took in this session."""
    if TIMINGS:
        steps = ", ".join(f"{k} {v:.2f} s" for k, v in TIMINGS.items())
        terminalreporter.write_line(f"docker tier set-up: {steps}")
