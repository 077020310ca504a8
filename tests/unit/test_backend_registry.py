"""The backend registry: how an outside backend (here the tests' scripted one) plugs in."""

from __future__ import annotations

import pytest

from edgeprof.backends import (
    NAMES,
    backend_names,
    get_backend,
    register_backend,
    unregister_backend,
)
from edgeprof.errors import BackendUnavailable, ConfigError
from edgeprof.measure.runner import profile
from tests.fakes import FakeBackend


@pytest.mark.usefixtures("no_fake_backend")
def test_built_in_names_only_by_default() -> None:
    assert NAMES == backend_names() == ("auto", "cgroup", "docker", "process")
    with pytest.raises(ConfigError, match=r"choose one of auto, cgroup, docker, process$"):
        get_backend("fake")


@pytest.mark.usefixtures("no_fake_backend")
def test_registered_backend_is_made_checked_and_listed() -> None:
    class Checked(FakeBackend):
        checked = 0

        def check(self) -> None:
            self.checked += 1

    made: list[Checked] = []

    def factory() -> Checked:
        made.append(Checked())
        return made[-1]

    register_backend("mine", factory)
    try:
        assert backend_names() == ("auto", "cgroup", "docker", "process", "mine")
        be = get_backend("mine")
        assert be is made[0] and made[0].checked == 1
        assert get_backend("mine") is made[1]  # a fresh backend each time
        assert profile(["true"], backend="mine", interval=0.01).backend == "fake"
        with pytest.raises(ConfigError, match=r"one of auto, cgroup, docker, process, mine$"):
            get_backend("nope")
    finally:
        unregister_backend("mine")
    assert "mine" not in backend_names()


@pytest.mark.usefixtures("no_fake_backend")
def test_an_unavailable_registered_backend_says_so() -> None:
    class Unavailable(FakeBackend):
        def check(self) -> None:
            raise BackendUnavailable("mine: no device attached")

    register_backend("mine", Unavailable)
    try:
        with pytest.raises(BackendUnavailable, match="no device attached"):
            get_backend("mine")
    finally:
        unregister_backend("mine")


@pytest.mark.parametrize("name", ["", "auto", "cgroup", "docker", "process", "fake"])
def test_names_cannot_be_taken_twice(name: str) -> None:
    # "fake" is taken by the unit tier's conftest, the others are built in or empty.
    with pytest.raises(ValueError, match="built in or already registered"):
        register_backend(name, FakeBackend)


def test_unregistering_an_unknown_name_is_an_error() -> None:
    with pytest.raises(KeyError):
        unregister_backend("never-registered")
