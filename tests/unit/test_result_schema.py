"""The published schema of result.json (``edgeprof/result.schema.json``): made from the model,
and in agreement with the reader (``RunResult.from_dict``) on every document the fuzzer
makes from a full result.  That every result the suite writes holds to it is the autouse
``results_match_the_schema`` check of ``tests/conftest.py``."""

from __future__ import annotations

import json
import math
from typing import Any

import jsonschema
import pytest
from hypothesis import given

from edgeprof.errors import ConfigError
from edgeprof.model import RunResult
from edgeprof.model.gpu import GpuDevice, GpuStats
from edgeprof.model.schema import result_schema
from tests.conftest import RESULT_SCHEMA
from tests.unit.conftest import make_result

from .fuzz_strategies import Refused, accepted, fuzz, mutated
from .test_fuzz_files import RESULT

VALIDATOR = jsonschema.Draft202012Validator(result_schema(exact=True))
"""The exact schema, which every file edgeprof writes holds to (``tests/conftest.py``)."""
PUBLISHED = jsonschema.Draft202012Validator(json.loads(RESULT_SCHEMA.read_text()))


def test_the_published_schema_is_the_models() -> None:
    published = json.loads(RESULT_SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(published)
    assert published == result_schema(), (
        "edgeprof/result.schema.json is out of date: "
        ".venv/bin/python -m edgeprof.model.schema > edgeprof/result.schema.json"
    )
    # Descriptions come from the fields' docstrings, as the docs show them.
    cpu = published["$defs"]["CpuStats"]["properties"]["avg_pct"]["description"]
    assert cpu.startswith("100·total CPU time / wall time")


def test_every_cpu_time_says_when_it_is_null() -> None:
    """A test author's ``r.cpu.total_s < 2.0`` failed mypy (``float | None``) with nothing
    saying when it is ``None``: each CPU time's description says it now."""
    cpu = json.loads(RESULT_SCHEMA.read_text())["$defs"]["CpuStats"]["properties"]
    for key in ("user_s", "system_s", "total_s"):
        assert "`null`" in cpu[key].get("description", ""), key
    assert "a custom backend that gives no `cpu_usage_us`" in cpu["total_s"]["description"]


def test_the_published_schema_takes_a_newer_releases_keys_and_names_its_version() -> None:
    """The integrator's file: one key added at the top and one under ``memory`` (a release of
    schema_version 1 after this one) had been refused by the shipped schema ("Additional
    properties are not allowed ('new_key_from_0_2' was unexpected)"), while the docs and the
    reader took it.  The exact schema still refuses it: edgeprof writes no undocumented key."""
    newer = {**RESULT, "new_key_from_0_2": 1, "memory": {**RESULT["memory"], "new_sub": "x"}}
    assert not list(PUBLISHED.iter_errors(newer))
    assert RunResult.from_dict(newer).memory.peak_bytes == RESULT["memory"]["peak_bytes"]
    assert sorted(e.message for e in VALIDATOR.iter_errors(newer)) == [
        "Additional properties are not allowed ('new_key_from_0_2' was unexpected)",
        "Additional properties are not allowed ('new_sub' was unexpected)",
    ]
    # Keys it names are held to their types all the same.
    assert list(PUBLISHED.iter_errors({**newer, "wall_s": "fast"}))
    published = json.loads(RESULT_SCHEMA.read_text())
    assert published["$id"] == "https://edgeprof.invalid/result/1/schema.json"
    assert published["$comment"].startswith("Keys not named here are allowed")
    assert "additionalProperties" not in json.dumps(published).replace(
        '"additionalProperties": {', ""
    )


def test_a_full_result_holds_to_it_and_a_wrong_one_does_not() -> None:
    assert not list(VALIDATOR.iter_errors(RESULT))
    for key, value in (("wall_s", "fast"), ("termination", "crashed"), ("extra", 1)):
        assert list(VALIDATOR.iter_errors({**RESULT, key: value})), key
    phase = {**RESULT["phases"][0], "latency": {**RESULT["latency"], "p50_s": None}}
    assert list(VALIDATOR.iter_errors({**RESULT, "phases": [phase]}))
    missing = {k: v for k, v in RESULT.items() if k != "memory"}
    assert list(VALIDATOR.iter_errors(missing))


@fuzz(300)
@given(mutated(RESULT))
def test_the_schema_and_the_reader_agree(doc: Any) -> None:
    """What the schema allows, edgeprof reads; and what edgeprof reads, it writes back
    within the schema."""
    valid = not list(VALIDATOR.iter_errors(doc))
    got = accepted(RunResult.from_dict, doc)
    # Two differences, documented in the schema: a whole number beyond 64 bits where a
    # number is expected, which the reader refuses and a JSON Schema cannot single out (its
    # "integer" is any number without a fraction); and a quota under 1 ms per period.
    if valid and not _huge_int(doc) and not _quota_under_1ms(doc) and not _not_json(doc):
        # The same "integer" difference the other way: JSON Schema's takes 0.0, the reader
        # wants a whole number written as one.
        whole_float = isinstance(got, Refused) and "expected a whole number, got" in got.message
        assert whole_float or not isinstance(got, Refused), got.message
    if not isinstance(got, Refused):
        assert not list(VALIDATOR.iter_errors(got.to_dict()))


def _not_json(value: Any) -> bool:
    """NaN or an infinity anywhere: not JSON (RFC 8259 has no such number), which Python's
    ``json`` reads and writes and a JSON Schema cannot speak of (NaN compares false with any
    ``minimum``: ``limits.cpus: nan`` met the schema); edgeprof's reader refuses them."""
    if isinstance(value, dict):
        return any(map(_not_json, value.values()))
    if isinstance(value, list):
        return any(map(_not_json, value))
    return isinstance(value, float) and not math.isfinite(value)


def _huge_int(value: Any) -> bool:
    if isinstance(value, dict):
        return any(map(_huge_int, value.values()))
    if isinstance(value, list):
        return any(map(_huge_int, value))
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 2**64


def _quota_under_1ms(doc: Any) -> bool:
    lim = doc.get("limits") if isinstance(doc, dict) else None
    if not isinstance(lim, dict):
        return False
    cpus, period = lim.get("cpus"), lim.get("cpu_period_us")
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (cpus, period))
    return numbers and cpus * period < 1000  # type: ignore[operator]


def test_negative_sizes_and_times_and_a_name_with_a_newline_are_refused_by_both() -> None:
    """Hand-edited values the reader had taken: "PEAK MEM -5B", a table broken by a name's
    newline.  Each is one line naming the key, and the schema refuses it too."""
    cases = [
        ({**RESULT, "wall_s": -1.0}, "wall_s: expected a number of 0 or more, got -1.0"),
        (
            {**RESULT, "memory": {**RESULT["memory"], "peak_bytes": -5}},
            "memory.peak_bytes: expected a number of 0 or more, got -5",
        ),
        (
            {**RESULT, "io": {**RESULT["io"], "read_bytes": -1}},
            "io.read_bytes: expected a number of 0 or more, got -1",
        ),
        ({**RESULT, "name": "a\nb"}, r"name: expected no control characters, got 'a\nb'"),
    ]
    for doc, message in cases:
        with pytest.raises(ConfigError) as exc:
            RunResult.from_dict(doc)
        assert str(exc.value) == message
        assert list(VALIDATOR.iter_errors(doc)), message
    zero = {**RESULT, "wall_s": 0.0, "memory": {**RESULT["memory"], "peak_bytes": 0}}
    assert RunResult.from_dict(zero).memory.peak_bytes == 0  # 0 is a value, not an error


def test_a_string_that_ends_in_a_newline_breaks_the_schema_as_it_does_the_reader() -> None:
    # Python's re.search (jsonschema's) let "$" match before a final newline.
    for text in ("\n", "0.1.0\n"):
        assert list(VALIDATOR.iter_errors({**RESULT, "edgeprof_version": text})), repr(text)
    assert not list(VALIDATOR.iter_errors({**RESULT, "edgeprof_version": "0.1.0"}))


def test_a_gpu_source_is_one_of_its_two_words_for_the_reader_and_the_schema() -> None:
    """``memory_source`` and ``utilization_source`` had been any string: ``"bogus"`` loaded."""
    device = GpuDevice(
        index=0, uuid="GPU-a", name="H100", memory_total_bytes=None, memory_peak_bytes=1,
        memory_source="processes", utilization_avg_pct=None, utilization_peak_pct=None,
        utilization_source=None, memory_utilization_avg_pct=None, energy_j=None,
        power_avg_w=None, power_peak_w=None, sm_clock_min_mhz=None, sm_clock_max_mhz=None,
        memory_clock_max_mhz=None, temperature_peak_c=None,
    )  # fmt: skip
    gpu = GpuStats(driver=None, selection=None, devices=(device,), memory_peak_bytes=1,
                   energy_j=None, samples=1, interval_s=0.1)  # fmt: skip
    doc = json.loads(json.dumps(make_result(gpu=gpu).to_dict()))
    dev = doc["gpu"]["devices"][0]
    for key, value in (("memory_source", "device"), ("utilization_source", "device")):
        dev[key] = value
        back = RunResult.from_dict(doc).gpu
        assert back is not None and getattr(back.devices[0], key) == "device"
        assert not list(VALIDATOR.iter_errors(doc))
    for key in ("memory_source", "utilization_source"):
        dev[key] = "bogus"
        with pytest.raises(ConfigError) as exc:
            RunResult.from_dict(doc)
        expected = f"gpu.devices[0].{key}: expected one of processes, device, got 'bogus'"
        assert str(exc.value) == expected
        assert list(VALIDATOR.iter_errors(doc))
        dev[key] = "processes"


def test_descriptions_say_nullability_as_json_does() -> None:
    """The model's docstrings say ``None``; the schema's reader reads JSON, whose word is
    ``null`` (result.schema.json had said `None` 43 times, fit.schema.json once)."""
    published = RESULT_SCHEMA.read_text()
    fit = RESULT_SCHEMA.with_name("fit.schema.json").read_text()
    for word in ("`None`", "`True`", "`False`"):
        assert word not in published and word not in fit, word
    schema = json.loads(published)
    assert schema["properties"]["device"]["description"] == (
        "The catalog device the limits came from (`--device`; `null`: none, older files)."
    )
    virtual = schema["$defs"]["HostInfo"]["properties"]["virtual"]["description"]
    assert "`false`: x86 flags without it" in virtual


def _numbers(node: Any, at: str = "") -> dict[str, dict[str, Any]]:
    """Every number's schema of ``node`` by its path (``$defs.CpuStats.throttled_s``)."""
    out: dict[str, dict[str, Any]] = {}
    if isinstance(node, dict):
        kinds = node.get("type")
        if {"integer", "number"} & set(kinds if isinstance(kinds, list) else [kinds]):
            out[at] = node
        for k, v in node.items():
            if k != "properties":
                out |= _numbers(v, f"{at}.{k}" if at else k)
        for k, v in node.get("properties", {}).items():
            out |= _numbers(v, f"{at}.{k}" if at else k)
    return out


def test_every_number_of_a_result_is_0_or_more_but_a_temperature_and_an_exit_status() -> None:
    """A contributor's hand-edited ``throttled_s: -3``, ``nr_throttled: -7`` met the schema,
    as did about 45 other counts and sizes: only 7 names and the sizes had a bound.  Now
    every number has one (0, or the limits' own above it) but ``temperature_peak_c`` and
    ``exit_code`` (Docker's wait answers -1 where the daemon has no status)."""
    numbers = _numbers(json.loads(RESULT_SCHEMA.read_text()))
    assert len(numbers) > 100  # the walk reached every block (142 numbers today)
    unbounded = sorted(k for k, n in numbers.items() if n.get("minimum", -1) < 0)
    assert unbounded == ["$defs.GpuDevice.temperature_peak_c", "exit_code"]
    signed = {**RESULT, "termination": "exited", "exit_code": -1}
    assert RunResult.from_dict(signed).exit_code == -1  # what the Docker backend may write
    assert not list(VALIDATOR.iter_errors(signed))


def test_negative_throttling_counts_and_a_negative_core_are_refused_by_both() -> None:
    """The contributor's file had been read and shown as ``-3000.0ms ×-7``, and its runs.csv
    said other tasks held a 0.535 s run off its CPUs for 3.17 s."""
    cpu = RESULT["cpu"]
    cases = [
        ({**RESULT, "cpu": {**cpu, "throttled_s": -3.0}}, "cpu.throttled_s", "-3.0"),
        ({**RESULT, "cpu": {**cpu, "nr_throttled": -7}}, "cpu.nr_throttled", "-7"),
        ({**RESULT, "cpu": {**cpu, "nr_periods": -1}}, "cpu.nr_periods", "-1"),
        ({**RESULT, "lease": {**RESULT["lease"], "cores": [0, -1]}}, "lease.cores[1]", "-1"),
    ]
    for doc, key, got in cases:
        with pytest.raises(ConfigError) as exc:
            RunResult.from_dict(doc)
        assert str(exc.value) == f"{key}: expected a number of 0 or more, got {got}"
        assert list(VALIDATOR.iter_errors(doc)), key
    zero = {**RESULT, "cpu": {**cpu, "throttled_s": 0.0, "nr_throttled": 0, "nr_periods": 0}}
    assert RunResult.from_dict(zero).cpu.nr_periods == 0


def test_report_refuses_such_a_file_in_one_line(
    tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    from edgeprof.cli import main

    # Not tmp_path: the suite holds every file left there to the schema, which this breaks.
    tmp_path = tmp_path_factory.mktemp("negative")
    doc = json.loads(json.dumps(make_result().to_dict()))
    doc["cpu"] |= {"throttled_s": -3.0, "nr_throttled": -7}
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "result.json").write_text(json.dumps(doc))
    assert main(["report", str(tmp_path / "b")]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    why = (
        f"{tmp_path}/b/result.json is not an edgeprof result: "
        "cpu.throttled_s: expected a number of 0 or more, got -3.0"
    )
    assert err == f"edgeprof: error: {why}\n"
    # Found below the directory given: skipped, with the same line, and none left to report.
    assert main(["report", str(tmp_path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        f"edgeprof: skipped: {why}\nedgeprof: error: no run to report in {tmp_path}: none of "
        "the 1 result file(s) found could be read (each skipped above, with why)\n"
    )
