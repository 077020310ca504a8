"""``edgeprof recipe``: the files of each engine, run as the engine would run them (with a
stand-in ``edgeprof`` that records its words), the Kubernetes manifests validated by the
official client's models, and every refusal."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from edgeprof import __version__
from edgeprof.cli import main
from edgeprof.cli.recipe import render_recipe
from edgeprof.errors import ConfigError
from tests.kubelet import kubelet_expand

# A command with every kind of word a shell could misread.
# A newline ends a header comment (it had run ``touch PWN`` from submit.sh), and a multi-line
# ``python3 -c`` is a common workload: every engine must hand each on as one word.
COMMAND = ["python3", "infer.py", "it's a model", "$HOME", "a;b", "*", "x\ntouch PWN #",
           "import sys\nprint(sys.argv)\n", "y: 1 #\n- z",
           # Kubernetes expands $(VAR) and reduces $$ to $ in a container's command.
           "$$ $(JOB_COMPLETION_INDEX) $(HOME"]  # fmt: skip
OPTIONS = ["--cpus", "1,2", "--memory", "512m", "--repeat", "6", "-m", "a.onnx,b c.onnx"]
GATE = ["--max-wall", "10s", "--junit", "gate.xml"]
RUN_ARGS = [*OPTIONS, "--max-wall", "10s", "--junit", "gate.xml", "--", *COMMAND]


def _recorder(bin_dir: Path, log: Path) -> None:
    """``edgeprof`` (and ``sudo``, ``sbatch``) that append their words to ``log`` as JSON."""
    bin_dir.mkdir(exist_ok=True)
    for name in ("edgeprof", "sudo"):
        tool = bin_dir / name
        tool.write_text(
            "#!/usr/bin/env python3\nimport json, sys\n"
            f"with open({str(log)!r}, 'a') as f:\n"
            "    f.write(json.dumps(sys.argv) + '\\n')\n"
            + ("import os; os.execvp(sys.argv[1], sys.argv[1:])\n" if name == "sudo" else "")
        )
        tool.chmod(0o755)


def _words(log: Path) -> list[list[str]]:
    return [json.loads(line)[1:] for line in log.read_text().splitlines()]


def _part(i: int, n: int, out: str) -> list[str]:
    return ["run", "--shard", f"{i}/{n}", "--out", out, *OPTIONS, "--", *COMMAND]


def _render(engine: str, shards: int = 3, **given: str) -> dict[str, str]:
    files, _ = render_recipe(engine, shards, RUN_ARGS, dict(given))
    return files


def test_slurm_array_runs_each_part_and_the_merge_takes_the_gate(tmp_path: Path) -> None:
    files = _render("slurm")
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    part = files["part.sbatch"]
    assert "#SBATCH --array=1-3\n" in part
    assert "#SBATCH --cpus-per-task=3\n" in part  # the largest --cpus, 2, and one for edgeprof
    assert "#SBATCH --mem=768M\n" in part  # 512 MiB and edgeprof's 256
    log, bin_dir = tmp_path / "log", tmp_path / "bin"
    _recorder(bin_dir, log)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    for i in (1, 2, 3):
        run = {**env, "SLURM_ARRAY_TASK_ID": str(i)}
        subprocess.run(["bash", tmp_path / "part.sbatch"], env=run, check=True, cwd=tmp_path)
    subprocess.run(["bash", tmp_path / "merge.sbatch"], env=env, check=True, cwd=tmp_path)
    parts = [f"edgeprof-parts/part-{i}" for i in (1, 2, 3)]
    assert _words(log) == [
        *[_part(i, 3, f"edgeprof-parts/part-{i}") for i in (1, 2, 3)],
        ["merge", *parts, "--out", "edgeprof-parts/sweep", *GATE],
    ]
    # submit.sh: the array, then the merge after it whatever its tasks' exit codes.
    sbatch = bin_dir / "sbatch"
    sbatch.write_text(f'#!/bin/sh\necho "$*" >> {tmp_path / "sbatch.log"}\necho 41\\;c1\n')
    sbatch.chmod(0o755)
    submitted = subprocess.run(
        ["sh", tmp_path / "submit.sh"], env=env, check=True, cwd=tmp_path, capture_output=True
    )
    assert submitted.stdout.split() == [b"41", b"41;c1"]  # the array's id, then the merge's
    assert (tmp_path / "sbatch.log").read_text().splitlines() == [
        f"--parsable {tmp_path}/part.sbatch",
        f"--parsable --dependency=afterany:41 {tmp_path}/merge.sbatch",
    ]
    assert (tmp_path / "edgeprof-parts").is_dir()  # made for the logs, which Slurm does not
    assert not (tmp_path / "PWN").exists()  # the header's newline ended no comment
    # sbatch reads directives up to the first command: the header holds none.
    lines = part.splitlines()
    first_command = next(i for i, line in enumerate(lines) if not line.startswith("#"))
    assert lines[first_command - 1].startswith("#SBATCH --output=")


@pytest.mark.parametrize("engine", ["github", "k8s", "slurm"])
def test_a_header_says_the_command_line_on_one_line(engine: str) -> None:
    """The header repeats the recipe's command line as shell words, a newline as ``$'\\n'``."""
    files = _render(engine, image="i") if engine == "k8s" else _render(engine)
    for text in files.values():
        origin = next(line for line in text.splitlines() if "edgeprof recipe" in line)
        assert origin.startswith("# edgeprof recipe ")
        assert "$'x\\ntouch PWN #' $'import sys\\nprint(sys.argv)\\n'" in origin
    if engine == "k8s":  # each manifest a Job and nothing else (a newline had added `y: 1`)
        for text in files.values():
            for doc in yaml.safe_load_all(text):
                assert list(doc) == ["apiVersion", "kind", "metadata", "spec"]


@pytest.mark.parametrize(
    ("given", "error"),
    [
        ({"time": "1:00\ntouch PWN2"}, "--time 1:00\\ntouch PWN2: expected minutes, M:S, "),
        ({"time": "1 day"}, "--time 1 day: expected minutes"),
        ({"partition": "gpu\n#SBATCH --x"}, "--partition gpu\\n#SBATCH --x: expected a"),
        ({"results": "my parts"}, "--results my parts: a directory an #SBATCH --output line"),
    ],
)
def test_slurm_refuses_what_an_sbatch_line_cannot_hold(given: dict[str, str], error: str) -> None:
    with pytest.raises(ConfigError) as err:
        render_recipe("slurm", 2, RUN_ARGS, dict(given))
    assert str(err.value).startswith(error)


@pytest.mark.parametrize(
    "time", ["90", "1:30", "1:00:00", "2-0", "2-12:00", "1-0:0:1", "infinite"]
)
def test_slurm_takes_each_time_format(time: str) -> None:
    files, _ = render_recipe("slurm", 2, RUN_ARGS, {"time": time, "partition": "gpu,cpu"})
    assert f"#SBATCH --partition=gpu,cpu\n#SBATCH --time={time}\n" in files["part.sbatch"]


@pytest.mark.parametrize("where", ["command", "runs_on"])
def test_github_refuses_an_expression_actions_would_evaluate(where: str) -> None:
    """``'${{ secrets.GITHUB_TOKEN }}'`` had been pasted into ``run:``, where Actions
    evaluates it before the shell quotes anything."""
    token = "${{ secrets.GITHUB_TOKEN }}"
    args = [*RUN_ARGS, token] if where == "command" else RUN_ARGS
    given: dict[str, str | None] = {"runs_on": token} if where == "runs_on" else {}
    with pytest.raises(ConfigError) as err:
        render_recipe("github", 2, args, given)
    assert str(err.value).startswith(f"{token}: GitHub Actions would evaluate its ${{{{ … }}}}")


def test_github_matrix_parts_and_the_merge_job(tmp_path: Path) -> None:
    workflow = yaml.safe_load(_render("github", runs_on="self-hosted")["edgeprof-sweep.yml"])
    part, merge = workflow["jobs"]["part"], workflow["jobs"]["merge"]
    assert part["strategy"]["matrix"] == {"part": [1, 2, 3]}
    assert part["strategy"]["fail-fast"] is False and part["runs-on"] == "self-hosted"
    assert merge["needs"] == "part" and merge["if"] == "!cancelled()"
    # No expression is pasted into a script's text: the matrix value comes through env.
    for job in (part, merge):
        assert not [s for s in job["steps"] if "${{" in s.get("run", "")]
    log, bin_dir = tmp_path / "log", tmp_path / "bin"
    _recorder(bin_dir, log)
    temp = tmp_path / "runner"
    (temp / "edgeprof" / "bin").mkdir(parents=True)
    (temp / "edgeprof" / "bin" / "edgeprof").symlink_to(bin_dir / "edgeprof")
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "RUNNER_TEMP": str(temp)}
    (run_part,) = [s for s in part["steps"] if "--shard" in s.get("run", "")]
    assert run_part["env"] == {"PART": "${{ matrix.part }}"}
    for i in (1, 2, 3):
        subprocess.run(["bash", "-c", run_part["run"]], env={**env, "PART": str(i)}, check=True)
    (run_merge,) = [s for s in merge["steps"] if "merge" in s.get("run", "")]
    subprocess.run(["bash", "-c", run_merge["run"]], env=env, check=True)
    words = _words(log)
    parts = [f"parts/edgeprof-part-{i}" for i in (1, 2, 3)]
    assert words[-1] == ["merge", *parts, "--out", "sweep", *GATE[:-1], "sweep/gate.xml"]
    runs = [w for w in words if w[:1] != ["merge"]]
    # sudo, then edgeprof under it: each part as root (the cgroup backend), nothing else.
    assert runs[1::2] == [_part(i, 3, f"part-{i}") for i in (1, 2, 3)]
    uploads = [s for s in part["steps"] if s.get("uses", "").startswith("actions/upload")]
    assert uploads[0]["with"]["path"] == "part-${{ matrix.part }}"
    assert uploads[0]["if"] == "always()"  # a part whose workload failed is still a result


def _merge_words(engine: str, gate: list[str]) -> list[str]:
    args = [*OPTIONS, *gate, "--", *COMMAND]
    files, _ = render_recipe(engine, 2, args, {"image": "x"} if engine == "k8s" else {})
    if engine == "github":
        merge = yaml.safe_load(files["edgeprof-sweep.yml"])["jobs"]["merge"]
        (step,) = [s for s in merge["steps"] if " merge " in s.get("run", "")]
        words: list[str] = shlex.split(step["run"])[1:]
        return words
    job = yaml.safe_load(files["merge.yaml"])
    words = job["spec"]["template"]["spec"]["containers"][0]["command"][1:]
    return words


@pytest.mark.parametrize(
    ("engine", "out"), [("github", "sweep"), ("k8s", "/results/edgeprof-sweep/sweep")]
)
def test_the_merges_report_files_land_where_the_engine_keeps_them(engine: str, out: str) -> None:
    """GitHub uploads sweep/ only, Kubernetes keeps only the volume: the merge had written
    --html, --summary and --junit into its runner's or container's working directory."""
    gate = ["--html", "report.html", "--summary=ci/summary.md", "--junit", "/tmp/j.xml"]
    words = _merge_words(engine, gate)
    at = words.index("--out")
    assert words[at:] == ["--out", out, "--html", f"{out}/report.html", "--summary",
                          f"{out}/summary.md", "--junit", f"{out}/j.xml"]
    with pytest.raises(ConfigError, match=r"--summary report.md: .* as merge's own report.md"):
        _merge_words(engine, ["--summary", "report.md"])
    with pytest.raises(ConfigError, match=r"--junit b/r.xml: .* as r.xml, as --html's file"):
        _merge_words(engine, ["--html", "a/r.xml", "--junit", "b/r.xml"])
    # Slurm's merge runs in the shared directory it was submitted from: the files stay there.
    slurm = render_recipe("slurm", 2, [*OPTIONS, *gate, "--", *COMMAND], {})[0]["merge.sbatch"]
    assert shlex.join(gate[:2]) in slurm


def test_a_merge_writes_its_report_files_into_the_out_it_makes(tmp_path: Path) -> None:
    """``merge --out sweep --html sweep/report.html``, the recipes' merge: ``sweep`` is made
    by the merge, so the file's directory is not there when it is checked."""
    for i in (1, 2):
        out = tmp_path / f"part-{i}"
        argv = ["run", "--backend", "fake", "--repeat", "2", "--shard", f"{i}/2"]
        assert main([*argv, "--out", str(out), "--", "true"]) == 0
    sweep = tmp_path / "sweep"
    parts = [str(tmp_path / "part-1"), str(tmp_path / "part-2")]
    argv = ["merge", *parts, "--out", str(sweep), "--html", str(sweep / "report.html")]
    assert main([*argv, "--junit", str(sweep / "j.xml")]) == 0
    assert (sweep / "report.html").is_file() and (sweep / "j.xml").is_file()


def test_github_compares_with_a_baseline_when_given() -> None:
    merge = yaml.safe_load(_render("github", baseline="perf/base")["edgeprof-sweep.yml"])["jobs"][
        "merge"
    ]
    (compare,) = [s for s in merge["steps"] if "compare" in s.get("run", "")]
    assert compare["env"] == {"BASELINE": "perf/base"}  # not pasted into the script
    assert compare["run"].endswith('compare "$BASELINE" sweep')
    assert compare["if"] == "!cancelled()"  # a breached budget still gets its comparison
    names = [s.get("name", s.get("uses")) for s in merge["steps"]]
    assert names.index(compare["name"]) == names.index("Merge the parts; check the budgets") + 1
    no_baseline = yaml.safe_load(_render("github")["edgeprof-sweep.yml"])["jobs"]["merge"]
    assert not [s for s in no_baseline["steps"] if "compare" in s.get("run", "")]


def _roundtrip(doc: dict[str, Any], kind: str) -> dict[str, Any]:
    """``doc`` read by the Kubernetes client's models and written back: a misspelt or unknown
    field is dropped, a missing required one raises, a wrong type fails."""
    from kubernetes import client

    api = client.ApiClient()
    obj = api.deserialize(json.dumps(doc), kind, "application/json")
    back: dict[str, Any] = api.sanitize_for_serialization(obj)  # type: ignore[no-untyped-call]
    return back


def test_kubernetes_manifests_validate_against_the_api_models(tmp_path: Path) -> None:
    files = _render("k8s", image="registry.example/edgeprof:1", namespace="perf")
    parts = yaml.safe_load(files["parts.yaml"])
    merge = yaml.safe_load(files["merge.yaml"])
    for doc in (parts, merge):
        assert _roundtrip(doc, "V1Job") == doc
    spec = parts["spec"]
    assert (spec["completionMode"], spec["completions"], spec["parallelism"]) == ("Indexed", 3, 3)
    (container,) = spec["template"]["spec"]["containers"]
    # Guaranteed QoS with whole CPUs: what the static CPU manager gives exclusive cores.
    assert container["resources"]["requests"] == container["resources"]["limits"]
    assert container["resources"]["limits"] == {"cpu": "3", "memory": "768Mi"}
    assert container["securityContext"] == {"privileged": True}
    assert parts["metadata"]["namespace"] == merge["metadata"]["namespace"] == "perf"
    # The pod's script, run as the kubelet runs it: index 1 is part 2 of 3.
    log, bin_dir = tmp_path / "log", tmp_path / "bin"
    _recorder(bin_dir, log)
    fake_cgroup = tmp_path / "cgroup"  # not the host's: this test moves no process
    fake_cgroup.mkdir()
    (fake_cgroup / "cgroup.controllers").write_text("cpu memory\n")
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "JOB_COMPLETION_INDEX": "1"}
    # As the kubelet hands it to the runtime: $(VAR) and $$ expanded (the Job controller
    # sets JOB_COMPLETION_INDEX in the container's env).
    shell, flag, script = kubelet_expand(container["command"], {"JOB_COMPLETION_INDEX": "1"})
    script = script.replace("/sys/fs/cgroup", str(fake_cgroup))
    subprocess.run([shell, flag, script], env=env, check=True)
    assert _words(log) == [_part(2, 3, "/results/edgeprof-sweep/part-2")]
    # The shell left the namespace's root group for a leaf before becoming edgeprof: 0 is
    # the writer itself (an expanded "$$" had written "$", an I/O error on a real group).
    assert (fake_cgroup / "edgeprof-self" / "cgroup.procs").read_text() == "0\n"
    (merger,) = merge["spec"]["template"]["spec"]["containers"]
    results = [f"/results/edgeprof-sweep/part-{i}" for i in (1, 2, 3)]
    gate = [*GATE[:-1], "/results/edgeprof-sweep/sweep/gate.xml"]  # on the volume
    out = ["--out", "/results/edgeprof-sweep/sweep"]
    assert kubelet_expand(merger["command"], {}) == ["edgeprof", "merge", *results, *out, *gate]


def test_the_kubelet_expander_is_kubernetes_own() -> None:
    """The cases of expand_test.go, so the test above holds the recipe to Kubernetes'
    rules, not to ours."""
    env = {"VAR_A": "A", "VAR_B": "B"}
    cases = {
        "$(VAR_A)": "A", "___$(VAR_B)___": "___B___", "$$(VAR_A)": "$(VAR_A)",
        "$$$(VAR_A)": "$A", "$(VAR_NONE)": "$(VAR_NONE)", "$(VAR_A": "$(VAR_A",
        "$VAR_A": "$VAR_A", "echo $$ > x": "echo $ > x", "$((X + 1))": "$((X + 1))",
        "$": "$", "${part}": "${part}", "$$$$": "$$",
    }  # fmt: skip
    assert {k: kubelet_expand([k], env)[0] for k in cases} == cases


def test_kubernetes_names_each_sweeps_directory_on_the_claim() -> None:
    """Two sweeps on one claim had written the same /results/part-N and /results/sweep."""
    files = _render("k8s", image="i", name="sweep-b")
    parts = yaml.safe_load(files["parts.yaml"])
    (container,) = parts["spec"]["template"]["spec"]["containers"]
    assert "--out /results/sweep-b/part-" in container["command"][2]
    merge = yaml.safe_load(files["merge.yaml"])
    words = merge["spec"]["template"]["spec"]["containers"][0]["command"]
    assert words[2:6] == [*(f"/results/sweep-b/part-{i}" for i in (1, 2, 3)), "--out"]
    assert words[6] == "/results/sweep-b/sweep"
    for bad in ("Sweep", "a/b", "-a", "x" * 58):
        with pytest.raises(ConfigError, match="a Job's name is lower-case letters"):
            _render("k8s", image="i", name=bad)


@pytest.mark.parametrize(
    ("states", "polls", "rc"),
    [
        (["", "", "Failed"], 3, 0),  # a part failed: the Job is Failed, never Complete
        (["", "Complete"], 2, 0),
        # Kubernetes 1.31+ says FailureTarget (SuccessCriteriaMet) before Failed (Complete).
        (["FailureTarget", "FailureTarget Failed"], 2, 0),
        (["SuccessCriteriaMet", "SuccessCriteriaMet Complete"], 2, 0),
        # The Job is gone (kubectl fails): no polling for ever, and a failure, so that the
        # merge after it does not start (the loop had ended with status 0).
        (["", None], 2, 1),
    ],
)
def test_the_kubernetes_wait_returns_when_the_job_ends_either_way(
    tmp_path: Path, states: list[str | None], polls: int, rc: int
) -> None:
    """``kubectl wait --for=condition=Complete … --timeout=24h`` had waited 24 h when a part
    failed.  The printed step, run by sh against a stand-in kubectl that answers ``states``
    in turn (``None``: an error) and a sleep that returns at once."""
    _, steps = render_recipe("k8s", 2, RUN_ARGS, {"image": "i", "namespace": "perf"})
    (wait,) = [s for s in steps if "Complete" in s]
    bin_dir, calls = tmp_path / "bin", tmp_path / "calls"
    bin_dir.mkdir()
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps(states))
    (bin_dir / "kubectl").write_text(
        "#!/usr/bin/env python3\nimport json, sys\n"
        f"calls, answers = {str(calls)!r}, {str(answers)!r}\n"
        "with open(calls, 'a') as f:\n    f.write(json.dumps(sys.argv[1:]) + '\\n')\n"
        "n = sum(1 for _ in open(calls))\n"
        "state = json.load(open(answers))[n - 1]\n"
        "sys.exit(1) if state is None else print(state, end='')\n"
    )
    (bin_dir / "sleep").write_text("#!/bin/sh\n")
    for tool in ("kubectl", "sleep"):
        (bin_dir / tool).chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    done = subprocess.run(["sh", "-c", wait.format(out="o")], env=env, timeout=30)
    assert done.returncode == rc
    asked = [json.loads(line) for line in calls.read_text().splitlines()]
    jsonpath = 'jsonpath={.status.conditions[?(@.status=="True")].type}'
    assert asked == [["-n", "perf", "get", "job/edgeprof-sweep", "-o", jsonpath]] * polls


def test_the_model_round_trip_catches_a_misspelt_field() -> None:
    doc = yaml.safe_load(_render("k8s", image="x")["parts.yaml"])
    doc["spec"]["completionsMode"] = doc["spec"].pop("completionMode")
    assert _roundtrip(doc, "V1Job") != doc
    del doc["spec"]["template"]["spec"]["containers"][0]["name"]
    with pytest.raises(ValueError, match="name"):
        _roundtrip(doc, "V1Job")


@pytest.mark.parametrize(
    ("engine", "args", "given", "error"),
    [
        ("github", ["--shard", "1/2", "--", "x"], {}, "--shard in a part of a sweep"),
        ("github", ["--out", "d", "--", "x"], {}, "--out in a part of a sweep"),
        (
            "slurm",
            ["--cpuset", "0", "--memory", "1g", "--", "x"],
            {},
            "--cpuset in a part of a sweep",
        ),
        ("slurm", ["--plots", "p", "--", "x"], {}, "--plots in a part of a sweep"),
        (
            "slurm",
            ["--cpus", "1", "--memory", "1g", "--repeat", "3", "--executor", "ray", "--", "x"],
            {},
            "--executor in a part of a sweep",
        ),
        ("slurm", ["--cpus", "1", "--memory", "1g"], {}, "no workload"),
        ("slurm", ["--cpus", "1", "--memory", "1g", "--repeat", "2", "--", "x"], {}, "--repeat 2"),
        ("slurm", ["--cpus", "1", "--memory", "1g", "--repeat", "auto", "--", "x"], {}, "auto"),
        ("slurm", ["--memory", "1g", "--repeat", "3", "--", "x"], {}, "--part-cpus"),
        ("slurm", ["--cpus", "1", "--repeat", "3", "--", "x"], {}, "--part-memory"),
        ("slurm", ["--cpus", "x", "--memory", "1g", "--repeat", "3", "--", "x"], {}, "CPU count"),
        ("slurm", ["--frobnicate", "--", "x"], {}, "cannot read the options of"),
        ("k8s", ["--cpus", "1", "--memory", "1g", "--repeat", "3", "--", "x"], {}, "--image"),
        ("slurm", ["--cpus", "1", "--repeat", "3", "--", "x"], {"image": "i"}, "--image is not"),
        ("nomad", ["--", "x"], {}, "unknown engine"),
        (
            "slurm",
            ["--cpus", "1", "--memory", "1g", "--repeat", "3", "--gpus", "all", "--", "x"],
            {},
            "--gpus N",
        ),
        (
            "k8s",
            ["--cpus", "1", "--memory", "1g", "--repeat", "3", "--gpus", "0,1", "--", "x"],
            {"image": "i"},
            "names one machine's GPUs",
        ),
        (
            "slurm",
            ["--cpus", "1", "--memory", "1g", "--repeat", "3", "--gpus", "0", "--", "x"],
            {},
            "--gpus 0 in a part: give a count of 1 or more, or --gpus none",
        ),
        (
            "github",
            ["--cpus", "1", "--memory", "1g", "--repeat", "3", "--gpus", "2", "--", "x"],
            {},
            "--gpus 2: GitHub's hosted runner ubuntu-24.04 has no GPU",
        ),
        # run's own check of the limits against the backend named: every part had failed.
        (
            "slurm",
            ["--backend", "process", "--cpus", "1", "--memory", "256m", "--repeat", "3", "--",
             "x"],
            {},
            "--memory: the process backend cannot limit memory: ",
        ),
        (
            "k8s",
            ["--backend", "process", "--cpus", "0.5", "--memory", "1g", "--repeat", "3", "--", "x"],
            {"image": "i"},
            "--cpus 0.5: the process backend holds whole cores",
        ),
        # In the recipe's words: "--shard 1/3 with --repeat 2" named an option never given.
        (
            "github",
            ["--cpus", "1", "--repeat", "2", "--", "x"],
            {},
            "--shards 3 with --repeat 2: each part runs a set of the rounds, so give at least "
            "--repeat 3",
        ),
        (
            "github",
            ["--cpus", "1", "--repeat", "auto", "--", "x"],
            {},
            "--shards 3 with --repeat auto: the parts split a fixed number of rounds",
        ),
    ],
)
def test_bad_recipes_are_refused(
    engine: str, args: list[str], given: dict[str, str], error: str
) -> None:
    with pytest.raises(ConfigError, match=error.replace("-", r"\-")):
        render_recipe(engine, 3, args, dict(given))


def test_a_part_is_checked_on_its_own_cpus_not_this_hosts() -> None:
    """The process backend holds --cpus 8 as 8 whole cores of the part's 9, wherever this
    host has fewer; a cgroup backend this host may lack is the part's machine's."""
    for backend in ("process", "cgroup"):
        args = ["--backend", backend, "--cpus", "8", "--repeat", "2", "--", "x"]
        files, _ = render_recipe("slurm", 2, args, {}, part_memory="1g")
        assert "#SBATCH --cpus-per-task=9\n" in files["part.sbatch"]


@pytest.mark.parametrize(
    ("limits", "error"),
    [
        (["--cpus", "8", "--memory", "1g"], "--cpus 8: GitHub's hosted runner ubuntu-24.04 has "
         "4 CPUs (for a public repository; a private one's has 2 CPUs, 7 GB): give --runs-on "
         "the label of a larger or self-hosted runner, or a smaller setting"),
        (["--cpus", "2", "--memory", "20g"], "--memory 20.0GiB: GitHub's hosted runner "
         "ubuntu-24.04 has 16 GB"),
    ],
)  # fmt: skip
def test_github_refuses_a_part_its_hosted_runner_cannot_hold(limits: list[str], error: str) -> None:
    """``--cpus 8 --memory 20g`` had been written for 4-CPU, 16 GB runners (each part then
    refused by run there), under a header saying each part got "9 CPUs and 20.2GiB"."""
    args = [*limits, "--repeat", "2", "--", "x"]
    with pytest.raises(ConfigError) as err:
        render_recipe("github", 2, args, {})
    assert str(err.value).startswith(error)
    files, _ = render_recipe("github", 2, args, {"runs_on": "big-runner"})  # the user's size
    header = files["edgeprof-sweep.yml"].splitlines()[1]
    assert header == "# 2 parts, one runner each (runs-on: big-runner), merged by the last job."
    # A runner is whole: no --memory is needed, and --part-* is no option of it.
    render_recipe("github", 2, ["--cpus", "4", "--repeat", "2", "--", "x"], {})
    with pytest.raises(ConfigError, match="--part-memory is not an option of the github"):
        render_recipe("github", 2, args, {}, part_memory="1g")


def test_the_command_writes_the_files_or_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "recipe"
    args = ["recipe", "slurm", "--shards", "2", "--out", str(out), "--"]
    assert main([*args, "--cpus", "1", "--repeat", "3", "--", "x"]) == 2
    assert "--part-memory" in capsys.readouterr().err and not out.exists()
    assert main([*args, "--cpus", "1", "--memory", "1g", "--repeat", "4", "--", "x"]) == 0
    printed = capsys.readouterr().out
    assert f"then: sh {out}/submit.sh" in printed
    assert sorted(p.name for p in out.iterdir()) == ["merge.sbatch", "part.sbatch", "submit.sh"]
    assert os.access(out / "submit.sh", os.X_OK)


def test_a_part_asks_its_engine_for_its_gpus() -> None:
    """``--gpus 2``: each part asks for two GPUs of its own (the NVIDIA device plugin's
    resource on Kubernetes, a generic resource on Slurm) and measures them."""
    args = ["--cpus", "1", "--memory", "1g", "--repeat", "2", "--gpus", "2", "--", "x"]
    files, _ = render_recipe("k8s", 2, args, {"image": "i"})
    parts = yaml.safe_load(files["parts.yaml"])
    assert _roundtrip(parts, "V1Job") == parts
    (container,) = parts["spec"]["template"]["spec"]["containers"]
    assert container["resources"]["limits"] == {"cpu": "2", "memory": "1280Mi",
                                                "nvidia.com/gpu": "2"}  # fmt: skip
    assert "--gpus 2" in container["command"][2]
    files, _ = render_recipe("slurm", 2, args, {})
    assert "#SBATCH --gres=gpu:2\n" in files["part.sbatch"]
    assert "each 2 CPUs and 1.2GiB and 2 GPU(s)" in files["part.sbatch"]
    files, _ = render_recipe("slurm", 2, [*args[:-4], "--", "x"], {})
    assert "--gres" not in files["part.sbatch"]
    # GitHub: a runner with GPUs by its label; NVML's bindings with edgeprof.
    files, _ = render_recipe("github", 2, args, {"runs_on": "gpu-runner"})
    jobs = yaml.safe_load(files["edgeprof-sweep.yml"])["jobs"]
    assert jobs["part"]["runs-on"] == "gpu-runner"
    install = jobs["part"]["steps"][1]["run"]
    assert install.endswith(f"pip install -q 'edgeprof[gpu]=={__version__}'"), install


def test_gpu_memory_is_the_merges_gpu_memory_budget_unless_one_is_given() -> None:
    """``run --gpu-memory 256m`` fails a peak over it (the implied budget): the merge of its
    parts does too, and an explicit ``--max-gpu-memory`` wins over it, as in ``run``."""

    def merge_words(args: list[str]) -> list[str]:
        files, _ = render_recipe("slurm", 2, args, {})
        assert "--max-gpu-memory" not in files["part.sbatch"].split("exec ", 1)[1]
        (line,) = [ln for ln in files["merge.sbatch"].splitlines() if ln.startswith("exec ")]
        return line.split()[line.split().index("--out") + 2 :]

    base = ["--cpus", "1", "--memory", "1g", "--repeat", "2", "--gpus", "1"]
    assert merge_words([*base, "--gpu-memory", "256m", "--", "x"]) == ["--max-gpu-memory", "256m"]
    given = [*base, "--gpu-memory", "256m", "--max-gpu-memory", "1g", "--", "x"]
    assert merge_words(given) == ["--max-gpu-memory", "1g"]
    assert merge_words([*base, "--", "x"]) == []
