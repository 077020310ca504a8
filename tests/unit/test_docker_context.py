"""A Dockerfile's build context leaves out edgeprof's own outputs, so a run that appends to
OUTPUTFILE does not make the next run's image new; what a DOCFILE supersedes is said."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from edgeprof.analysis.sweepfile import sweep_dict
from edgeprof.backends.docker.image import EnvSpec, _context_tar, content_hash
from edgeprof.cli import main
from edgeprof.model.predictionsdoc import PREDICTIONS_SCHEMA
from edgeprof.report.html import render_html
from edgeprof.report.junit import Case, render_junit
from edgeprof.storage import write_json_atomic, write_result
from edgeprof.sweeps.host_checks import context_ignore
from edgeprof.sweeps.request import RunRequest, plan_run

from .conftest import make_result

TEMPLATE = """\
IMAGEREPO=python:3.11-slim
PIPREQUIREMENTS=numpy
DIR=app
SCRIPT=main.py
COMMAND=python3
SAMPLETIME=0.5
OUTPUTFILE={output}
DOCFILE=Dockerfile
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "main.py").write_text("print('hi')\n")
    (tmp_path / "Dockerfile").write_text("FROM python:3.11-slim\nCOPY app/ /app/\n")
    (tmp_path / "env.template").write_text(TEMPLATE.format(output="out.txt"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _spec(project: Path, ignore: tuple[str, ...]) -> EnvSpec:
    return EnvSpec(dockerfile=project / "Dockerfile", ignore=ignore)


def _members(spec: EnvSpec) -> list[str]:
    with tarfile.open(fileobj=io.BytesIO(_context_tar(spec))) as tar:
        return tar.getnames()


def _a_run_wrote(project: Path, out: Path) -> None:
    """What one -e run leaves in the directory it is started in."""
    with (project / "out.txt").open("a") as f:
        f.write("Usage stats for Experiment ran on : 2026-01-01 00:00:00\n")
    (project / "m20_out.txt").write_text("NAME AVG CPU %\n")
    (out / "m20").mkdir(parents=True, exist_ok=True)
    (out / "m20" / "result.json").write_text("{}")


def test_the_outputs_of_a_run_leave_the_image_tag_unchanged(project: Path) -> None:
    job = plan_run(RunRequest(environment=Path("env.template"), out=Path("results")))
    ignore = context_ignore(job, project)
    assert ignore == ("out.txt", "*_out.txt", "results")
    before = content_hash(_spec(project, ignore))
    unfiltered = content_hash(_spec(project, ()))
    _a_run_wrote(project, project / "results")
    assert content_hash(_spec(project, ignore)) == before
    # Without the filter each run was a new image (the defect: 21 images in ~3 minutes).
    assert content_hash(_spec(project, ())) != unfiltered
    assert _members(_spec(project, ignore)) == ["Dockerfile", "env.template", "app/main.py"]
    # A real change of the context still rebuilds.
    (project / "app" / "main.py").write_text("print('changed')\n")
    assert content_hash(_spec(project, ignore)) != before


def test_the_filter_is_the_outputs_own_directory_and_literal_name(project: Path) -> None:
    (project / "logs").mkdir()
    (project / "env.template").write_text(TEMPLATE.format(output="logs/out[1].txt"))
    job = plan_run(RunRequest(environment=Path("env.template")))
    ignore = context_ignore(job, project)
    assert ignore == ("logs/out[[]1].txt", "logs/*_out[[]1].txt")
    for name in ("logs/out[1].txt", "logs/a_out[1].txt", "logs/out1.txt", "x_out[1].txt"):
        (project / name).write_text("x")
    # The brackets are the file's name, not a class; a "*" stays in its own directory.
    assert _members(_spec(project, ignore)) == [
        "Dockerfile",
        "env.template",
        "x_out[1].txt",
        "app/main.py",
        "logs/out1.txt",
    ]


def test_outputs_outside_the_context_filter_nothing(project: Path, tmp_path: Path) -> None:
    sub = project / "docker"
    sub.mkdir()
    job = plan_run(
        RunRequest(environment=Path("env.template"), out=tmp_path / "elsewhere"),
        [project / "report.md", sub / "report.html"],
    )
    # OUTPUTFILE, its logs, --out and report.md are in the project, not in docker/.
    assert context_ignore(job, sub) == ("report.html",)


def test_a_docfile_says_which_keys_it_supersedes(project: Path) -> None:
    job = plan_run(RunRequest(environment=Path("env.template")))
    assert job.warnings == (
        "env.template:8: DOCFILE "
        f"{project / 'Dockerfile'} exists: the image is built from it, so IMAGEREPO, "
        "PIPREQUIREMENTS, DIR not applied (remove the file to build from the keys)",
    )
    (project / "Dockerfile").unlink()
    assert plan_run(RunRequest(environment=Path("env.template"))).warnings == ()


@pytest.mark.parametrize(
    ("options", "why"),
    [
        (
            ["--image", "python:3.11-slim"],
            "; --image runs python:3.11-slim as it is: build from it instead "
            "(--base-image python:3.11-slim --dir app)",
        ),
        (
            ["--dockerfile", "Dockerfile"],
            ", not into one from --dockerfile: its build context is . (COPY the files "
            "there), so leave out --dir",
        ),
        (
            [],
            ": give --base-image to build one with it (Docker), or --cwd app to run in it on "
            "this host",
        ),
    ],
)
def test_dir_without_base_image_is_refused_in_one_line(
    project: Path, options: list[str], why: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--image IMG --dir app`` had dropped --dir: the script was missing in the container
    and the user saw its own failure (python3: can't open file '//w.py')."""
    argv = ["run", "--backend", "docker", *options, "--dir", "app", "--", "python3", "w.py"]
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        f"edgeprof: error: --dir app is copied into the image built from --base-image{why}\n"
    )


def test_no_daemon_names_the_cgroup_backend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    sock = tmp_path / "nope.sock"
    monkeypatch.setenv("DOCKER_HOST", f"unix://{sock}")
    assert main(["run", "--backend", "docker", "--image", "python:3.11-slim", "--", "true"]) == 2
    assert capsys.readouterr().err == (
        f"edgeprof: error: cannot reach the Docker daemon (cannot connect to unix://{sock}: "
        "No such file or directory); start dockerd, or point DOCKER_HOST at a running daemon; "
        "or run on this host without Docker: --backend cgroup\n"
    )


def _earlier_outputs(project: Path) -> None:
    """What earlier runs with other options left in the context, written by edgeprof's own
    writers: two --out directories (a sweep's, a lone run's) and three report files."""
    run = make_result(name="m")
    (project / "resA" / "m").mkdir(parents=True)
    (project / "resB").mkdir()
    write_result(project / "resA" / "m" / "result.json", run)
    (project / "resA" / "m" / "samples.csv").write_text("t_s,cpu_usage_us\n0,0\n")
    write_json_atomic(project / "resB" / "sweep.json", sweep_dict([run]))
    (project / "resB" / "runs.csv").write_text("name\nm\n")
    (project / "earlier.html").write_text(render_html([run]))
    (project / "earlier.xml").write_text(render_junit("edgeprof", [Case("m", "m")]))
    # Its head as report/predictions.py writes it; not named *.json, which the schema
    # fixture would hold to the whole predictions schema.
    doc = {"schema": PREDICTIONS_SCHEMA, "predictions": []}
    (project / "earlier.predictions").write_text(json.dumps(doc, indent=2) + "\n")


def test_earlier_runs_outputs_are_known_by_their_content(project: Path) -> None:
    spec = _spec(project, ())
    before = content_hash(spec)
    _earlier_outputs(project)
    # Found live: --out resA, resB, resC had built two new images, each earlier
    # directory (and report file) a change of the next run's context.
    assert content_hash(spec) == before
    assert _members(spec) == ["Dockerfile", "env.template", "app/main.py"]


@pytest.mark.parametrize(
    ("name", "text"),
    [
        # A user's files that look alike stay in: a false match would leave them out of the
        # image silently, so a mark must be edgeprof's own, at the file's start.
        ("res/result.json", '{"schema_version": 2, "name": "m"}'),
        ("res/sweep.json", '{\n  "schema": "my-sweep/1"\n}'),
        ("res/data.json", '{\n  "schema_version": 1,\n  "edgeprof_version": "1.0"\n}'),
        ("page.html", '<!doctype html>\n<html><head><meta charset="utf-8"></head>'),
        ("junit.xml", '<?xml version="1.0"?>\n<testsuites name="pytest">'),
        ("notes.json", '{"note": "{\\"schema\\": \\"edgeprof-predictions/1\\""}'),
        ("report.md", "| name |\n|---|\n| m |\n"),  # --markdown carries no mark
    ],
)
def test_a_users_look_alike_file_stays_in(project: Path, name: str, text: str) -> None:
    (project / name).parent.mkdir(exist_ok=True)
    (project / name).write_text(text)
    assert name in _members(_spec(project, ()))


def test_a_link_to_an_output_stays_in(project: Path) -> None:
    _earlier_outputs(project)
    (project / "mine.html").symlink_to(project / "earlier.html")
    members = _members(_spec(project, ()))
    assert members == ["Dockerfile", "env.template", "mine.html", "app/main.py"]


def test_an_environment_dir_keeps_everything(tmp_path: Path) -> None:
    """DIR is copied into the image as the user gave it: nothing there is taken as edgeprof's."""
    (tmp_path / "app" / "res").mkdir(parents=True)
    write_result(tmp_path / "app" / "res" / "result.json", make_result(name="m"))
    spec = EnvSpec(base_image="python:3.11-slim", directory=tmp_path / "app")
    assert _members(spec) == ["Dockerfile", "app/res/result.json"]
