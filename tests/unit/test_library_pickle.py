"""Every public exception and result type round-trips through pickle: a
``ProcessPoolExecutor``'s worker sends its result or its exception to the parent so (a
tester's ``CpusOverHost`` had broken the pool, every pending job lost, and a
``Comparison`` had not pickled: its metrics' lambdas)."""

from __future__ import annotations

import importlib
import json
import pickle
import pkgutil
import signal
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

import edgeprof
from edgeprof.errors import EdgeprofError
from edgeprof.measure.interrupts import Interrupted
from tests.unit.gating_helpers import run
from tests.unit.test_library_predict import _saved

RESULT = run(wall=1.5)
ARGS: dict[str, tuple[object, ...]] = {
    "CpusOverHost": ("cpus 3 is more than the 2 CPUs here", 3.0, (0, 1)),
    "ResultNotSaved": ("result.json could not be written", RESULT),
    "Interrupted": (RESULT, signal.SIGTERM),
    "StoppedAfter": (RESULT, signal.SIGHUP),
}
"""The constructor's arguments of each error that takes more than a message."""


def _tree(root: type[BaseException]) -> list[type[BaseException]]:
    found = [root]
    for sub in root.__subclasses__():
        found += _tree(sub)
    return found


def _every_module_imported() -> None:
    """So that the walk below meets each error, wherever edgeprof defines it."""
    for info in pkgutil.walk_packages(edgeprof.__path__, "edgeprof."):
        if info.name.startswith("edgeprof.workload.") or info.name == "edgeprof.__main__":
            continue  # the workload's scripts run as scripts; __main__ runs the CLI
        importlib.import_module(info.name)


def _errors() -> list[type[BaseException]]:
    _every_module_imported()
    tree = (*_tree(EdgeprofError), *_tree(Interrupted))
    return [c for c in tree if c.__module__.startswith("edgeprof")]


def test_the_walk_meets_every_public_error() -> None:
    public = {n for n in edgeprof.__all__ if isinstance(getattr(edgeprof, n), type)
              and issubclass(getattr(edgeprof, n), BaseException)}  # fmt: skip
    assert public <= {c.__name__ for c in _errors()}
    assert len(public) == 12


def test_public_errors_are_named_as_exported() -> None:
    """A traceback names ``edgeprof.ConfigError``, as documented, not the module it lives in
    (pytest had printed ``edgeprof.errors.ConfigError``), and pickle finds it by that name."""
    named = [getattr(edgeprof, n) for n in edgeprof.__all__]
    public = [c for c in named if isinstance(c, type) and issubclass(c, BaseException)]
    assert sorted(f"{c.__module__}.{c.__qualname__}" for c in public) == sorted(
        f"edgeprof.{c.__name__}" for c in public
    )
    err = edgeprof.ConfigError("bad")
    assert pickle.loads(pickle.dumps(err)).args == ("bad",)
    assert pickle.dumps(err, protocol=0).startswith(b"cedgeprof\nConfigError\n")


@pytest.mark.parametrize("cls", _errors(), ids=lambda c: c.__name__)
def test_every_error_round_trips_through_pickle(cls: type[BaseException]) -> None:
    exc = cls(*ARGS.get(cls.__name__, ("the message",)))
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is cls
    assert back.args == exc.args and str(back) == str(exc)
    assert vars(back) == vars(exc)


def test_a_respelled_message_survives_the_round_trip() -> None:
    """The library's keywords replace the command line's options in ``args``."""
    exc = edgeprof.CpusOverHost("--cpus 3", 3.0, (0, 1))
    exc.args = ("cpus=3",)
    back = pickle.loads(pickle.dumps(exc))
    assert (str(back), back.cpus, back.available) == ("cpus=3", 3.0, (0, 1))


def _sweep(path: Path, walls: tuple[float, ...]) -> Path:
    path.mkdir()
    runs = [run(wall=w).to_dict() for w in walls]
    (path / "sweep.json").write_text(json.dumps({"schema": "edgeprof-sweep/1", "runs": runs}))
    return path


def test_every_public_result_round_trips_through_pickle(tmp_path: Path) -> None:
    walls = (1.00, 1.02, 0.98, 1.01)
    found = edgeprof.compare(
        _sweep(tmp_path / "a", walls), _sweep(tmp_path / "b", tuple(w * 1.3 for w in walls))
    )
    predicted = edgeprof.predict(*_saved(tmp_path))
    values: list[object] = [
        RESULT, edgeprof.Limits(cpus=1.5, memory="512m"), edgeprof.UserIds(1000, 1000, (27,)),
        edgeprof.Termination.EXITED, found, found.changes[0], found.changes[0].verdict,
        found.changes[0].metric, predicted, predicted.predictions[0],
    ]  # fmt: skip
    for value in values:
        back = pickle.loads(pickle.dumps(value))
        assert back == value, type(value).__name__
    back_cmp = pickle.loads(pickle.dumps(found))
    assert str(back_cmp) == str(found) and back_cmp.regressed
    assert pickle.loads(pickle.dumps(found.changes[0].metric)) is found.changes[0].metric
    assert str(pickle.loads(pickle.dumps(predicted))) == str(predicted)


def _over_host() -> None:
    raise edgeprof.CpusOverHost("cpus 3 is more than the 2 CPUs here", 3.0, (0, 1))


def test_a_workers_limit_error_reaches_the_parent_as_itself() -> None:
    """Before: ``BrokenProcessPool`` (the worker could not send it back)."""
    with ProcessPoolExecutor(1) as pool:
        with pytest.raises(edgeprof.LimitError) as raised:
            pool.submit(_over_host).result()
        assert raised.value.available == (0, 1)  # type: ignore[attr-defined]
        assert pool.submit(int, "7").result() == 7  # the pool still works
