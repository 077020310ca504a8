"""Fuzzed files: results given to ``report`` and ``compare``, ``fit.json``, calibration files,
the device CSV, budget files and device catalogs.

Each starts from a valid file and edits it at random keys (hostile JSON or YAML values, keys
deleted or added), or is hostile text from the start (not UTF-8, nested deeper than Python
recurses, numbers of 5000 digits).  The contract is :mod:`tests.unit.fuzz_strategies`'s;
what is accepted is used as the commands use it (rendered, compared, predicted with) and
must read back the same when written out again.
"""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from edgeprof.analysis.budgets import METRICS as BUDGETS
from edgeprof.analysis.budgets import load_budget_file
from edgeprof.analysis.calibration import calibrate, load_calibration, predict, read_measurements
from edgeprof.analysis.device_setting import device_setting, resolve_device
from edgeprof.analysis.devices import parse_catalog
from edgeprof.analysis.fit_compare import compare_fits
from edgeprof.analysis.metrics import Kind
from edgeprof.analysis.regression import compare_results
from edgeprof.errors import ConfigError
from edgeprof.model import CoreLease, LatencyStats, Limits, Mark, PhaseStats, RunResult
from edgeprof.report.calibration import render_calibration, render_predictions
from edgeprof.report.saved import rerender
from edgeprof.report.summary import print_summary
from edgeprof.resultfiles import load_fits, load_runs

from .conftest import make_result
from .fuzz_strategies import (
    Refused,
    accepted,
    fuzz,
    hostile,
    json_values,
    mixed,
    mostly,
    mutated,
)

BIG = {  # by name: Hypothesis prints the name of a failing one, not 200 kB of it
    "<deep list>": "[" * 5000 + "]" * 5000,  # deeper than Python recurses (1000)
    "<deep map>": "{a: " * 5000 + "1" + "}" * 5000,
    "<5000 digits>": "9" * 5000,  # past Python's int() of 4300 digits
    "<5000-digit list>": "[" + "9" * 5000 + "]",
    "<long csv field>": "model,runtime_ms\n" + "x" * 140_000 + ",1",  # past csv's 128 KiB
    "<5000-digit budget>": "default:\n  wall: " + "9" * 5000 + "\n",
    "<5000-digit cores>": "devices:\n  pi:\n    cores: " + "9" * 5000 + "\n    memory: 1g\n",
}
HOSTILE_FILES = st.one_of(
    st.sampled_from(
        [*BIG, "\0", "NaN", "", "[1, 2", "a: [", "{", "- - -", "!!python/name:os.system"]
    ),
    st.binary(max_size=40).map(lambda b: b.decode("latin-1")),
    hostile(),
)


def _write(path: Path, text: str) -> None:
    path.write_text(BIG.get(text, text), errors="surrogatepass")


def _json(value: Any) -> str:
    return json.dumps(value)


# -- result files (edgeprof report, edgeprof compare) ------------------------------------------


def _full_result() -> dict[str, Any]:
    """A result with every optional block filled in, as a dict."""
    lat = LatencyStats(3, 0.01, 0.01, 0.012, 0.013, 0.014, 0.02, 90.0, 0.005, 6, 180.0)
    phase = PhaseStats("load", 1, 0.0, 0.5, 0.4, 80.0, 2**20, "kernel", 2**19, latency=lat)
    r = make_result(
        phases=(phase,),
        latency=lat,
        marks=(Mark("ready", 0.5, 0.4, 2**20),),
        lease=CoreLease((0, 1), 0.0, True),
        device="rpi4-4gb",
    )
    return r.to_dict()


RESULT = _full_result()


def _stable(r: RunResult) -> str:
    return json.dumps(r.to_dict(), sort_keys=True)  # NaN equals itself here


@fuzz(300)
@given(mutated(RESULT))
def test_result_dicts(doc: Any) -> None:
    got = accepted(RunResult.from_dict, doc)
    if not isinstance(got, Refused):
        assert _stable(RunResult.from_dict(got.to_dict())) == _stable(got)
        print_summary([got], io.StringIO())  # what report prints of it: it has the types


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("command", "python3", "command: expected a list, got 'python3'"),
        ("wall_s", "fast", "wall_s: expected a number, got 'fast'"),
        ("limits", {"cpus": 1, "cpuset": [1.5], "memory_bytes": None}, "limits.cpuset[0]:"),
        ("termination", "crashed", "termination: expected one of exited, signaled"),
        ("marks", [{"name": 5, "t_s": 0, "cpu_s": None, "memory_bytes": None}], "marks[0].name"),
    ],
)
def test_a_result_of_wrong_types_is_refused_by_key(key: str, value: Any, message: str) -> None:
    """Not coerced: ``"python3"`` was read as the command ``p y t h o n 3``."""
    got = accepted(RunResult.from_dict, {**RESULT, key: value})
    assert isinstance(got, Refused) and message in got.message


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        (
            "phases",
            [{"name": "load"}],
            "phases[0]: missing keys 'count', 'start_s', 'wall_s', 'cpu_s', 'cpu_pct', "
            "'peak_bytes', 'peak_source', 'avg_bytes'",
        ),
        (
            "cpu",
            {k: v for k, v in RESULT["cpu"].items() if k != "user_s"},
            "cpu: missing key 'user_s'",
        ),
        ("marks", [{"name": "m"}], "marks[0]: missing key 't_s'"),
        (
            "memory",
            {**RESULT["memory"], "at_peak": {"total": 1, "anon": 1}},
            "memory.at_peak: missing keys 'file', 'shmem', 'kernel'",
        ),
    ],
)
def test_a_missing_key_is_named_where_it_is_missing(key: str, value: Any, message: str) -> None:
    """Measured before: a hand-edited phase gave ``malformed: PhaseStats.__init__() missing 8
    required positional arguments: …``, the constructor's words, not the file's."""
    with pytest.raises(ConfigError) as exc:
        RunResult.from_dict({**RESULT, key: value})
    assert str(exc.value) == message
    # A mark written before its CPU time and memory were recorded still reads.
    old = RunResult.from_dict({**RESULT, "marks": [{"name": "m", "t_s": 0.5}]})
    assert old.marks[0].cpu_s is None and old.marks[0].memory_bytes is None
    # So does a run's GPU record without its devices' list (read as none: a reviewer's).
    gpu = {"driver": None, "selection": None, "memory_peak_bytes": 1, "energy_j": None,
           "samples": 1, "interval_s": 0.1}
    assert RunResult.from_dict({**RESULT, "gpu": gpu}).gpu.devices == ()  # type: ignore[union-attr]


@fuzz(80)
@given(st.one_of(mutated(RESULT).map(_json), mutated([RESULT, RESULT]).map(_json), HOSTILE_FILES))
def test_result_files_report_and_compare(tmp_path: Path, text: str) -> None:
    path = tmp_path / "result.json"
    _write(path, text)
    try:
        _report_and_compare(tmp_path, path)
    finally:
        # The input is the test's own garbage, not a result edgeprof wrote: left in
        # tmp_path, the last example's was held to the schema at teardown (conftest's
        # results_match_the_schema), and a mutated file a new result key had drawn last
        # (a list where /host is an object) failed a unit tier the reader had passed.
        path.unlink(missing_ok=True)


def _report_and_compare(tmp_path: Path, path: Path) -> None:
    runs = accepted(load_runs, [path])
    if isinstance(runs, Refused):
        return
    out = io.StringIO()  # what report does with them, exports and a Markdown table included
    accepted(rerender, [path], out, io.StringIO(), out=tmp_path / "x", markdown=tmp_path / "m")
    accepted(compare_results, [RunResult.from_dict(RESULT)], runs, 0.05)


# -- fit.json (edgeprof compare of two fits) ---------------------------------------------------

FIT = {
    "name": "infer.py",
    "limits": "cpus=1",
    "min_memory_bytes": 300 * 2**20,
    "resolution_bytes": 4 * 2**20,
    "stopped": None,
    "probes": [],
}


@fuzz(150)
@given(st.one_of(mutated(FIT).map(_json), mutated({"fits": [FIT, FIT]}).map(_json)))
def test_fit_files(tmp_path: Path, text: str) -> None:
    path = tmp_path / "fit.json"
    path.write_text(text)
    docs = accepted(load_fits, path)
    if docs is None or isinstance(docs, Refused):
        return
    accepted(compare_fits, [FIT], docs)
    accepted(compare_fits, docs, docs)


# -- calibration files (calibrate, run --calibration, report --calibration) --------------------

MODELS = {"a.onnx": 1.0, "b.onnx": 2.0, "c.onnx": 3.5, "d.onnx": 4.0, "e.onnx": 6.0}


def _run(label: str, wall: float) -> RunResult:
    return make_result(name=label, wall_s=wall, limits=Limits(cpus=1.0), warnings=())


RUNS = [_run(m, w) for m, w in MODELS.items()]


@pytest.fixture(scope="module")
def calibration_doc(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    d = tmp_path_factory.mktemp("cal")
    csv = d / "device.csv"
    csv.write_text("model,cpus,runtime_ms,family\n" + "".join(
        f"{m.removesuffix('.onnx')},1,{w * 2100 + i},f\n" for i, (m, w) in enumerate(MODELS.items())
    ))  # fmt: skip
    cal = calibrate(RUNS, read_measurements(csv), "pi")
    cal.save(d / "cal.yml")
    doc: dict[str, Any] = yaml.safe_load((d / "cal.yml").read_text())
    return doc


@fuzz(100)
@given(data=st.data())
def test_calibration_files(tmp_path: Path, calibration_doc: dict[str, Any], data: Any) -> None:
    valid = mutated(calibration_doc).map(yaml.safe_dump)
    text = data.draw(st.one_of(valid, valid, HOSTILE_FILES))
    path = tmp_path / "cal.yml"
    _write(path, text)
    cal = accepted(load_calibration, path)
    if isinstance(cal, Refused):
        return
    render_calibration(cal)  # what calibrate prints, and run/report with --calibration
    render_predictions(predict(cal, RUNS), str(path))
    cal.save(tmp_path / "again.yml")
    assert _dumped(load_calibration(tmp_path / "again.yml")) == _dumped(cal)


def _dumped(cal: Any) -> str:
    return json.dumps(cal.to_dict(), sort_keys=True, default=str)


# -- the device CSV (calibrate) ----------------------------------------------------------------

CELLS = {
    "model": ["a", "b.onnx", "c", "d.onnx", "e"],
    "cpus": ["1", "2", "0.5", ""],
    "memory": ["1g", "512m", "6m", ""],
    "family": ["f", "", "g"],
    "notes": ["x", '"a,b"', "", '"'],
    "runtime_ms": ["1", "2.5", "0", "1e3", "", "1e308"],
    "peak_mem_mb": ["100", "0.5", ""],
    "avg_cpu_pct": ["80", "250", ""],
}


@st.composite
def device_csvs(draw: st.DrawFn) -> str:
    """A header of known columns (one of them sometimes hostile) and rows of plausible cells,
    each rarely hostile; a comment, a blank line or a lone quote sometimes among them."""
    others = [c for c in CELLS if c not in ("model", "runtime_ms")]
    extra = draw(st.lists(st.sampled_from(others), max_size=3, unique=True))
    header = ["model", *extra] if draw(st.integers(0, 5)) == 0 else ["model", "runtime_ms", *extra]
    if draw(st.integers(0, 4)) == 0:
        header.insert(draw(st.integers(0, len(header))), draw(mixed(st.just("runtime_s"))))
    rows = [
        [draw(mostly(st.sampled_from(CELLS.get(h, ["1"])), one_in=20)) for h in header]
        for _ in range(draw(st.integers(1, 5)))
    ]
    lines = [",".join(header), *(",".join(r) for r in rows)]
    if draw(st.integers(0, 3)) == 0:
        lines.insert(draw(st.integers(0, len(lines))), draw(st.sampled_from(["# c", "", "'"])))
    return "\n".join(lines)


@fuzz(200)
@given(st.one_of(device_csvs(), device_csvs(), device_csvs(), HOSTILE_FILES))
def test_device_csvs(tmp_path: Path, text: str) -> None:
    path = tmp_path / "device.csv"
    _write(path, text)
    got = accepted(read_measurements, path)
    if isinstance(got, Refused):
        return
    assert got.rows and all(
        v >= 0 and v < float("inf") for r in got.rows for v in r.values.values()
    )
    accepted(calibrate, RUNS, got, "pi")  # what calibrate does with it


# -- budget files (run --budgets) --------------------------------------------------------------

BUDGET_FILE = {"default": {"wall": "10s"}, "models": {"m.onnx": {"peak_memory": "512m"}}}
BUDGET_VALUES = st.one_of(
    mostly(st.sampled_from(["10s", "250ms", "2m", "512m", "1.5g", "0.5", "1"])),
    st.sampled_from([3, 2.5, 0, -1, True, None, [1], 10**30, float("nan")]),
)
BUDGET_ENTRY = st.dictionaries(mostly(st.sampled_from(list(BUDGETS))), BUDGET_VALUES)


@fuzz(200)
@given(
    st.one_of(
        st.fixed_dictionaries(
            {},
            optional={
                "default": st.dictionaries(st.sampled_from(list(BUDGETS)), BUDGET_VALUES),
                "models": st.dictionaries(
                    mostly(st.sampled_from(["m.onnx", "m\n.onnx", "m\r"])),
                    st.one_of(*[BUDGET_ENTRY] * 3, BUDGET_VALUES),  # an entry not a mapping
                    max_size=2,
                ),
            },
        ).map(yaml.safe_dump),
        mutated(BUDGET_FILE).map(yaml.safe_dump),
        json_values().map(yaml.safe_dump),
        HOSTILE_FILES,
    )
)
def test_budget_files(tmp_path: Path, text: str) -> None:
    path = tmp_path / "budgets.yml"
    _write(path, text)
    got = accepted(load_budget_file, path)
    if isinstance(got, Refused):
        return

    def spelled(key: str, v: float) -> str:  # the file's own spellings, in base units
        if BUDGETS[key].kind is Kind.MEMORY:
            return f"{int(v)}b"
        # An iteration's time must carry its unit (a bare 20 had been 20 s for a 20 ms
        # deadline); a run's time may be bare seconds.
        return f"{v!r}s" if BUDGETS[key].iteration_time else repr(v)

    back = {
        "default": {k: spelled(k, v) for k, v in got.default.items()},
        "models": {m: {k: spelled(k, v) for k, v in b.items()} for m, b in got.models.items()},
    }
    path.write_text(yaml.safe_dump({k: v for k, v in back.items() if v}))
    again = load_budget_file(path)
    assert (again.default, again.models) == (got.default, got.models)


@pytest.mark.parametrize("name", ["m\n.onnx", "m\r", "m\u2028"])
def test_a_model_name_with_a_line_break_is_quoted(tmp_path: Path, name: str) -> None:
    path = tmp_path / "budgets.yml"
    path.write_text(yaml.safe_dump({"models": {name: 5}}))
    got = accepted(load_budget_file, path)
    assert isinstance(got, Refused) and f"models: {name!r} must be a mapping" in got.message


# -- device catalogs (--device, --devices, edgeprof devices) -----------------------------------

DEVICE = {"cores": 4, "memory": "4g", "speed": 0.35, "cpu_period": "2ms", "description": "a board"}
HOST = make_result().host


@fuzz(200)
@given(
    st.one_of(
        mutated({"devices": {"pi": DEVICE, "other": {"cores": 2, "memory": 2**31}}}).map(
            yaml.safe_dump
        ),
        st.dictionaries(mostly(st.just("pi")), mutated(DEVICE), max_size=2).map(
            lambda d: yaml.safe_dump({"devices": d})
        ),
        HOSTILE_FILES,
    )
)
def test_device_catalogs(tmp_path: Path, text: str) -> None:
    path = tmp_path / "devices.yml"
    _write(path, text)
    got = accepted(parse_catalog, path)
    if isinstance(got, Refused):
        return
    for dev in got.values():
        accepted(device_setting, dev, HOST)  # the limits it gives (a calibration file may lack)
        entry: dict[str, Any] = {"cores": dev.cores, "memory": f"{dev.memory}b"}
        entry |= {k: v for k in ("share", "speed") if (v := getattr(dev, k)) is not None}
        if dev.cpu_period_us is not None:
            entry["cpu_period"] = f"{dev.cpu_period_us}us"
        if dev.calibration is not None:
            entry["calibration"] = str(dev.calibration.relative_to(path.parent))
        entry |= {k: v for k in ("description", "source") if (v := getattr(dev, k)) is not None}
        path.write_text(yaml.safe_dump({"devices": {dev.name: entry}}))
        (again,) = parse_catalog(path).values()
        assert again == dataclasses.replace(dev, catalog=path)


@fuzz(150)
@given(mostly(st.sampled_from(["rpi4-4gb", "jetson-nano", "pi", "RPI4-4GB", "../x"])))
def test_device_names(name: str) -> None:
    """``--device NAME``: an entry of the merged catalogs, or one line listing them."""
    got = accepted(resolve_device, name, None, HOST, environ={})
    if not isinstance(got, Refused):
        assert got.device.name == name and got.memory == got.device.memory


TWICE = [
    ("budgets.yml", "default:\n  wall: 1s\n  wall: 10s\n", ":3: default: the key 'wall'"),
    ("budgets.yml", "models:\n  a: {wall: 1s}\n  a: {wall: 9s}\n", ":3: models: the key 'a'"),
    ("devices.yml", "devices:\n  b: {cores: 1, memory: 1g}\n  b: {cores: 2, memory: 1g}\n",
     "devices.yml:3: the key 'b'"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "text", "line"), TWICE)
def test_a_key_given_twice_in_a_yaml_file_is_refused(
    tmp_path: Path, name: str, text: str, line: str
) -> None:
    """PyYAML keeps the last of a key given twice in silence: a budget of 1 s then 10 s gated
    on 10 s. Refused by name and line."""
    from edgeprof.analysis.budgets import load_budget_file
    from edgeprof.analysis.devices import parse_catalog
    from edgeprof.errors import ConfigError

    path = tmp_path / name
    path.write_text(text)
    load = load_budget_file if name == "budgets.yml" else parse_catalog
    with pytest.raises(ConfigError) as info:
        load(path)
    assert line + " is given twice" in str(info.value) and "\n" not in str(info.value)


def _yaml_readers() -> dict[str, Any]:
    from edgeprof.analysis.budgets import load_budget_file
    from edgeprof.analysis.calibration import load_calibration
    from edgeprof.analysis.devices import parse_catalog
    from edgeprof.layers.results import load as load_layers

    return {"budgets": load_budget_file, "catalog": parse_catalog,
            "calibration": load_calibration, "layers": load_layers}  # fmt: skip


@pytest.mark.parametrize(
    ("reader", "said", "within"),
    [
        ("budgets", "{p}", "the budget file: "),
        ("catalog", "device catalog {p}", ""),
        ("calibration", "calibration {p}", ""),
        ("layers", "{p}", ""),
    ],
)
def test_every_yaml_file_says_a_fault_as_file_line_problem(
    tmp_path: Path, reader: str, said: str, within: str
) -> None:
    """The catalog and calibration printed PyYAML's text (``not YAML: the key 'b1' is given
    twice in "<unicode string>", line 5, column 3: b1: ^``); the budget file said
    ``bud2.yml:3: ...`` (a tester's).  Every reader says it the budget file's way now."""
    from edgeprof.errors import ConfigError

    p = tmp_path / "f.yml"
    load = _yaml_readers()[reader]
    for text, fault in (
        ("a:\n  b: [1\n", ":3: expected ',' or ']', but got '<stream end>'"),
        ("a: 1\nb: 2\na: 3\n", f":3: {within}the key 'a' is given twice"),
    ):
        p.write_text(text)
        with pytest.raises(ConfigError) as info:
            load(p)
        assert str(info.value) == said.format(p=p) + fault
