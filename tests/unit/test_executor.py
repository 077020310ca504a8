"""``run --executor``: what is refused before any cluster is asked, each as one line and
exit 2, with nothing written; and the part's command line, which is the run's own."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from edgeprof.cli import main
from edgeprof.cli.runargs import GATE, parse, to_words
from edgeprof.errors import ConfigError
from tests.conftest import require_module

Node = dict[str, Any]
"""A node as ``ray.nodes()`` lists it."""

BASE = ["--cpus", "1", "--memory", "256m", "--repeat", "2"]


@pytest.mark.parametrize(
    ("extra", "error"),
    [
        (["--executor", "spark"], "--executor spark: expected ray or ray=ADDRESS"),
        (["--executor", "ray", "--shard", "1/2"], "--shard with --executor"),
        (["--executor", "ray", "--cpuset", "0"], "--cpuset with --executor"),
        (["--executor", "ray", "--plots", "p"], "--plots with --executor"),
        (["--executor", "ray", "--predictions", "p.json"], "--predictions with --executor"),
        (["--executor", "ray", "--repeat", "auto"], "not auto"),
        (["--executor", "ray", "--repeat", "x"], "--repeat"),  # was a traceback (int("x"))
        (["--executor", "ray", "--report-to", "file"], "--report-to 'file': give stdout"),
        (["--executor", "ray=127.0.0.1:1"], "no Ray cluster at 127.0.0.1:1"),
    ],
)
def test_refused_before_anything_is_written(
    extra: list[str], error: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    # BASE's --repeat gives way to the case's own: an option given twice is refused.
    base = BASE[:-2] if "--repeat" in extra else BASE
    assert main(["run", *base, *extra, "--out", str(out), "--", "true"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and error in err, err
    assert not out.exists()


# Ray's own texts (ray/_private/services.py, Ray 2.60), which name Ray's `--address` flag.
RAY_NONE = (
    "Could not find any running Ray instance. Please specify the one to connect to by setting "
    "`--address` flag or `RAY_ADDRESS` environment variable."
)
RAY_SEVERAL = (
    "Found multiple active Ray instances: {'10.0.0.1:6379', '10.0.0.1:6380'}. Please specify "
    "the one to connect to by setting `--address` flag or `RAY_ADDRESS` environment variable."
)


def test_no_cluster_is_said_in_edgeprofs_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No cluster on this machine: the line had quoted Ray's text, which names a --address
    flag edgeprof does not have, and ended it in a stray ".;"."""
    ray = require_module("ray", "ray")

    def refuse(**kwargs: object) -> None:
        raise ConnectionError(RAY_NONE)

    monkeypatch.setattr(ray, "init", refuse)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    out = tmp_path / "out"
    assert main(["run", *BASE, "--executor", "ray", "--out", str(out), "--", "true"]) == 2
    assert capsys.readouterr().err == (
        "edgeprof: error: no Ray cluster on this machine (none started here with ray start, "
        "and RAY_ADDRESS is not set): start one (ray start --head) or give --executor "
        "ray=ADDRESS\n"
    )
    assert not out.exists()


@pytest.mark.parametrize(
    ("target", "exc", "line"),
    [
        (
            "auto",
            ConnectionError(RAY_SEVERAL),
            "several Ray clusters run on this machine: pick one with --executor ray=ADDRESS",
        ),
        (
            "10.0.0.1:6379",
            ConnectionError(RAY_NONE),
            "no Ray cluster at 10.0.0.1:6379: start one (ray start --head) or give --executor "
            "ray=ADDRESS",
        ),
        # Only the cluster knows why it refused: that reason is kept, its full stop dropped.
        (
            "10.0.0.1:6379",
            RuntimeError("Version mismatch: the cluster runs Ray 2.9.\nThis process runs 2.60."),
            "the Ray cluster at 10.0.0.1:6379 could not be joined: Version mismatch: the "
            "cluster runs Ray 2.9",
        ),
    ],
)
def test_what_ray_init_refuses_is_one_line_of_edgeprofs(
    target: str, exc: Exception, line: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ray = require_module("ray", "ray")
    from edgeprof.sweeps import on_ray

    def refuse(**kwargs: object) -> None:
        raise exc

    monkeypatch.setattr(ray, "init", refuse)
    monkeypatch.setattr(on_ray, "_probe", lambda target: None)  # the address "listens"
    with pytest.raises(on_ray.RayUnavailable) as caught, on_ray.connected(target):
        pass
    assert str(caught.value) == line


def test_an_executor_needs_an_out_directory(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", *BASE, "--executor", "ray", "--", "true"]) == 2
    assert "--executor needs --out DIR" in capsys.readouterr().err


def test_a_part_gets_the_runs_options_without_the_gate() -> None:
    argv = [*BASE, "--max-wall", "2s", "--junit", "j.xml", "--name", "a b", "--executor",
            "ray", "--out", "o", "--report-to", "stderr", "--", "python3", "x.py"]  # fmt: skip
    params = parse(argv)
    assert params is not None
    part = {k: v for k, v in params.items() if k not in GATE | {"executor", "out", "report_to"}}
    words = to_words(part)
    assert parse(words) == part
    assert words[-3:] == ["--", "python3", "x.py"] and "--max-wall" not in words
    assert "--junit" not in words and "--executor" not in words and "--out" not in words
    assert "--report-to" not in words  # where this machine prints the merged tables


class _DeadQueue:
    """A progress queue whose actor died (its node was lost): every call raises Ray's own
    error for that."""

    def __init__(self) -> None:
        self.calls = 0

    def get_nowait(self) -> tuple[int, str, str]:
        return self._died()

    def put(self, item: tuple[int, str, str]) -> None:
        self._died()

    def _died(self) -> tuple[int, str, str]:
        import ray.exceptions

        self.calls += 1
        raise ray.exceptions.ActorDiedError()


def test_a_lost_progress_queue_is_said_once_and_the_parts_go_on() -> None:
    require_module("ray", "ray")
    from edgeprof.sweeps.on_ray import _drain, _put

    lines: list[str] = []
    queue = _DeadQueue()
    assert _drain(queue, LookupError, lines.append, Path("o")) is None
    assert _drain(None, LookupError, lines.append, Path("o")) is None  # asks no dead actor
    assert lines == ["the parts' progress lines are lost from here on (ActorDiedError)"]
    assert _put(queue, (1, "node", "line")) is None
    assert _put(None, (1, "node", "line")) is None
    assert queue.calls == 2


def test_progress_names_the_parts_directory_on_the_driver(tmp_path: Path) -> None:
    """The node's scratch directory (removed once its files are back) had been the one path
    progress named: ``part 1 on vm: wrote /tmp/edgeprof-part-1-xz9b6057/part/ (…)``."""
    require_module("ray", "ray")
    from edgeprof.sweeps.on_ray import PART_DIR, _drain

    class _Queue:
        def __init__(self) -> None:
            self.items = [(2, "vm", f"edgeprof: wrote {PART_DIR}/ (sweep.json, runs.csv)")]

        def get_nowait(self) -> tuple[int, str, str]:
            if not self.items:
                raise LookupError
            return self.items.pop()

    lines: list[str] = []
    queue = _Queue()
    assert _drain(queue, LookupError, lines.append, tmp_path / "parts") is queue
    assert lines == [f"part 2 on vm: wrote {tmp_path}/parts/part-2/ (sweep.json, runs.csv)"]


def _node(host: str, cpus: float, memory: int, slot: float = 1, alive: bool = True) -> Node:
    resources = {"CPU": cpus, "memory": memory, **({"edgeprof_slot": slot} if slot else {})}
    return {"NodeManagerHostname": host, "Alive": alive, "Resources": resources}


def test_a_part_no_measuring_node_can_take_is_named_with_what_the_nodes_offer() -> None:
    from edgeprof.sweeps.on_ray import RayTarget, no_node_fits

    nodes = [
        _node("head", 8, 16 << 30, slot=0),  # no slot: measures nothing, however large
        _node("gone", 8, 16 << 30, alive=False),
        _node("n1", 1, 2 << 30),
        _node("n2", 1, 4 << 30),
    ]
    why = no_node_fits(RayTarget(cpus=2, memory=1 << 30), nodes)
    assert why == (
        "no measuring node can take a part: each asks for 2 CPU, 1.0GiB and a slot; the "
        "measuring nodes offer n1: 1 CPU, 2.0GiB; n2: 1 CPU, 4.0GiB (start larger nodes, "
        "or lower --cpus, --memory or --gpus)"
    )
    why = no_node_fits(RayTarget(cpus=1, memory=8 << 30), nodes)
    assert why is not None and "asks for 1 CPU, 8.0GiB" in why
    assert no_node_fits(RayTarget(cpus=1, memory=3 << 30), nodes) is None  # n2 takes it
    assert no_node_fits(RayTarget(cpus=1, memory=None, gpus=1), nodes) is not None


class _FakeRay:
    """A connected cluster of one measuring node with one CPU."""

    def __init__(self) -> None:
        self.shut = False

    def nodes(self) -> list[Node]:
        return [_node("n1", 1, 4 << 30)]

    def shutdown(self) -> None:
        self.shut = True


@contextlib.contextmanager
def _owned(ray: _FakeRay) -> Iterator[_FakeRay]:
    """As :func:`edgeprof.sweeps.on_ray.connected` owns the connection: closed at the end."""
    try:
        yield ray
    finally:
        ray.shutdown()


def test_a_sweep_no_node_can_take_is_refused_before_any_part_is_submitted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    require_module("ray", "ray")
    from edgeprof.sweeps import on_ray

    ray = _FakeRay()
    monkeypatch.setattr(on_ray, "connected", lambda address: _owned(ray))

    def submitted(*args: object) -> None:
        raise AssertionError("a part was submitted")

    monkeypatch.setattr(on_ray, "run_parts", submitted)
    out = tmp_path / "out"
    argv = ["run", "--cpus", "2", "--repeat", "2", "--executor", "ray", "--out", str(out)]
    assert main([*argv, "--", "true"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no measuring node can take a part" in err, err
    assert "asks for 2 CPU" in err and "n1: 1 CPU, 4.0GiB" in err
    assert ray.shut and not out.exists()


def test_runs_an_executor_sweep_will_not_write_are_said_before_its_parts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An earlier sweep of three rounds left parts/part-3: a sweep of two into the same
    --out says so, as a local sweep says its stale runs (it had stayed unsaid)."""
    require_module("ray", "ray")
    from edgeprof.sweeps import on_ray

    out = tmp_path / "out"
    for i in (1, 2, 3):
        part = ["run", "--backend", "fake", "--repeat", "3", "--shard", f"{i}/3"]
        assert main([*part, "--out", str(out / "parts" / f"part-{i}"), "--", "true"]) == 0
    ray = _FakeRay()
    monkeypatch.setattr(on_ray, "connected", lambda address: _owned(ray))

    def no_parts(*args: object) -> None:
        raise ConfigError("no parts in this test")

    monkeypatch.setattr(on_ray, "run_parts", no_parts)
    capsys.readouterr()
    argv = ["run", "--backend", "fake", "--executor", "ray", "--out", str(out), "--", "true"]
    assert main([*argv[:3], "--repeat", "2", *argv[3:]]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"edgeprof: warning: {out} holds 1 run(s) this sweep does not write "
        "(parts/part-3/run/3/result.json): they stay, outside its sweep.json (give another "
        "--out, or remove them)",
        "edgeprof: error: no parts in this test",
    ]
    assert ray.shut  # the parts' failure closed the connection
    ray.shut = False
    assert main([*argv[:3], "--repeat", "3", *argv[3:]]) == 2  # the same sweep again
    assert "warning" not in capsys.readouterr().err
    assert ray.shut


def test_an_error_before_the_parts_closes_the_ray_connection(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between the output directory and the parts no one had closed it: an error there left
    the connection open until the interpreter's exit (a code review's)."""
    require_module("ray", "ray")
    from edgeprof.sweeps import on_ray, outdir

    ray = _FakeRay()
    monkeypatch.setattr(on_ray, "connected", lambda address: _owned(ray))

    def unreadable(*args: object) -> None:
        raise ConfigError("the parts directory cannot be read")

    monkeypatch.setattr(outdir, "stale_part_runs", unreadable)
    argv = ["run", "--backend", "fake", "--repeat", "2", "--executor", "ray"]
    assert main([*argv, "--out", str(tmp_path / "out"), "--", "true"]) == 2
    assert capsys.readouterr().err == "edgeprof: error: the parts directory cannot be read\n"
    assert ray.shut
