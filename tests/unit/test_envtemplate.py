"""env.template: read as data with the shell's quoting rules, every documented key, bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgeprof.cli import main
from edgeprof.errors import ConfigError
from edgeprof.sweeps.envtemplate import (
    KEPT_AS_TEXT,
    KEYS,
    log_names,
    model_stem,
    parse,
    read_assignments,
    shell_words,
)

REPO = Path(__file__).resolve().parents[2]

ALL_KEYS = """\
# every key the seeds document
IMAGEREPO=python:3.11-slim
APTREQUIREMENTS="curl vim"
PIPREQUIREMENTS='ipython numpy'
PRERUN="pip install --upgrade pip"
DIR=app
SCRIPT=main.py
COMMAND="python3 -u"
SAMPLETIME=0.5
OUTPUTFILE=out.txt
DOCFILE=Dockerfile
DOCKCPUS=2.5
DOCKMEMORY=156m
DOCK_ARGS="--privileged -v /data:/data"
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "main.py").write_text("print('hi')\n")
    return tmp_path


def write(project: Path, text: str) -> Path:
    path = project / "env.template"
    path.write_text(text)
    return path


def test_every_documented_key(project: Path) -> None:
    tpl = parse(write(project, ALL_KEYS), cwd=project)
    assert tpl.base_image == "python:3.11-slim"
    assert tpl.apt == ("curl", "vim") and tpl.pip == ("ipython", "numpy")
    assert tpl.prerun == "pip install --upgrade pip"
    assert tpl.directory == project / "app" and tpl.script == "main.py"
    assert tpl.command == ("python3", "-u")
    assert tpl.interval_s == 0.5  # a decimal SAMPLETIME works
    assert tpl.output_file == project / "out.txt"
    assert tpl.dockerfile is None  # DOCFILE names no existing file: generated from the keys
    assert tpl.limits.cpus == 2.5 and tpl.limits.memory == 156 * 2**20
    assert tpl.docker_args == "--privileged -v /data:/data"
    assert tpl.argv("Mobile.Net") == ["python3", "-u", "main.py", "Mobile.Net"]
    assert tpl.warnings == () and set(tpl.lines) == set(KEYS) - {"DOCKER_ARGS"}


def test_docker_args_spelling_and_existing_docfile(project: Path) -> None:
    (project / "Dockerfile").write_text("FROM x\n")
    text = ALL_KEYS.replace("DOCK_ARGS=", "DOCKER_ARGS=")
    text = text.replace("IMAGEREPO=python:3.11-slim\n", "")
    tpl = parse(write(project, text), cwd=project)
    assert tpl.docker_args == "--privileged -v /data:/data"
    # An existing DOCFILE supersedes the image keys, so IMAGEREPO may be left out.
    assert tpl.dockerfile == project / "Dockerfile" and tpl.base_image is None


def test_the_examples_templates_parse() -> None:
    bench = parse(REPO / "examples/benchmark/env_benchmark.template", cwd=REPO)
    assert bench.argv("m.onnx") == ["python3", "infer.py", "m.onnx"]
    assert bench.limits.cpus == 1 and bench.limits.memory == 2**30 and bench.interval_s == 0.1
    assert bench.pip == ("onnxruntime", "numpy") and bench.docker_args is None
    mnist = parse(REPO / "examples/mnist/env_mnist.template", cwd=REPO / "examples/mnist")
    assert mnist.argv() == ["python3", "train.py"] and mnist.run_name == "train"
    assert mnist.limits.cpus == 2 and mnist.limits.memory == 2 * 2**30


def test_hostile_values_stay_data(project: Path, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    text = ALL_KEYS.replace(
        'PRERUN="pip install --upgrade pip"', f'PRERUN="echo $(touch {marker}); `touch {marker}`"'
    ).replace('APTREQUIREMENTS="curl vim"', "APTREQUIREMENTS=$(id)")
    tpl = parse(write(project, text), cwd=project)
    assert tpl.prerun == f"echo $(touch {marker}); `touch {marker}`"
    assert tpl.apt == ("$(id)",)
    assert not marker.exists()
    assert any("APTREQUIREMENTS: $ and ` are kept as text" in w for w in tpl.warnings)


@pytest.mark.parametrize(
    "line, words",
    [
        ("A=b#c", ["A=b#c"]),  # '#' inside a word is text, as in the shell
        ("A=b  # comment", ["A=b"]),
        ('A="x # y; z | w"', ["A=x # y; z | w"]),
        ("A='$(id)'", ["A=$(id)"]),
        ('A="a\\"b" ', ['A=a"b']),
        ("A=a\\ b", ["A=a b"]),
        ("export A=1", ["export", "A=1"]),
        ('A=""', ["A="]),
    ],
)
def test_shell_words(line: str, words: list[str]) -> None:
    assert shell_words(line) == words


def test_quoted_value_across_lines_and_continuations(project: Path) -> None:
    path = write(project, 'A="one\ntwo"\nexport B=x\\\ny\nDIR=app # trailing\n')
    values, warnings = read_assignments(path)
    assert values["DIR"] == ("app", 5)
    assert [w.split(": ", 1)[1] for w in warnings] == [
        "unknown key A ignored",
        "unknown key B ignored",
    ]
    assert warnings[0].startswith(f"{path}:1:") and warnings[1].startswith(f"{path}:3:")


@pytest.mark.parametrize(
    "edit, message",
    [
        (("DIR=app", "DIR=app; rm -rf /"), ":6: unquoted ';'"),
        (("DIR=app", "DIR app"), ":6: expected KEY=value, got 'DIR app'"),
        (("DIR=app", "DIR=my app"), ":6: DIR: the value holds unquoted spaces"),
        (("DIR=app", 'DIR="app'), ":6: unterminated quote"),
        (("SCRIPT=main.py\n", ""), "required key SCRIPT missing"),
        (('COMMAND="python3 -u"', "COMMAND="), ":8: required key COMMAND is empty"),
        (("DIR=app", "DIR=nowhere"), ":6: DIR 'nowhere': no such directory"),
        (("SCRIPT=main.py", "SCRIPT=gone.py"), ":7: SCRIPT 'gone.py' not found in DIR"),
        (("DOCKMEMORY=156m", "DOCKMEMORY=abc"), ":13: DOCKMEMORY: invalid size 'abc'"),
        (("DOCKCPUS=2.5", "DOCKCPUS=-2"), ":12: DOCKCPUS: invalid CPU count '-2'"),
        (("SAMPLETIME=0.5", "SAMPLETIME=soon"), ":9: invalid SAMPLETIME 'soon'"),
        (("SAMPLETIME=0.5", "SAMPLETIME=0.0001"), ":9: SAMPLETIME 0.0001s is below the minimum"),
        (("DOCK_ARGS=", 'DOCKER_ARGS="-v /a:/a"\nDOCK_ARGS='), "DOCK_ARGS and DOCKER_ARGS"),
        (("SCRIPT=main.py", "SCRIPT='m\x1b.py'"), ":7: SCRIPT 'm\\x1b.py': contains a control"),
        *(
            (
                ("OUTPUTFILE=out.txt", f"OUTPUTFILE={bad}"),
                f":10: OUTPUTFILE {bad!r}: must name a file inside the directory edgeprof is "
                "started in",
            )
            for bad in ("/tmp/victim", "../../../../tmp/pwned6.txt", "logs/../../x", "logs/", ".")
        ),
        (
            ("OUTPUTFILE=out.txt", "OUTPUTFILE='o\x1b[31m.txt'"),
            ":10: OUTPUTFILE 'o\\x1b[31m.txt': contains a control character",
        ),
    ],
)
def test_bad_templates_name_file_and_line(
    project: Path, edit: tuple[str, str], message: str
) -> None:
    path = write(project, ALL_KEYS.replace(*edit))
    with pytest.raises(ConfigError) as err:
        parse(path, cwd=project)
    assert str(err.value).startswith(str(path)) and message in str(err.value), str(err.value)


@pytest.mark.parametrize("op", [";", "&", "|", ">", "("])
def test_an_operator_inside_a_quoted_command_is_refused_for_what_it_is(
    project: Path, op: str
) -> None:
    """The value is quoted (so "quote the value" would be wrong advice); COMMAND's own words
    are run without a shell, so the operator is refused, named, with the way to chain."""
    command = f'COMMAND="python3{op} rm -rf /"'
    path = write(project, ALL_KEYS.replace('COMMAND="python3 -u"', command))
    with pytest.raises(ConfigError) as err:
        parse(path, cwd=project)
    message = str(err.value)
    assert message.startswith(f"{path}:8: COMMAND: {op!r} refused: "), message
    assert "run without a shell" in message and "shell script" in message
    assert "quote the value" not in message


@pytest.mark.parametrize(
    "model, stem",
    [
        ("mobilenet_v1_0.75_224.tflite", "mobilenet_v1_0.75_224"),
        ("mobilenet_v1_0.75_224", "mobilenet_v1_0.75_224"),  # the old profiler: mobilenet_v1_0
        ("models/MobileNet.ONNX", "MobileNet"),
        ("model", "model"),  # the old profiler dropped the last character
        (".hidden", ".hidden"),
    ],
)
def test_model_stem(model: str, stem: str) -> None:
    assert model_stem(model) == stem


def test_a_templates_limit_this_host_cannot_give_names_its_line(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``DOCKCPUS=4`` on a 2-core host had said "--cpus 4 exceeds …", an option nobody typed;
    a --cpus given over the template is the user's own, and named as typed."""
    monkeypatch.chdir(project)
    path = write(project, ALL_KEYS.replace("DOCKCPUS=2.5", "DOCKCPUS=4096"))
    run = ["run", "-e", str(path), "--backend", "fake", "-m", "a"]
    assert main(run) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"edgeprof: error: {path}:12: DOCKCPUS: --cpus 4096 exceeds the ")
    assert main([*run[:-2], "--cpus", "4096", "-m", "a"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("edgeprof: error: --cpus 4096 exceeds the "), line
    assert not (project / "out.txt").exists()


@pytest.mark.parametrize(
    "models, names",
    [
        # No two stems alike: the old profiler's names, for tools that read its files.
        (["a.tflite", "b.onnx", "mobilenet_v1_0.75_224"], ["a", "b", "mobilenet_v1_0.75_224"]),
        # One model's two builds: the old profiler merged them (one log, two rows "model").
        (["model.onnx", "model.tflite"], ["model.onnx", "model.tflite"]),
        (["m.v1", "m.v2", "other.onnx"], ["m.v1", "m.v2", "other"]),
        (["fp32/m.onnx", "int8/m.onnx"], ["fp32_m.onnx", "int8_m.onnx"]),
        (["m.onnx", "q/m.onnx"], ["m.onnx", "q_m.onnx"]),
        # A widened name meeting another model's stem widens that one too.
        (["x.onnx", "x.tflite", "x.onnx.q"], ["x.onnx", "x.tflite", "x.onnx.q"]),
        # One path written two ways: nothing in the path tells them apart but the list.
        (["a//m.onnx", "a/m.onnx"], ["a_m.onnx~1", "a_m.onnx~2"]),
    ],
)
def test_log_names_are_the_old_ones_unless_two_models_would_share_one(
    models: list[str], names: list[str]
) -> None:
    assert [log_names(models)[m] for m in models] == names


def test_a_warning_names_the_docker_args_key_the_template_used(project: Path) -> None:
    """``DOCKER_ARGS=...`` on a host backend had been reported as "DOCK_ARGS not applied"."""
    docker = parse(write(project, ALL_KEYS.replace("DOCK_ARGS=", "DOCKER_ARGS=")), cwd=project)
    (warning,) = docker.host_warnings()
    assert "PRERUN, DOCKER_ARGS not applied" in warning, warning
    dock = parse(write(project, ALL_KEYS), cwd=project)
    assert "PRERUN, DOCK_ARGS not applied" in dock.host_warnings()[0]
    both = ALL_KEYS + 'DOCKER_ARGS="--privileged -v /data:/data"\n'
    (warning,) = parse(write(project, both), cwd=project).host_warnings()
    assert "PRERUN, DOCK_ARGS, DOCKER_ARGS not applied" in warning, warning


@pytest.mark.parametrize(
    "edit, line, message",
    [
        (("DIR=app", "DIR=$HOME"), 6, "DIR '$HOME': no such directory"),
        (("SCRIPT=main.py", "SCRIPT=$S"), 7, "SCRIPT '$S' not found in DIR"),
        (("SAMPLETIME=0.5", "SAMPLETIME=$T"), 9, "invalid SAMPLETIME '$T'"),
        (("DOCKCPUS=2.5", "DOCKCPUS=`nproc`"), 12, "DOCKCPUS: invalid CPU count '`nproc`'"),
        (("DOCKMEMORY=156m", "DOCKMEMORY=${MEM}"), 13, "DOCKMEMORY: invalid size"),
        (("OUTPUTFILE=out.txt", "OUTPUTFILE=$D/out.txt"), 10, "OUTPUTFILE '$D/out.txt': no such"),
    ],
)
def test_an_error_about_an_unexpanded_value_says_it_was_not_expanded(
    project: Path, edit: tuple[str, str], line: int, message: str
) -> None:
    """The warning that ``$`` stays text is said only once the input is good: an error about
    such a value (``DIR=$HOME``: no such directory) had left it out."""
    path = write(project, ALL_KEYS.replace(*edit))
    with pytest.raises(ConfigError) as err:
        parse(path, cwd=project)
    text = str(err.value)
    assert text.startswith(f"{path}:{line}: ") and message in text, text
    assert text.endswith(f"({KEPT_AS_TEXT}: the file is read as data, not sourced)"), text


def test_an_error_about_a_plain_value_has_no_expansion_note(project: Path) -> None:
    with pytest.raises(ConfigError) as err:
        parse(write(project, ALL_KEYS.replace("DIR=app", "DIR=nowhere")), cwd=project)
    assert str(err.value) == f"{project / 'env.template'}:6: DIR 'nowhere': no such directory"


def test_a_later_error_about_a_key_names_its_line_and_the_expansion(project: Path) -> None:
    """What is found after parsing (``COMMAND=$PY`` not found on this host) is said as the
    template's own errors are, ``file:line: KEY: ...``, with the warning it would have had."""
    path = write(project, ALL_KEYS.replace('COMMAND="python3 -u"', "COMMAND=$PY"))
    tpl = parse(path, cwd=project)
    assert f"{path}:8: COMMAND: {KEPT_AS_TEXT}" in tpl.warnings
    assert str(tpl.error("COMMAND", "command not found: $PY")) == (
        f"{path}:8: COMMAND: command not found: $PY "
        f"({KEPT_AS_TEXT}: the file is read as data, not sourced)"
    )
    plain = parse(write(project, ALL_KEYS), cwd=project)
    assert str(plain.error("COMMAND", "command not found: python3")) == (
        f"{path}:8: COMMAND: command not found: python3"
    )
    assert str(plain.error("DOCK_ARGS", "x")) == f"{path}:14: DOCK_ARGS: x"
    assert str(plain.error("DOCKER_ARGS", "x")) == f"{path}: DOCKER_ARGS: x"  # not in the file


def test_docfile_may_be_left_out(project: Path) -> None:
    """DOCFILE is where the old profiler wrote the Dockerfile it generated: edgeprof never
    writes it and an empty one was accepted, so a template without it is as good."""
    tpl = parse(write(project, ALL_KEYS.replace("DOCFILE=Dockerfile\n", "")), cwd=project)
    assert tpl.dockerfile is None and tpl.base_image == "python:3.11-slim"
    assert "DOCFILE" not in tpl.lines and tpl.warnings == ()


def test_missing_keys_are_named_with_the_file(project: Path) -> None:
    text = ALL_KEYS.replace("SCRIPT=main.py\n", "").replace('COMMAND="python3 -u"\n', "")
    path = write(project, text.replace("DOCFILE=Dockerfile\n", ""))
    with pytest.raises(ConfigError) as err:
        parse(path, cwd=project)
    # A key that is not in the file has no line: the file is named.
    assert str(err.value) == f"{path}: required keys SCRIPT, COMMAND missing"


def test_outputfile_is_confined_and_checked_before_anything_runs(
    project: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """The tester's case: an absolute OUTPUTFILE naming an existing 0600 file had
    "Profiling script: …" appended to it; a ``../`` one was written outside the directory."""
    monkeypatch.chdir(project)
    victim = project / "victim4"
    victim.write_text("secret\n")
    victim.chmod(0o600)
    (project / "app" / "main.py").write_text(f"open({str(project / 'ran')!r}, 'w').close()\n")
    for bad in (str(victim), "../pwned6.txt"):
        write(project, ALL_KEYS.replace("OUTPUTFILE=out.txt", f"OUTPUTFILE={bad}"))
        assert main(["run", "--backend", "fake", "-e", "env.template", "--out", "o"]) == 2
        out, err = capfd.readouterr()
        assert out == "" and err == (
            f"edgeprof: error: env.template:10: OUTPUTFILE {bad!r}: must name a file inside "
            "the directory edgeprof is started in (the old profiler's: a file name, as out.txt)\n"
        )
    assert victim.read_text() == "secret\n"
    assert sorted(p.name for p in project.iterdir()) == ["app", "env.template", "victim4"]
    assert not (project.parent / "pwned6.txt").exists()
    # A name inside it, in a subdirectory too, is the old profiler's and still works.
    (project / "logs").mkdir()
    assert parse(write(project, ALL_KEYS.replace("out.txt", "logs/out.txt"))).output_file == (
        project / "logs" / "out.txt"
    )


@pytest.mark.parametrize(
    "output, why",
    [
        ("o\0.txt", "contains a control character"),
        ("x" * 300 + ".txt", "a name over 255 bytes, or a path over 4095, is longer than"),
        ("/proc/self/attr/current", "must name a file inside the directory"),
        ("/sys/kernel/mm/transparent_hugepage/enabled", "must name a file inside the directory"),
    ],
    ids=["NUL", "too-long", "proc", "sys"],
)
def test_an_outputfile_no_run_could_write_is_one_line_before_the_run(
    project: Path,
    output: str,
    why: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A NUL (ValueError "embedded null byte"), a name over 255 bytes (ENAMETOOLONG) had been
    tracebacks, exit 1; a file of the kernel's was refused only after the workload had run
    (``/proc/self/attr/current``: EINVAL from the append; root passes every check of the
    directory there).  OUTPUTFILE's confinement to the start directory now refuses the
    kernel's files and the NUL first; the length check is the outputs' own."""
    monkeypatch.chdir(project)
    path = write(project, ALL_KEYS.replace("OUTPUTFILE=out.txt", f"OUTPUTFILE={output}"))
    assert main(["run", "-e", str(path), "--backend", "fake", "-m", "a"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("edgeprof: error: ") and why in line, line
    assert not (project / "a_out.txt").exists()  # no per-model log: no run


def test_a_limit_the_process_backend_refuses_names_the_template_line(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``DOCKMEMORY`` on ``--backend process`` had said "--memory: the process backend
    cannot limit memory", an option nobody typed."""
    monkeypatch.chdir(project)
    path = write(project, ALL_KEYS.replace("DOCKCPUS=2.5\n", ""))
    assert main(["run", "-e", str(path), "--backend", "process", "-m", "a"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(
        f"edgeprof: error: {path}:12: DOCKMEMORY: --memory: the process backend cannot limit "
    ), line
    assert not (project / "out.txt").exists()


@pytest.mark.parametrize(
    "args, hint",
    [
        ("--cpus 0.5", "edgeprof sets the container's limits itself, from --cpus"),
        ("-m 100m", "(an env.template's DOCKCPUS and DOCKMEMORY)"),
        ("--rm", "edgeprof creates, names, attaches to and removes each run's container"),
        ("--name x", "edgeprof creates, names, attaches to and removes each run's container"),
        ("--foo", "is not supported by edgeprof (supported: --env"),
    ],
)
def test_an_unsupported_docker_args_option_names_the_line_and_what_to_do(
    project: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    args: str,
    hint: str,
) -> None:
    """``DOCKER_ARGS="--cpus 0.5"`` had said "docker option '--cpus' is not supported by
    edgeprof (supported: …)": no line, no key, no word of DOCKCPUS."""
    monkeypatch.chdir(project)
    text = ALL_KEYS.replace('DOCK_ARGS="--privileged -v /data:/data"', f'DOCKER_ARGS="{args}"')
    path = write(project, text)
    assert main(["run", "-e", str(path), "-m", "a"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    word = args.split()[0]
    assert line.startswith(
        f"edgeprof: error: {path}:14: DOCKER_ARGS: docker option '{word}' is not supported"
    ), line
    assert hint in line
    assert not (project / "out.txt").exists()
