"""``edgeprof.profile``'s arguments of the wrong type or for another backend: each refused
in one line (:class:`ConfigError`) before anything starts, as the CLI refuses its options;
and the errors its docstring names are importable from ``edgeprof``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import tomllib

import edgeprof
from edgeprof.errors import ConfigError, CoresBusy
from edgeprof.measure import runner
from edgeprof.measure.runner import ResultNotSaved, profile
from edgeprof.model import UserIds
from tests.fakes import FakeBackend


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        # A TypeError in the name check, an AttributeError at the launch, kept in silence.
        ({"name": 5}, r"^name: expected a string or None, not 5$"),
        ({"run_as": (99999, 99999, ())}, r"^run_as: expected edgeprof.model.UserIds\(uid, gid"),
        ({"run_as": UserIds(-1, 0, ())}, r"^run_as: expected"),
        ({"run_as": UserIds(1, 1, [2])}, r"^run_as: expected"),  # type: ignore[arg-type]
        (
            {"cwd": b"/tmp"},
            r"^cwd: expected a path \(a str or a pathlib.Path\) or None, not b'/tmp'$",
        ),
        ({"device_cores": "x"}, r"^device_cores: expected a whole number of cores, 1 or more"),
        ({"device_cores": 0}, r"^device_cores: expected a whole number"),
        ({"device_cores": True}, r"^device_cores: expected a whole number"),
        ({"env": 5}, r"^env: expected a mapping of names to values or None, not 5$"),
        ({"image": 3}, r"^image: expected a string or None, not 3$"),
        ({"gpus": 1}, r"^gpus: expected a string or None, not 1$"),
        ({"device": ["rpi4"]}, r"^device: expected a string or None, not a list$"),
        # The CLI refuses --image without --backend docker; the library had recorded it.
        ({"image": "python:3"}, r"^image 'python:3' needs backend='docker': the fake backend"),
    ],
)
def test_a_bad_argument_is_one_config_error_and_creates_nothing(
    tmp_path: Path, kw: dict[str, object], match: str
) -> None:
    be = FakeBackend()
    out = tmp_path / "out"
    with pytest.raises(ConfigError, match=match):
        profile(["true"], backend=be, out_dir=out, **kw)  # type: ignore[arg-type]
    assert be.runs == []
    assert not out.exists()


@pytest.mark.parametrize(
    ("out_dir", "match"),
    [
        (b"/tmp/edgeprof-never-made", r"^out_dir: expected a path .* not b'/tmp/edgeprof-never"),
        (5, r"^out_dir: expected a path \(a str or a pathlib.Path\) or None, not 5$"),
    ],
)
def test_an_out_dir_that_is_not_a_path_is_refused(out_dir: object, match: str) -> None:
    be = FakeBackend()
    with pytest.raises(ConfigError, match=match):
        profile(["true"], backend=be, out_dir=out_dir)  # type: ignore[arg-type]
    assert be.runs == [] and not Path("/tmp/edgeprof-never-made").exists()


def test_a_backend_that_is_neither_a_name_nor_a_backend_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"^backend: expected a name \(.*\) or a Backend, not 3$"):
        profile(["true"], backend=3)  # type: ignore[arg-type]


def test_a_gpu_memory_no_gpu_measured_is_said_in_the_result(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The CLI fails --gpu-memory's budget where no GPU was measured (exit 3); the library
    has no gate, and had lost the limit in silence: the result says it."""
    monkeypatch.setattr(runner, "open_watch", lambda selection: None)  # no NVML here
    r = profile(["true"], backend=FakeBackend(), gpu_memory="1g")
    assert r.gpu is None
    assert r.warnings[-1] == (
        "gpu_memory 1.0GiB: no GPU was measured (edgeprof doctor lists the GPUs it can read), "
        "so the run was not held to it"
    )


def test_the_errors_profile_raises_are_exported() -> None:
    assert edgeprof.CoresBusy is CoresBusy and edgeprof.ResultNotSaved is ResultNotSaved
    assert {"CoresBusy", "ResultNotSaved"} <= set(edgeprof.__all__)


def test_user_ids_is_exported_as_the_run_as_error_names_it() -> None:
    with pytest.raises(ConfigError, match=r"UserIds\(uid, gid, groups\)"):
        edgeprof.profile(["true"], backend=FakeBackend(), run_as=(1, 1, ()))  # type: ignore[arg-type]
    assert edgeprof.UserIds is UserIds and "UserIds" in edgeprof.__all__
    assert edgeprof.UserIds(1, 2, (3,)).groups == (3,)


def test_the_package_says_it_is_typed() -> None:
    """PEP 561: without ``py.typed`` a user's type checker ignores the package's hints; it is
    package data, so the wheel has it (tests/tooling/test_packaging.py builds one)."""
    assert (Path(edgeprof.__file__).parent / "py.typed").is_file()
    config = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    assert "py.typed" in config["tool"]["setuptools"]["package-data"]["edgeprof"]


# -- every keyword's type, up front ------------------------------------------------------------


def _closed_fd() -> int:
    fd = os.open(os.devnull, os.O_RDONLY)
    os.close(fd)
    return fd


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        # A TypeError in the lease once the cores were busy; true; dropped in silence.
        ({"on_wait": "x"}, r"^on_wait: expected a function of one str \(print\) or None, not 'x'$"),
        ({"allow_over_host": "no"}, r"^allow_over_host: expected True or False, not 'no'$"),
        ({"squeeze": 1}, r"^squeeze: expected True or False, not 1$"),
        ({"unified_memory": None}, r"^unified_memory: expected True or False, not None$"),
        ({"device_replaced": "memory"}, r"^device_replaced: expected a tuple of option names"),
        ({"device_replaced": ("--memory", 3)}, r"^device_replaced: expected a tuple"),
        ({"gpu_memory": True}, r"^gpu_memory: expected bytes \(a whole number\), a size"),
        ({"gpu_memory": [1]}, r"^gpu_memory: expected bytes"),
    ],
)
def test_every_keyword_of_the_wrong_type_is_one_config_error(
    tmp_path: Path, kw: dict[str, object], match: str
) -> None:
    be = FakeBackend()
    out = tmp_path / "out"
    with pytest.raises(ConfigError, match=match):
        edgeprof.profile(["true"], backend=be, out_dir=out, **kw)  # type: ignore[arg-type]
    assert be.runs == []
    assert not out.exists()


@pytest.mark.parametrize("which", ["stdout", "stderr"])
def test_a_closed_descriptor_is_refused_by_its_keyword(tmp_path: Path, which: str) -> None:
    """It had failed at the launch, as ``LaunchError: could not start echo: Bad file
    descriptor``, naming neither the keyword nor the descriptor."""
    be, out, fd = FakeBackend(), tmp_path / "out", _closed_fd()
    with pytest.raises(ConfigError, match=rf"^{which}={fd}: not an open file descriptor$"):
        edgeprof.profile(["echo", "hi"], backend=be, out_dir=out, **{which: fd})  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=rf"^{which}={2**70}: not an open file descriptor$"):
        edgeprof.profile(["echo", "hi"], backend=be, **{which: 2**70})  # type: ignore[arg-type]
    assert be.runs == [] and not out.exists()
