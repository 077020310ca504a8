"""edgeprof.sweeps.request: a run request planned, checked and executed without the CLI."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from edgeprof.errors import ConfigError
from edgeprof.model import Limits, RunResult
from edgeprof.sweeps.host_checks import check_host, open_backend
from edgeprof.sweeps.plan import Step
from edgeprof.sweeps.request import RunRequest, execute, parse_env, plan_run

TEMPLATE = """\
IMAGEREPO=python:3.11-slim
DIR=app
SCRIPT=main.sh
COMMAND=sh
SAMPLETIME=0.05
OUTPUTFILE=out.txt
DOCFILE=Dockerfile
DOCKCPUS=1
DOCKMEMORY=256m
"""


def test_plan_is_the_sweep_of_the_options() -> None:
    job = plan_run(
        RunRequest(
            command=("true",),
            cpus=("1,2",),
            memory=("64m",),
            pids="32",
            models="a,b",
            repeat=2,
            budgets={"wall": "10s"},
        )
    )
    assert job.plan.command == ("true",) and job.plan.models == ("a", "b")
    assert [lim.describe() for lim in job.plan.limits] == [
        Limits(cpus=c, memory="64m", pids=32).describe() for c in ("1", "2")
    ]
    assert len(job.plan.steps()) == 8 and job.budgets and job.calibration is None
    assert job.template is None and job.warnings == () and job.backend is None


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (RunRequest(), "no command given"),
        (RunRequest(command=("true",), name="a/../b"), "--name"),
        (RunRequest(command=("true",), repeat=0), "--repeat 0"),
        (RunRequest(command=("true",), models="a,,b"), "empty model name"),
        (RunRequest(command=("true",), budgets={"wall": "soon"}), "soon"),
    ],
)
def test_bad_requests_are_refused_by_the_plan(request_: RunRequest, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        plan_run(request_)


def test_outputs_that_cannot_be_written_are_refused_first(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="missing does not exist"):
        plan_run(RunRequest(command=("true",)), [tmp_path / "missing" / "x.md"])
    with pytest.raises(ConfigError, match="it is a directory"):
        plan_run(RunRequest(command=("true",)), [tmp_path])


def test_env_template_fills_the_request_for_a_host_backend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "env.template").write_text(TEMPLATE)
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "main.sh").write_text("true\n")
    monkeypatch.chdir(tmp_path)
    job = plan_run(RunRequest(backend="fake", environment=Path("env.template")))
    req = job.request
    assert req.command == ("sh", "main.sh") and req.cwd == tmp_path / "app"
    assert req.cpus == ("1.0",) and req.memory == (f"{256 << 20}b",)
    assert req.interval == "0.05" and req.name == "main"
    assert job.template is not None and job.template.output_file == tmp_path / "out.txt"
    assert any("IMAGEREPO" in w for w in job.warnings)  # what a host run leaves out
    with pytest.raises(ConfigError, match="gives the command"):
        plan_run(RunRequest(command=("x",), backend="fake", environment=Path("env.template")))


def test_check_host_refuses_a_missing_program(tmp_path: Path) -> None:
    job = plan_run(RunRequest(command=("no-such-program-here",), backend="fake"))
    with pytest.raises(ConfigError, match="command not found"):
        check_host(job)
    job = plan_run(RunRequest(command=("sh",), backend="fake", env=("NOEQUALS",)))
    with pytest.raises(ConfigError, match="expected KEY=VALUE"):
        check_host(job)


def test_docker_options_need_the_docker_backend() -> None:
    job = check_host(plan_run(RunRequest(command=("true",), backend="fake", image="x")))
    with pytest.raises(ConfigError, match="need --backend docker"):
        open_backend(job, io.StringIO())


def test_execute_runs_the_sweep_and_groups_the_results(tmp_path: Path) -> None:
    request = RunRequest(
        command=("sh", "-c", "exit 0"),
        backend="fake",
        interval="0.01",
        models="m1,m2",
        cpus=("1", "2"),
        out=tmp_path / "out",
    )
    job = open_backend(check_host(plan_run(request)), io.StringIO())
    seen: list[Step] = []
    outcome = execute(job, on_result=lambda step, r: seen.append(step))
    assert len(seen) == len(outcome.sweep.runs) == len(outcome.results) == 4
    # Grouped by setting, then model (the runs went round by round: m1, m2, m1, m2).
    assert [(r.label, r.limits.cpus) for r in outcome.results] == [
        ("m1", 1.0),
        ("m2", 1.0),
        ("m1", 2.0),
        ("m2", 2.0),
    ]
    assert all(r.samples.path and Path(r.samples.path).exists() for r in outcome.results)
    assert (tmp_path / "out" / "sweep.json").exists()


def test_samples_needed_without_out_go_to_a_directory_that_is_gone_after(
    tmp_path: Path,
) -> None:
    job = check_host(plan_run(RunRequest(command=("true",), backend="fake", interval="0.01")))
    during: list[bool] = []

    def on_result(step: Step, r: RunResult) -> None:
        during.append(r.samples.path is not None and Path(r.samples.path).exists())

    outcome = execute(job, on_result=on_result, samples_needed=True)
    assert during == [True]  # the callback could read samples.csv
    assert outcome.results[0].samples.path is None  # and no result names the removed file


def test_parse_env() -> None:
    assert parse_env(["A=1", "B=x=y", "C="]) == {"A": "1", "B": "x=y", "C": ""}
    with pytest.raises(ConfigError, match="'=1'"):
        parse_env(["=1"])
