"""``run --executor``: what is refused before any cluster is asked, each as one line and
exit 2, with nothing written; and the part's command line, which is the run's own."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgeprof.cli import main
from edgeprof.cli.runargs import GATE, parse, to_words
from tests.conftest import require_module

BASE = ["--cpus", "1", "--memory", "256m", "--repeat", "2"]


@pytest.mark.parametrize(
    ("extra", "error"),
    [
        (["--executor", "spark"], "--executor spark: expected ray or ray=ADDRESS"),
        (["--executor", "ray", "--shard", "1/2"], "--shard with --executor"),
        (["--executor", "ray", "--cpuset", "0"], "--cpuset with --executor"),
        (["--executor", "ray", "--plots", "p"], "--plots with --executor"),
        (["--executor", "ray", "--repeat", "auto"], "not auto"),
        (["--executor", "ray", "--repeat", "x"], "--repeat"),  # was a traceback (int("x"))
        (["--executor", "ray=127.0.0.1:1"], "no Ray cluster at 127.0.0.1:1"),
    ],
)
def test_refused_before_anything_is_written(
    extra: list[str], error: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert main(["run", *BASE, *extra, "--out", str(out), "--", "true"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and error in err, err
    assert not out.exists()


def test_an_executor_needs_an_out_directory(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", *BASE, "--executor", "ray", "--", "true"]) == 2
    assert "--executor needs --out DIR" in capsys.readouterr().err


def test_a_part_gets_the_runs_options_without_the_gate() -> None:
    argv = [*BASE, "--max-wall", "2s", "--junit", "j.xml", "--name", "a b", "--executor",
            "ray", "--out", "o", "--", "python3", "x.py"]  # fmt: skip
    params = parse(argv)
    assert params is not None
    part = {k: v for k, v in params.items() if k not in GATE | {"executor", "out"}}
    words = to_words(part)
    assert parse(words) == part
    assert words[-3:] == ["--", "python3", "x.py"] and "--max-wall" not in words
    assert "--junit" not in words and "--executor" not in words and "--out" not in words


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
    assert _drain(queue, LookupError, lines.append) is None
    assert _drain(None, LookupError, lines.append) is None  # asks no dead actor again
    assert lines == ["the parts' progress lines are lost from here on (ActorDiedError)"]
    assert _put(queue, (1, "node", "line")) is None
    assert _put(None, (1, "node", "line")) is None
    assert queue.calls == 2
