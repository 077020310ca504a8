"""``edgeprof.profile``'s arguments of the wrong type or for another backend: each refused
in one line (:class:`ConfigError`) before anything starts, as the CLI refuses its options;
and the errors its docstring names are importable from ``edgeprof``."""

from __future__ import annotations

import inspect
import io
import os
import re
import subprocess
import sys
import typing
from pathlib import Path

import pytest
import tomllib

import edgeprof
from edgeprof.analysis.devices import DEVICES_ENV
from edgeprof.cli import main
from edgeprof.errors import ConfigError, CoresBusy, LimitError, as_keywords
from edgeprof.measure import runner
from edgeprof.measure.inputs import output_fds
from edgeprof.measure.limits import THREAD_VARS
from edgeprof.measure.runner import ResultNotSaved, profile
from edgeprof.model import Limits, UserIds
from edgeprof.resultfiles import load_runs
from edgeprof.sweeps.library import KEYWORDS
from tests.fakes import FakeBackend

RUN = ["run", "--backend", "fake", "--interval", "0.01"]


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        # A TypeError in the name check, an AttributeError at the launch, kept in silence.
        ({"name": 5}, r"^name: expected a string or None, not 5$"),
        ({"run_as": (99999, 99999, ())}, r"^run_as: expected edgeprof.UserIds\(uid, gid"),
        # The field that is wrong, named (it had been "not a UserIds" of a UserIds).
        ({"run_as": UserIds(-1, 0, ())}, r"^run_as: its uid -1 is not a whole number"),
        ({"run_as": UserIds(1, "1", ())}, r"^run_as: its gid '1' is not a whole number"),  # type: ignore[arg-type]
        ({"run_as": UserIds(1, 1, [2])}, r"^run_as: its groups \[2\] are not a tuple"),  # type: ignore[arg-type]
        # As the CLI's --name: "" had been taken, the program's name used in its place.
        ({"name": ""}, r"^name: empty name$"),
        # Named as the CLI names it (edgeprof.profile spells it gpu_memory, below).
        ({"gpu_memory": "lots"}, r"^--gpu-memory: invalid size 'lots'"),
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
    monkeypatch.setattr(runner, "open_watch", lambda selection, said=None: None)  # no NVML here
    r = profile(["true"], backend=FakeBackend(), gpu_memory="1g")
    assert r.gpu is None
    assert r.warnings[-1] == (
        "GPU memory limit 1.0GiB: no GPU was measured, so the run was not held to it "
        "(edgeprof doctor lists the GPUs it can read)"
    )


def test_its_errors_name_its_keywords_not_the_command_lines_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The checks are the CLI's own; a Python caller had read ``--allow-over-host to run
    anyway`` and ``--cores-busy x`` for keywords spelled otherwise."""
    be = FakeBackend()
    # Over the backend's CPUs and the host's, whichever is more (a 1-CPU affinity had let
    # 2 through against the fake backend's 2).
    too_many = max(len(be.available_cpus()), len(os.sched_getaffinity(0))) + 1
    with pytest.raises(edgeprof.LimitError) as over:
        edgeprof.profile(["true"], Limits(cpus=too_many), backend=be)
    assert str(over.value).startswith(f"cpus {too_many} exceeds the ")
    assert str(over.value).endswith("; allow_over_host=True to run anyway")
    with pytest.raises(ConfigError, match=r"^cores_busy x: expected wait or fail$"):
        edgeprof.profile(["true"], backend=be, cores_busy="x")
    with pytest.raises(ConfigError, match=r"^cwd \S+: no such directory$"):
        edgeprof.profile(["true"], backend=be, cwd=tmp_path / "nope")
    assert be.runs == []
    # The command line's messages keep their options.
    assert main([*RUN, "--cores-busy", "x", "--", "true"]) == 2
    assert capsys.readouterr().err == "edgeprof: error: --cores-busy x: expected wait or fail\n"


def test_the_process_backends_memory_refusal_names_the_librarys_means(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """It had said "gate it with --max-peak-memory" to a caller of profile(), which has no
    such keyword; the command line keeps its option."""
    from edgeprof.backends.process import ProcessBackend

    with pytest.raises(LimitError) as out:
        edgeprof.profile(["true"], Limits(memory="512m"), backend=ProcessBackend())
    assert str(out.value) == (
        "memory: the process backend cannot limit memory: Linux does not enforce RLIMIT_RSS, "
        "and RLIMIT_AS caps each process's address space, not the run's memory (an "
        "interpreter with PyTorch maps over 1 GiB it never touches); measure the peak and "
        "gate it (RunResult.memory.peak_bytes), or use a cgroup backend (edgeprof doctor "
        "says how to get one)"
    )
    assert main(["run", "--backend", "process", "--memory", "512m", "--", "true"]) == 2
    err = capsys.readouterr().err
    assert "; measure the peak and gate it (--max-peak-memory), or use a cgroup backend" in err


def test_only_known_options_are_respelled() -> None:
    text = "--cpus 3; --allow-over-host; --max-wall; --cpuset 1"
    assert as_keywords(text, KEYWORDS) == "cpus 3; allow_over_host=True; --max-wall; cpuset 1"
    text = "--cpus-x --memoryless a--cpus"
    assert as_keywords(text, KEYWORDS) == text


def test_the_errors_profile_raises_are_exported() -> None:
    assert edgeprof.CoresBusy is CoresBusy and edgeprof.ResultNotSaved is ResultNotSaved
    assert {"CoresBusy", "ResultNotSaved"} <= set(edgeprof.__all__)


def test_a_limit_refusal_is_an_exported_class_that_keeps_its_figures() -> None:
    """usage.md named ``LimitError`` where a user saw ``CpusOverHost``, a subclass that
    ``edgeprof`` did not export: one could catch it only by an internal module's name."""
    with pytest.raises(edgeprof.CpusOverHost) as caught:
        edgeprof.profile(["true"], edgeprof.Limits(cpus=9999), backend=FakeBackend())
    assert isinstance(caught.value, edgeprof.LimitError)
    assert caught.value.cpus == 9999
    assert caught.value.available == tuple(sorted(os.sched_getaffinity(0)))
    assert str(caught.value).startswith("cpus 9999 exceeds the ")
    assert issubclass(edgeprof.OutputReplaced, edgeprof.UnsafeOutput)
    assert issubclass(edgeprof.UnsafeOutput, edgeprof.ConfigError)
    assert {"CpusOverHost", "UnsafeOutput", "OutputReplaced"} <= set(edgeprof.__all__)


def test_the_package_docstring_lists_every_public_name() -> None:
    """``help(edgeprof)`` had shown only the workload's functions: the rest of the API is lazy
    (module ``__getattr__``), so pydoc never saw it.  The docstring names each, once; a name
    added to ``__all__`` without a line there fails here."""
    doc = edgeprof.__doc__ or ""
    api = doc[doc.index("The public API") : doc.index("Only the version")]
    named = re.findall(r"``(\w+)[(`]", api)
    assert sorted(set(named)) == sorted(edgeprof.__all__)
    assert len(named) == len(set(named))


def test_the_docstring_says_which_errors_are_not_edgeprof_errors() -> None:
    """It said EdgeprofError was every error edgeprof raises, and phase(3) raised TypeError."""
    with pytest.raises(TypeError, match=r"^edgeprof.phase: name must be a str, got 3 \(int\)"):
        edgeprof.phase(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^edgeprof.iteration: items -1 is not a count from 0"):
        edgeprof.iteration(-1)
    doc = " ".join((edgeprof.__doc__ or "").split())
    assert "every error the profiler raises (the workload's functions above raise Python's " \
        "TypeError or ValueError for a bad argument" in doc


def test_a_type_checker_refuses_a_string_command() -> None:
    """``profile("python3 infer.py")`` had passed mypy --strict (a str is a Sequence[str]);
    a list or a tuple of str still passes.  At run time it stays one ConfigError line."""
    hint = typing.get_type_hints(edgeprof.profile)["command"]
    assert hint == list[str] | tuple[str, ...]
    with pytest.raises(ConfigError, match=r"^command 'true x': expected a list of arguments"):
        edgeprof.profile("true x", backend=FakeBackend())  # type: ignore[arg-type]


def test_dir_lists_the_lazy_public_names_without_loading_them() -> None:
    """``dir(edgeprof)`` (tab completion) had shown none of the API: it is lazy."""
    probe = (
        "import sys, edgeprof\n"
        "names = dir(edgeprof)\n"
        "print(sorted(set(edgeprof.__all__) - set(names)), names == sorted(names),\n"
        "      [m for m in sys.modules if m.startswith('edgeprof.')])\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=Path(__file__).parents[2], timeout=60)  # fmt: skip
    assert proc.stdout == "[] True ['edgeprof.version']\n", proc.stderr


def test_dir_lists_only_the_public_names_and_pythons_dunders() -> None:
    """``dir(edgeprof)`` had listed ``TYPE_CHECKING``, ``_LAZY`` and ``_LIGHT`` (and
    ``annotations``, ``version``) beside the API: now ``__all__`` and the dunders alone,
    however many lazy names were loaded."""
    edgeprof.profile  # noqa: B018  (a lazy name loaded: bound in the module's globals)
    names = dir(edgeprof)
    extra = {n for n in names if n not in edgeprof.__all__}
    assert extra and all(n.startswith("__") and n.endswith("__") for n in extra)
    assert {"TYPE_CHECKING", "_LAZY", "_LIGHT", "annotations", "version"}.isdisjoint(names)
    assert set(edgeprof.__all__) <= set(names) and "__doc__" in names and "__path__" in names


def test_the_types_of_a_comparison_are_exported() -> None:
    """Code that reads a comparison annotated it from internal modules."""
    from edgeprof.analysis.change import Change, Verdict
    from edgeprof.analysis.metrics import Metric

    assert (edgeprof.Change, edgeprof.Verdict, edgeprof.Metric) == (Change, Verdict, Metric)
    assert {"Change", "Verdict", "Metric"} <= set(edgeprof.__all__)
    assert "docs/results.md" in (edgeprof.RunResult.__doc__ or "")
    assert "result.schema.json" in (edgeprof.RunResult.to_dict.__doc__ or "")


def test_profiles_help_documents_each_of_its_arguments() -> None:
    """``help(edgeprof.profile)`` had documented ``device`` and pointed at an internal
    module for the rest."""
    doc = edgeprof.profile.__doc__ or ""
    params = list(inspect.signature(edgeprof.profile).parameters)
    assert len(params) == 27
    assert [p for p in params if f"``{p}``" not in doc] == []
    assert "edgeprof.measure" not in doc


def test_user_ids_is_exported_as_the_run_as_error_names_it() -> None:
    with pytest.raises(ConfigError, match=r"^run_as: expected edgeprof.UserIds\(uid, gid, "):
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
        ({"devices": 5}, r"^devices: expected a path \(a str or a pathlib.Path\) or None, not 5$"),
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


# -- device: the catalog's limits, as --device ------------------------------------------------

MIB = 2**20


@pytest.fixture
def tiny(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A catalog of one device whose share is host-independent: 2 cores at speed 0.25."""
    monkeypatch.delenv(DEVICES_ENV, raising=False)
    for v in THREAD_VARS:
        monkeypatch.delenv(v, raising=False)
    cat = tmp_path / "devices.yml"
    cat.write_text("devices:\n  tiny:\n    cores: 2\n    memory: 64m\n    speed: 0.25\n")
    return cat


def test_a_device_s_limits_apply_as_the_command_line_applies_them(
    tmp_path: Path, tiny: Path
) -> None:
    """``device="rpi4-2gb"`` had been only a label: Limits all None, the run unlimited (a
    307.8 MiB peak), and ``report`` held it to the board."""
    seen = tmp_path / "threads"
    cmd = ["sh", "-c", f'printf %s "$OMP_NUM_THREADS" > {seen}']
    r = edgeprof.profile(cmd, backend=FakeBackend(), device="tiny", devices=tiny)
    assert (r.limits.cpus, r.limits.memory) == (0.5, 64 * MIB)
    assert (r.device, r.device_replaced) == ("tiny", ())
    assert seen.read_text() == "2"  # the device's thread pools, as run --device sizes them
    # An explicit field replaces the device's value and is recorded as the CLI records it.
    be, out = FakeBackend(), tmp_path / "lib"
    given = Limits(memory="32m", pids=50)
    mine = edgeprof.profile(["true"], given, backend=be, device="tiny", devices=tiny, out_dir=out)
    assert (mine.limits.cpus, mine.limits.memory, mine.limits.pids) == (0.5, 32 * MIB, 50)
    assert mine.device_replaced == ("--memory",)
    assert mine.warnings[0] == "--memory 32.0MiB replaces tiny's 64.0MiB"
    cli = tmp_path / "cli"
    argv = [*RUN, "--device", "tiny", "--devices", str(tiny), "--memory", "32m", "--pids", "50"]
    assert main([*argv, "--out", str(cli), "--", "true"]) == 0
    theirs = load_runs([cli / "result.json"])[0]
    assert theirs.limits == mine.limits and theirs.device == mine.device
    assert theirs.device_replaced == mine.device_replaced


def test_a_shipped_device_gets_the_limits_its_cli_run_gets(tmp_path: Path, tiny: Path) -> None:
    r = edgeprof.profile(["true"], backend=FakeBackend(), device="rpi4-2gb", allow_over_host=True)
    assert r.limits.memory == 2 * 2**30 and r.limits.cpus is not None
    argv = [*RUN, "--allow-over-host", "--device", "rpi4-2gb", "--out", str(tmp_path / "c")]
    assert main([*argv, "--", "true"]) == 0
    assert load_runs([tmp_path / "c" / "result.json"])[0].limits == r.limits


def test_an_unknown_device_is_one_error_that_lists_the_known_ones(
    tmp_path: Path, tiny: Path
) -> None:
    be, out = FakeBackend(), tmp_path / "out"
    with pytest.raises(ConfigError, match=r"^device nope: no such device \(known: .*rpi4-2gb"):
        edgeprof.profile(["true"], backend=be, device="nope", out_dir=out)
    with pytest.raises(ConfigError, match=r"^device nope: no such device \(known: .*tiny"):
        edgeprof.profile(["true"], backend=be, device="nope", devices=tiny, out_dir=out)
    with pytest.raises(ConfigError, match=r"^devices .*devices.yml: a catalog for device"):
        edgeprof.profile(["true"], backend=be, devices=tiny, out_dir=out)
    assert be.runs == [] and not out.exists()


def test_an_empty_command_is_said_in_the_librarys_words() -> None:
    """``profile([])`` had answered with the command line's syntax, "no command given:
    edgeprof run [OPTIONS] -- COMMAND [ARGS]..." (a notebook user's)."""
    with pytest.raises(edgeprof.ConfigError) as raised:
        edgeprof.profile([], backend=FakeBackend())
    assert str(raised.value) == "command: an empty list; give the program and its arguments"


def test_a_file_object_takes_the_workloads_output_as_subprocess_takes_it(tmp_path: Path) -> None:
    """Only a descriptor had been taken: ``stdout=open(...)`` and ``sys.stdout`` were refused
    (a notebook user's).  What the caller wrote first comes first: the file is flushed."""
    log = tmp_path / "wl.txt"
    with open(log, "w") as f:
        f.write("header\n")  # buffered in f until profile flushes it
        r = edgeprof.profile(["sh", "-c", "echo out; echo err >&2"], backend=FakeBackend(),
                             stdout=f, stderr=f)  # fmt: skip
    assert r.exit_code == 0
    assert log.read_text() == "header\nout\nerr\n"


def test_stderr_joins_stdout_as_subprocess_joins_it(tmp_path: Path) -> None:
    """``stderr=subprocess.STDOUT`` had been refused as a capture; it is none: the
    workload's stderr goes where its stdout goes (a library user's)."""
    log = tmp_path / "wl.txt"
    with open(log, "w") as f:
        r = edgeprof.profile(["sh", "-c", "echo out; echo err >&2"], backend=FakeBackend(),
                             stdout=f, stderr=subprocess.STDOUT)  # fmt: skip
    assert r.exit_code == 0
    assert log.read_text() == "out\nerr\n"
    assert output_fds(None, subprocess.STDOUT) == (None, 1)  # edgeprof's own stdout
    assert output_fds(subprocess.DEVNULL, subprocess.STDOUT) == (subprocess.DEVNULL,) * 2


def test_output_without_a_descriptor_is_still_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(edgeprof.ConfigError) as raised:
        edgeprof.profile(["true"], backend=FakeBackend(), stdout=io.StringIO())
    said = str(raised.value)
    assert said.startswith("stdout=<_io.StringIO object at 0x")
    assert said.endswith(
        ">: expected an open file descriptor or file (open(), f.fileno()), subprocess.DEVNULL "
        "or None; edgeprof does not capture the workload's output"
    )
    closed = open(tmp_path / "x", "w")  # noqa: SIM115
    closed.close()
    with pytest.raises(edgeprof.ConfigError, match=r"^stderr=<_io.TextIOWrapper .*: expected an"):
        edgeprof.profile(["true"], backend=FakeBackend(), stderr=closed)
    # -1 and -2 to Python: said as written (it had said "stdout=-1").
    with pytest.raises(edgeprof.ConfigError, match=r"^stdout=subprocess.PIPE: expected an open"):
        edgeprof.profile(["true"], backend=FakeBackend(), stdout=subprocess.PIPE)
    with pytest.raises(edgeprof.ConfigError, match=r"^stdout=subprocess.STDOUT: expected an"):
        edgeprof.profile(["true"], backend=FakeBackend(), stdout=subprocess.STDOUT)
    with pytest.raises(edgeprof.ConfigError, match=r"^stdout=-4: expected an open"):
        edgeprof.profile(["true"], backend=FakeBackend(), stdout=-4)


def test_the_librarys_errors_name_its_keywords_but_not_dockers_options() -> None:
    """``gpu_memory="lots"`` had named no argument, and the size rule's "as Docker's
    --memory" had read "as Docker's memory" (a library user's)."""
    import edgeprof

    with pytest.raises(ConfigError) as info:
        edgeprof.profile(["true"], gpu_memory="lots")
    said = str(info.value)
    assert said.startswith("gpu_memory: invalid size 'lots': ")
    assert "(binary multiples, as Docker's --memory)" in said


def test_a_wrong_value_for_compare_is_named_short() -> None:
    """A result's ``to_dict()`` given to ``compare`` had been printed whole, ~4 000
    characters, in its one line."""
    import edgeprof

    big = {"schema_version": 1, "runs": list(range(500))}
    with pytest.raises(ConfigError) as info:
        edgeprof.compare(big, "elsewhere")  # type: ignore[arg-type]
    assert str(info.value) == (
        "edgeprof.compare: baseline (a dict) is not a path, a RunResult or a list of them"
    )
    with pytest.raises(ConfigError) as info:
        edgeprof.compare([big], "elsewhere")  # type: ignore[list-item]
    assert str(info.value).startswith("edgeprof.compare: baseline (a list holding a dict) is")
