"""The CI step (``python -m edgeprof.cli.ci``, behind action.yml and the GitLab template)
run for real, with GitHub's and GitLab's environment simulated: real runs in the host's
cgroups, the step summary and outputs files GitHub gives a step, and GitLab's job-artifacts
API served by a local HTTP server (it checks the job token and the path)."""

from __future__ import annotations

import http.server
import io
import os
import subprocess
import sys
import threading
import xml.etree.ElementTree as ET
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import require

REPO = Path(__file__).resolve().parents[2]
WORKLOAD = "python3 -c 'x = bytearray(8 << 20); print(len(x))'"


def step(env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    require(os.geteuid() == 0, "the step's runs use the cgroup backend: root")
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "GITLAB", "CI_"))}
    return subprocess.run(
        [sys.executable, "-m", "edgeprof.cli.ci"],
        env={**clean, "PYTHONPATH": str(REPO), **env},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _cases(junit: Path) -> dict[str, bool]:
    """{test case name: passed} of a JUnit file."""
    root = ET.parse(junit).getroot()
    return {c.get("name", ""): c.find("failure") is None for c in root.iter("testcase")}


def test_github_a_run_then_a_compare_with_its_baseline(tmp_path: Path) -> None:
    summary, outputs = tmp_path / "step_summary.md", tmp_path / "github_output"
    github = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_OUTPUT": str(outputs),
        "EDGEPROF_CI_COMMAND": WORKLOAD,
        "EDGEPROF_CI_ARGS": "--cpus 1 --memory 256m --repeat 2 --name probe --max-peak-memory 1g",
    }
    first = step({**github, "EDGEPROF_CI_OUT": "base"}, tmp_path)
    assert first.returncode == 0, first.stderr
    assert outputs.read_text() == "results=base\nexit-code=0\ncompared=false\n"
    assert (tmp_path / "base" / "sweep.json").is_file()
    assert all(_cases(tmp_path / "base" / "junit.xml").values())
    assert "**The budget check passed**" in (tmp_path / "base" / "summary.md").read_text()
    # The second run is held to a budget it breaches, and compared with the first.
    args = github["EDGEPROF_CI_ARGS"].replace("--max-peak-memory 1g", "--max-peak-memory 6m")
    second = step(
        {
            **github,
            "EDGEPROF_CI_ARGS": args,
            "EDGEPROF_CI_OUT": "cur",
            "EDGEPROF_CI_BASELINE": "base",
        },
        tmp_path,
    )
    assert second.returncode == 3, second.stderr  # the breached budget
    assert outputs.read_text().endswith("results=cur\nexit-code=3\ncompared=true\n")
    assert not all(_cases(tmp_path / "cur" / "junit.xml").values())
    assert _cases(tmp_path / "cur" / "compare.xml")  # one case per compared metric
    # edgeprof appended each summary to the step's, in order: run, run, comparison.
    published = summary.read_text()
    heads = [ln for ln in published.splitlines() if ln.startswith(("## ", "**"))]
    assert heads == [
        "## edgeprof",
        "**The budget check passed**",
        "## edgeprof",
        "**1 of 1 budget check failed**",
        "## edgeprof compare",
        heads[-1],  # the comparison's verdict: whatever the noise of two runs gave
    ]
    assert "regression" in heads[-1]
    # The comparison's section by its heading: split at the last "compare", a note's
    # "compared" (avg memory measured on one side only, as a short run's timing gives it)
    # had cut the table off (a fresh-clone CI run).
    section = published.split("## edgeprof compare", 1)[1]
    assert "| probe | cpus=1, memory=256.0MiB | peak memory |" in section


@pytest.fixture
def artifacts_api(tmp_path: Path) -> Iterator[tuple[str, list[tuple[str, str]], dict[str, bytes]]]:
    """A GitLab job-artifacts API on localhost: serves ``zips[path]``, records (path, token)."""
    seen: list[tuple[str, str]] = []
    zips: dict[str, bytes] = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append((self.path, self.headers.get("JOB-TOKEN", "")))
            body = zips.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/api/v4", seen, zips
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _zip(directory: Path, under: str) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for p in directory.rglob("*"):
            if p.is_file():
                z.write(p, f"{under}/{p.relative_to(directory)}")
    return buf.getvalue()


def test_gitlab_fetches_the_default_branchs_results_and_compares(
    tmp_path: Path, artifacts_api: tuple[str, list[tuple[str, str]], dict[str, bytes]]
) -> None:
    api, seen, zips = artifacts_api
    gitlab = {
        "GITLAB_CI": "true",
        "CI_API_V4_URL": api,
        "CI_PROJECT_ID": "42",
        "CI_JOB_NAME": "profile",
        "CI_JOB_TOKEN": "token-123",
        "CI_DEFAULT_BRANCH": "main",
        "EDGEPROF_CI_COMMAND": WORKLOAD,
        "EDGEPROF_CI_ARGS": "--cpus 1 --memory 256m --repeat 2 --name probe",
        "EDGEPROF_CI_OUT": "edgeprof-results",
        "EDGEPROF_CI_BASELINE": "edgeprof-baseline",
    }
    main = tmp_path / "main"
    main.mkdir()
    on_main = step({**gitlab, "CI_COMMIT_BRANCH": "main"}, main)
    assert on_main.returncode == 0, on_main.stderr
    assert seen == []  # the default branch makes the baseline: nothing fetched
    # ... and says so, where it had warned of a cache miss and asked for a baseline.
    assert (
        "edgeprof ci: On the default branch (main): nothing to compare with; this run's "
        "results (edgeprof-results) become the baseline\n"
    ) in on_main.stdout
    assert "No baseline compared" not in on_main.stdout
    assert "--- edgeprof-results/summary.md\n## edgeprof" in on_main.stdout
    zips["/api/v4/projects/42/jobs/artifacts/main/download?job=profile"] = _zip(
        main / "edgeprof-results", "edgeprof-results"
    )
    branch = tmp_path / "branch"
    branch.mkdir()
    on_branch = step({**gitlab, "CI_COMMIT_BRANCH": "feature"}, branch)
    assert on_branch.returncode in (0, 3), on_branch.stderr  # 3: a real regression, by chance
    assert seen == [("/api/v4/projects/42/jobs/artifacts/main/download?job=profile", "token-123")]
    assert (branch / "edgeprof-baseline" / "sweep.json").is_file()
    assert "edgeprof ci: baseline:" in on_branch.stdout
    assert "--- edgeprof-results/compare.md" in on_branch.stdout
    assert _cases(branch / "edgeprof-results" / "compare.xml")
