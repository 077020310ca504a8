"""Fuzzed command-line parsers: sizes, CPU counts and lists, periods, durations, process
limits, shares, ``--docker-args``, model lists, ``--env``, the Auptimizer ``env.template``
and a whole ``run`` request.  Limits against the host are in ``test_fuzz_host_limits.py``.

Each test states the contract of :mod:`tests.unit.fuzz_strategies` (a value, or one
``ConfigError`` line) and, where a formatter exists, that what is accepted reads back the
same through it.  Files given to ``report``, ``compare``, ``calibrate`` and ``--budgets``,
and device catalogs, are in ``test_fuzz_files.py``.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from edgeprof.backends.docker import DockerOptions, parse_docker_args
from edgeprof.cpu_units import (
    MAX_CPU,
    MAX_CPUS,
    MIN_CPUS,
    format_cpuset,
    format_period,
    parse_cpu_period,
    parse_cpus,
    parse_cpuset,
)
from edgeprof.errors import ConfigError
from edgeprof.model import Limits
from edgeprof.names import check_name
from edgeprof.sweeps import envtemplate
from edgeprof.sweeps.labels import model_names
from edgeprof.sweeps.request import RunRequest, parse_env, plan_run
from edgeprof.units import (
    MAX_DURATION_S,
    MAX_PIDS,
    MAX_SIZE,
    format_binary,
    parse_duration,
    parse_fraction,
    parse_memory_limit,
    parse_pids,
    parse_size,
)

from .fuzz_strategies import Refused, accepted, fuzz, hostile, json_values, mixed

NUMBERS = st.one_of(  # mostly of the sizes the options take, some beyond any
    st.integers(min_value=0, max_value=5000).map(str),
    st.floats(min_value=0, max_value=5000).map(repr),
    st.decimals(min_value=0, max_value=5000, allow_nan=False, places=3).map(str),
    st.integers(min_value=0, max_value=2**70).map(str),
)
SIZE_UNITS = ["", "b", "B", "k", "kb", "KiB", "m", "mb", "MiB", "M", "g", "GiB", "t", "TB", "ib"]
SIZES = mixed(st.builds("{}{}".format, NUMBERS, st.sampled_from(SIZE_UNITS)))


def ascii_digits(value: object) -> bool:
    """No digit but ASCII's: Python's int() and float() take '١٢' and '１２' as 12, which no
    kernel file, Docker option or shell script means."""
    return not isinstance(value, str) or all(c.isascii() for c in value if c.isdigit())


# Not JSON types a typed API promises, but what a YAML or JSON file hands a parser.
ANY_VALUE = st.one_of(json_values(), st.sampled_from([10**400, float("nan"), True]))

# -- sizes -------------------------------------------------------------------------------------


@fuzz(400)
@given(SIZES)
def test_sizes(text: str) -> None:
    got = accepted(parse_size, text)
    if isinstance(got, Refused):
        return
    assert isinstance(got, int) and 1 <= got <= MAX_SIZE and ascii_digits(text)
    assert parse_size(f"{got}b") == got
    # The bug this bound fixed: 1e20t was taken and printed as 97656249999999991808.0TiB.
    assert len(format_binary(got)) <= len(format_binary(MAX_SIZE))


@fuzz(300)
@given(st.integers(min_value=1, max_value=MAX_SIZE), st.integers(min_value=0, max_value=4))
def test_sizes_round_trip_exactly(n: int, power: int) -> None:
    assert parse_size(f"{n}b") == n  # no float: 2**53 + 1 is not 2**53
    whole = n >> (10 * power)
    if whole:
        unit = "bkmgt"[power]
        assert parse_size(f"{whole}{unit}") == whole << (10 * power)
        if not power:  # a fraction of a byte is refused: "1.5" was a 1-byte budget
            with pytest.raises(ConfigError, match="a byte has no fraction"):
                parse_size(f"{whole}.5{unit}")
        elif (2 * whole + 1) << (10 * power) <= 2 * MAX_SIZE:  # half a unit more: the floor
            assert parse_size(f"{whole}.5{unit}") == (2 * whole + 1) << (10 * power) >> 1


@fuzz(300)
@given(SIZES)
def test_memory_limits(text: str) -> None:
    got = accepted(parse_memory_limit, text)
    if not isinstance(got, Refused):
        assert 6 * 2**20 <= got <= MAX_SIZE
        assert Limits(memory=f"{got}b").memory == got


# -- CPU counts, CPU lists, periods ------------------------------------------------------------


@fuzz(400)
@given(mixed(NUMBERS))
def test_cpu_counts(text: str) -> None:
    got = accepted(parse_cpus, text)
    if not isinstance(got, Refused):
        assert isinstance(got, float) and MIN_CPUS <= got <= MAX_CPUS and ascii_digits(text)
        assert "_" not in text  # float() takes 1_0 as 10
        assert parse_cpus(repr(got)) == got


@fuzz(200)
@given(ANY_VALUE)
def test_cpu_counts_of_any_type(value: object) -> None:
    got = accepted(parse_cpus, value)
    if not isinstance(got, Refused):
        assert MIN_CPUS <= got <= MAX_CPUS and not isinstance(value, bool)


@fuzz(200)
@given(st.floats(min_value=MIN_CPUS, max_value=MAX_CPUS))
def test_cpu_counts_round_trip(cpus: float) -> None:
    assert parse_cpus(repr(cpus)) == cpus


RANGES = st.lists(
    st.tuples(st.integers(0, 70_000), st.none() | st.integers(0, 70_000)), min_size=1, max_size=5
).map(lambda rs: ",".join(f"{a}" if b is None else f"{a}-{b}" for a, b in rs))


@fuzz(300)
@given(mixed(RANGES))
def test_cpu_lists(text: str) -> None:
    got = accepted(parse_cpuset, text)
    if not isinstance(got, Refused):
        assert ascii_digits(text)
        assert got and list(got) == sorted(set(got)) and got[0] >= 0 and got[-1] <= MAX_CPU
        assert parse_cpuset(format_cpuset(got)) == got


@fuzz(200)
@given(st.sets(st.integers(min_value=0, max_value=MAX_CPU), min_size=1, max_size=40))
def test_cpu_lists_round_trip(cpus: set[int]) -> None:
    assert parse_cpuset(format_cpuset(sorted(cpus))) == tuple(sorted(cpus))


PERIODS = st.one_of(
    st.builds("{}us".format, st.integers(500, 1_100_000)),
    st.builds("{}ms".format, st.integers(0, 1100)),
    st.builds("{}{}".format, NUMBERS, st.sampled_from(["us", "µs", "ms", "s", "", "m"])),
)


@fuzz(400)
@given(st.one_of(mixed(PERIODS), ANY_VALUE))
def test_cpu_periods(value: object) -> None:
    got = accepted(parse_cpu_period, value)
    if not isinstance(got, Refused):
        assert isinstance(got, int) and 1000 <= got <= 1_000_000
        assert parse_cpu_period(format_period(got)) == got


@fuzz(200)
@given(st.integers(min_value=1000, max_value=1_000_000))
def test_cpu_periods_round_trip(us: int) -> None:
    assert parse_cpu_period(format_period(us)) == us == parse_cpu_period(us)


# -- durations, process limits, shares ---------------------------------------------------------

DURATIONS = st.builds("{}{}".format, NUMBERS, st.sampled_from(["", "s", "ms", "m", "h", "d"]))


@fuzz(400)
@given(st.one_of(mixed(DURATIONS), ANY_VALUE))
def test_durations(value: object) -> None:
    got = accepted(parse_duration, value, "--timeout")
    if not isinstance(got, Refused):
        assert ascii_digits(value)
        assert isinstance(got, float) and 0 < got <= MAX_DURATION_S
        assert parse_duration(repr(got)) == got  # as a template's interval is passed on


@fuzz(200)
@given(st.floats(min_value=0, max_value=MAX_DURATION_S, exclude_min=True))
def test_durations_round_trip(seconds: float) -> None:
    assert parse_duration(repr(seconds)) == seconds == parse_duration(seconds)


@fuzz(300)
@given(st.one_of(mixed(st.integers(0, 2**64).map(str)), ANY_VALUE))
def test_process_limits(value: object) -> None:
    got = accepted(parse_pids, value)
    if not isinstance(got, Refused):
        assert ascii_digits(value)
        assert 1 <= got <= MAX_PIDS and parse_pids(str(got)) == got


@fuzz(300)
@given(mixed(st.builds("{}{}".format, NUMBERS, st.sampled_from(["", "%"]))))
def test_shares(text: str) -> None:
    got = accepted(parse_fraction, text, "--margin")
    if not isinstance(got, Refused):
        assert 0 <= got <= 10 and parse_fraction(repr(got), "--margin") == got


# -- --docker-args -----------------------------------------------------------------------------

DOCKER_VALUES = st.one_of(
    st.sampled_from(["/data:/data", "/a:/b:ro", "K=V", "K", "host", "1g", "512m", "1000:1000"]),
    hostile().map(shlex.quote),
)
DOCKER_OPTIONS = st.one_of(
    st.builds(
        "{} {}".format,
        st.sampled_from(["-v", "--volume", "-e", "--env", "--network", "--net", "--shm-size"]),
        DOCKER_VALUES,
    ),
    st.builds("{}={}".format, st.sampled_from(["--user", "--security-opt"]), DOCKER_VALUES),
    st.sampled_from(["--privileged", "--rm", "-it", "--cpus 2", "-u", "=", "--privileged=1"]),
    hostile(),
)


@fuzz(400)
@given(st.lists(DOCKER_OPTIONS, max_size=4).map(" ".join) | st.lists(hostile(), max_size=3))
def test_docker_args(args: str | list[str]) -> None:
    got = accepted(parse_docker_args, args)
    if not isinstance(got, Refused):
        assert got.shm_size is None or 1 <= got.shm_size <= MAX_SIZE
        assert all(v.split(":")[0] and v.count(":") in (1, 2) for v in got.volumes)
        assert all(got.environment)


WORD = st.text(st.characters(codec="utf-8", exclude_characters="\0"), min_size=1, max_size=8)


@fuzz(200)
@given(
    volumes=st.lists(st.tuples(WORD, WORD).map(":".join).filter(lambda v: v.count(":") == 1)),
    env=st.dictionaries(WORD.filter(lambda k: "=" not in k), st.text(max_size=5), max_size=3),
    network=st.none() | WORD,
    shm=st.none() | st.integers(1, MAX_SIZE),
    privileged=st.booleans(),
)
def test_docker_args_round_trip(
    volumes: list[str], env: dict[str, str], network: str | None, shm: int | None, privileged: bool
) -> None:
    words = [w for v in volumes for w in ("-v", v)] + [f"--env={k}={v}" for k, v in env.items()]
    words += ["--network", network] if network is not None else []
    words += [f"--shm-size={shm}b"] if shm is not None else []
    words += ["--privileged"] if privileged else []
    want = DockerOptions(tuple(volumes), env, network, shm, privileged)
    assert parse_docker_args(shlex.join(words)) == want == parse_docker_args(words)


# -- model lists, --env ------------------------------------------------------------------------

NAMES = mixed(st.sampled_from(["a.onnx", "models/b.onnx", "mobilenet_v2_0.5", "../x", "-rf"]))


@fuzz(300)
@given(st.lists(NAMES, min_size=1, max_size=4).map(",".join))
def test_model_lists(models: str) -> None:
    got = accepted(model_names, models, None)
    if not isinstance(got, Refused):
        assert got and all(check_name(n, "model") == n for n in got)
        assert model_names(",".join(got), None) == got


@fuzz(150)
@given(
    st.one_of(
        st.lists(st.one_of(NAMES, st.just("# a comment"), st.just("  ")), max_size=5).map(
            lambda lines: "\n".join(lines).encode("utf-8", "surrogatepass")
        ),
        st.binary(max_size=30),
    )
)
def test_model_files(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "models.txt"
    path.write_bytes(content)
    got = accepted(model_names, None, path)
    if not isinstance(got, Refused):
        path.write_text("\n".join(got))
        assert got and model_names(None, path) == got
    assert isinstance(accepted(model_names, "a", path), Refused)  # -m and -f: one or the other


@fuzz(200)
@given(st.lists(mixed(st.tuples(WORD, WORD).map("=".join)), max_size=4))
def test_env_items(items: list[str]) -> None:
    got = accepted(parse_env, items)
    if not isinstance(got, Refused):
        assert parse_env([f"{k}={v}" for k, v in got.items()]) == got


# -- a whole run request -----------------------------------------------------------------------


def maybe(valid: st.SearchStrategy[str]) -> st.SearchStrategy[str | None]:
    """Not given, or mostly a valid value: a request with one bad option among good ones."""
    return st.one_of(st.none(), st.none(), valid, valid, mixed(valid))


@fuzz(300)
@given(
    cpus=st.lists(maybe(st.sampled_from(["0.5", "1", "2", "1,2", "0.25"])), max_size=2),
    cpuset=st.lists(maybe(st.sampled_from(["0", "1", "0-1", "0,1"])), max_size=2),
    memory=st.lists(maybe(st.sampled_from(["64m", "1g", "512m,1g", "6m"])), max_size=2),
    pids=maybe(st.integers(0, 10**7).map(str)),
    period=maybe(PERIODS),
    models=maybe(st.lists(NAMES, min_size=1, max_size=3).map(",".join)),
    wall=maybe(DURATIONS),
    peak=maybe(SIZES),
)
def test_run_requests(
    cpus: list[str | None],
    cpuset: list[str | None],
    memory: list[str | None],
    pids: str | None,
    period: str | None,
    models: str | None,
    wall: str | None,
    peak: str | None,
) -> None:
    request = RunRequest(
        command=("true",),
        cpus=tuple(c for c in cpus if c is not None),
        cpuset=tuple(c for c in cpuset if c is not None),
        memory=tuple(m for m in memory if m is not None),
        pids=pids,
        cpu_period=period,
        models=models,
        budgets={"wall": wall, "peak_memory": peak},
    )
    job = accepted(plan_run, request)
    if not isinstance(job, Refused):
        for lim in job.plan.limits:  # each setting reads back from what a result file keeps
            assert Limits(lim.cpus, lim.cpuset, lim.memory, lim.pids, lim.cpu_period_us) == lim
        assert all(0 < b < float("inf") for b in job.budgets.overrides.values())


# -- env.template ------------------------------------------------------------------------------

VALID_TEMPLATE = {
    "IMAGEREPO": "python:3.11-slim",
    "DIR": "app",
    "SCRIPT": "main.py",
    "COMMAND": "python3 -u",
    "SAMPLETIME": "0.5",
    "OUTPUTFILE": "out.txt",
    "DOCFILE": "Dockerfile",
    "DOCKCPUS": "1.5",
    "DOCKMEMORY": "512m",
}
QUOTING = st.sampled_from(["plain", "single", "double", "export"])
TEMPLATE_VALUES = mixed(
    st.sampled_from(["2", "0.25", "1g", "6m", "a b", "$HOME", "x\ny", "'", "a\u2028b", "x;y"])
)


def _line(key: str, value: str, style: str) -> str:
    if style == "single":
        return f"{key}={shlex.quote(value)}"
    if style == "double":
        escaped = "".join("\\" + c if c in '\\"$`' else c for c in value)
        return f'{key}="{escaped}"'
    return f"{'export ' if style == 'export' else ''}{key}={value}"


@st.composite
def templates(draw: st.DrawFn) -> str:
    """The valid template with some keys given other values (quoted some way) or dropped,
    and extra lines: comments, unknown keys, hostile text."""
    values = dict(VALID_TEMPLATE)
    for key in draw(st.lists(st.sampled_from([*envtemplate.KEYS, "X", "1X"]), max_size=2)):
        values[key] = draw(TEMPLATE_VALUES)
    if draw(st.integers(0, 9)) == 0:
        del values[draw(st.sampled_from(sorted(values)))]
    lines = [_line(k, v, draw(QUOTING)) for k, v in values.items()]
    extra = st.one_of(st.just("# comment"), st.just(""), st.just("  # x"), hostile())
    for text in draw(st.lists(extra, max_size=2)):
        lines.insert(draw(st.integers(0, len(lines))), text)
    return "\n".join(lines) + draw(st.sampled_from(["", "\n", "\n", "\\", "'"]))


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "main.py").write_text("print('hi')\n")
    monkeypatch.chdir(tmp_path)  # a template's paths are relative to where edgeprof starts
    return tmp_path


@fuzz(250)
@given(templates())
def test_env_templates(project: Path, text: str) -> None:
    path = project / "env.template"
    path.write_text(text, errors="surrogatepass")
    tpl = accepted(envtemplate.parse, path)
    if isinstance(tpl, Refused):
        return
    assert 0 < tpl.interval_s <= MAX_DURATION_S and tpl.script and tpl.command
    # What is accepted reads back the same, written out again in the shell's quoting.
    back = {
        "IMAGEREPO": tpl.base_image or "",
        "APTREQUIREMENTS": " ".join(tpl.apt),
        "PIPREQUIREMENTS": " ".join(tpl.pip),
        "PRERUN": tpl.prerun or "",
        "DIR": str(tpl.directory.relative_to(project)),
        "SCRIPT": tpl.script,
        "COMMAND": shlex.join(tpl.command),
        "SAMPLETIME": repr(tpl.interval_s),
        "OUTPUTFILE": str(tpl.output_file.relative_to(project)),
        "DOCFILE": "Dockerfile",
        "DOCKCPUS": "" if tpl.limits.cpus is None else repr(tpl.limits.cpus),
        "DOCKMEMORY": "" if tpl.limits.memory is None else f"{tpl.limits.memory}b",
        "DOCK_ARGS": tpl.docker_args or "",
    }
    path.write_text("\n".join(f"{k}={shlex.quote(v)}" for k, v in back.items()) + "\n")
    again = envtemplate.parse(path)
    fields = ("base_image", "apt", "pip", "prerun", "directory", "script", "command",
              "interval_s", "output_file", "limits", "docker_args")  # fmt: skip
    assert [getattr(again, f) for f in fields] == [getattr(tpl, f) for f in fields]
    # ... and a run request made of it is planned or refused in one line.
    accepted(plan_run, RunRequest(environment=path, backend="cgroup"))


@pytest.mark.parametrize("odd", ["\u2028", "\x0c", "\x85", "\x1e"])
def test_a_quoted_value_keeps_what_only_python_calls_a_line_end(project: Path, odd: str) -> None:
    """The shell ends a line at LF only; a CR before it is dropped (a Windows file)."""
    text = "\r\n".join(f"{k}={shlex.quote(v)}" for k, v in VALID_TEMPLATE.items())
    path = project / "env.template"
    path.write_text(f"{text}\r\nPRERUN='a{odd}b'\r\n")
    tpl = envtemplate.parse(path)
    assert tpl.prerun == f"a{odd}b" and tpl.command == ("python3", "-u")
