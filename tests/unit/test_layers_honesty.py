"""``edgeprof layers``: device types that mix profiles, layer times under a fractional CPU
share, failures that are bad input rather than the model's, and files of another kind."""

from __future__ import annotations

import dataclasses
import importlib.util
import io
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from edgeprof.cli import main
from edgeprof.errors import ConfigError
from edgeprof.layers import results
from edgeprof.layers.request import check_torch
from edgeprof.layers.run import _collect
from edgeprof.model import CpuStats, LatencyStats, Limits, PhaseStats, Throttling
from edgeprof.report import layers_export as export
from tests.conftest import require
from tests.unit.conftest import make_result
from tests.unit.test_layers import MODEL, finished_run, layer_record, request

# -- 1. one device type holds timings of one device and one split per model --------------------


def test_device_types_refuse_other_limits_and_another_split(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "dt3.yml"
    first = finished_run(request(), Limits(cpus=1, memory="1g"), range(1, 4))
    export.export_device_types(first, out, "mydev", bw_mbps=100)
    saved = yaml.safe_load(out.read_text())["mydev"]
    assert saved["mem_MB"] == 1073
    assert saved["edgeprof"] == {
        "limits": "cpus=1, memory=1.0GiB",
        "models": {"m:build": {"layers": 3, "granularity": "children"}},
    }
    before = out.read_text()
    # Another dtype under half a CPU and no memory limit: another device.
    half = finished_run(request(dtype="bfloat16"), Limits(cpus=0.5), range(1, 4))
    with pytest.raises(ConfigError) as info:
        export.export_device_types(half, out, "mydev")
    assert str(info.value) == (
        f"{out}: device type 'mydev' was profiled under limits cpus=1, memory=1.0GiB, not "
        "cpus=0.5: times of one device type must come from one device"
    )
    # The same limits, another dtype, but split in 4 blocks rather than 3 children.
    blocks = dataclasses.replace(
        finished_run(
            request(dtype="bfloat16", granularity="blocks"),
            Limits(cpus=1, memory="1g"),
            range(1, 4),
        ),
        layers=4,
    )
    blocks = results.from_dict(
        {
            **blocks.to_dict(),
            "profile_data": [
                *blocks.to_dict()["profile_data"],
                {**blocks.to_dict()["profile_data"][0], "layer": 4},
            ],
        },
        "b.yml",
    )
    with pytest.raises(ConfigError) as info:
        export.export_device_types(blocks, out, "mydev")
    assert str(info.value) == (
        f"{out}: device type 'mydev' holds 'm:build' in 3 layers (granularity children), not 4 "
        "(granularity blocks): one model's timings on one device type must split it alike"
    )
    assert out.read_text() == before
    # The CLI: one line, exit 2, the file unchanged.
    src = tmp_path / "cnn_bf16.yml"
    results.save(src, half)
    rc = main(["layers", "export", "device-types", "mydev", "-i", str(src), "-o", str(out)])
    captured = capsys.readouterr()
    assert rc == 2 and captured.out == ""
    errors = [line for line in captured.err.splitlines() if "error" in line]
    assert errors == [
        f"edgeprof: error: {out}: device type 'mydev' was profiled under limits cpus=1, "
        "memory=1.0GiB, not cpus=0.5: times of one device type must come from one device"
    ]
    assert out.read_text() == before
    # A second dtype from the same device and split is a profile more, as before.
    same = finished_run(request(dtype="bfloat16"), Limits(cpus=1, memory="1g"), range(1, 4))
    export.export_device_types(same, out, "mydev")
    profiles = yaml.safe_load(out.read_text())["mydev"]["model_profiles"]["m:build"]
    assert [(p["dtype"], len(p["time_s"])) for p in profiles] == [
        ("torch.float32", 3),
        ("torch.bfloat16", 3),
    ]


def test_a_device_type_without_a_record_is_checked_by_its_profiles_lengths(
    tmp_path: Path,
) -> None:
    """A file written before the record (or by PipeEdge): the layer count is its time_s's."""
    out = tmp_path / "device_types.yml"
    out.write_text(
        yaml.safe_dump(
            {
                "old": {
                    "mem_MB": 1,
                    "bw_Mbps": 1,
                    "model_profiles": {
                        "m:build": [
                            {"batch_size": 1, "dtype": "torch.float32", "time_s": [0.1, 0.2]}
                        ]
                    },
                }
            }
        )
    )
    r = finished_run(request(), Limits(cpus=1), range(1, 4))
    with pytest.raises(ConfigError, match="holds 'm:build' in 2 layers, not 3 "):
        export.export_device_types(r, out, "old")


# -- 2. layer times shorter than the quota's period ---------------------------------------------


def _phase(layer: int, throttling: Throttling | None) -> PhaseStats:
    lat = LatencyStats(
        10, 0.0008, 0.00025, 0.0028, 0.0029, 0.003, 0.003, None, throttling=throttling
    )
    return PhaseStats(
        f"layer:{layer}", 1, 1.0, 0.01, 0.005, 50.0, None, "kernel", None, latency=lat
    )


def test_layers_whose_median_measures_full_speed_between_stalls_are_named() -> None:
    """Layer 1's median 0.25 ms at cpus=0.5 (the stem's 0.27 ms at 1 CPU, 0.39 ms at 0.5):
    the runner's check finds its p50 measures the stalls (0.50 ms spread evenly); layer 2,
    longer than the 5 ms period, took its stalls evenly (not flagged); layer 3 is shorter than
    the period, 8 of its 10 iterations stalled, 0.75 ms each."""
    limits = Limits(cpus=0.5, cpuset="0")
    stalled = Throttling(9, 2, 0.0051, 0.0026, 0.0005, 0.0007, 0.0009, ("p50", "p90"))
    even = Throttling(9, 9, 0.002, 0.0003, 0.0021, 0.0022, 0.0023, ())
    # Many stalls, each short: "few of its iterations, or none" had been said beside them.
    short = Throttling(10, 8, 0.006, 0.0003, 0.0021, 0.0022, 0.0023, ())
    base = make_result(limits=limits)
    result = dataclasses.replace(
        base,
        cpu=dataclasses.replace(base.cpu, period_s=0.005),
        phases=(_phase(1, stalled), _phase(2, even), _phase(3, short)),
        warnings=(
            "phase 'layer:1': latency p50, p90 measure the CPU quota's stalls, not the workload",
            # The run's iterations are every layer's pooled: a tester's conv and Flatten.
            "latency p50, p95, p99 measure the CPU quota's stalls, not the workload: 7 of the "
            "56 iterations whose stall was read (of 90) were throttled",
            "kept",
        ),
    )
    times = [0.00025] * 8 + [0.0028, 0.0030]
    records = [
        MODEL,
        layer_record(1, times, name="stem"),
        layer_record(2, [0.006] * 10),
        layer_record(3, [0.001] * 10),
        {"kind": "done", "profile_s": 0.5},
    ]
    run = _collect(result, request(), limits, records)
    stall_warnings = [w for w in run.warnings if "at full speed" in w]
    assert stall_warnings == [
        "under cpus=0.5 (CFS period 5ms) the median time of layer(s) 1, 3 measures the layer at "
        "full speed, not on a core 0.5× as fast: a layer shorter than the period runs inside "
        "the quota, and its median does not take the stalls' even share (layer 1 (stem) "
        "0.25ms, 0.50ms with its stalls spread evenly; layer 3 (l3) 1.00ms, 8 of 10 "
        "iterations stalled, 0.75ms of stall each); a larger --batch-size lengthens each "
        "iteration, and each layer's quota_stalls in the file says how the stalls fell"
    ]
    # The runner's per-phase warning for a phase the user never named is said once, above.
    assert run.result.warnings == ("kept",)
    saved = run.to_results()
    assert saved.profile_data[0].extra["quota_stalls"] == {
        "iterations": 9,
        "throttled": 2,
        "stall_s": 0.0051,
        "even_median_s": 0.0005,
        "distorted": ["p50", "p90"],
    }
    assert saved.profile_data[0].time == 0.00025  # the median as measured: the warning says
    assert saved.profile_data[1].extra["quota_stalls"]["distorted"] == []
    assert saved.profile_data[2].extra["quota_stalls"]["throttled"] == 8
    run_info = (saved.meta or {})["runs"][0]
    assert run_info["cpu_period_s"] == 0.005
    assert stall_warnings[0] in run_info["warnings"]
    assert "quota_stalls" in results.UNITS


def test_no_stall_warning_where_the_quota_cannot_stall() -> None:
    limits = Limits(cpus=1, cpuset="0")  # a whole core pinned: never throttled
    base = make_result(limits=limits)
    result = dataclasses.replace(
        base, cpu=CpuStats(**{**dataclasses.asdict(base.cpu), "period_s": 0.1})
    )
    records = [MODEL, *(layer_record(i, [0.0003] * 3) for i in (1, 2, 3))]
    run = _collect(result, request(), limits, [*records, {"kind": "done", "profile_s": 0.1}])
    assert not any("at full speed" in w for w in run.warnings)


@pytest.fixture
def worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    require(importlib.util.find_spec("torch") is not None, "needs torch (the CPU wheel)")
    from edgeprof.workload import layers as worker_mod

    (tmp_path / "chainmodels.py").write_text(
        "from torch import nn\n\n\ndef chain():\n"
        "    return nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 4))\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    monkeypatch.delitem(sys.modules, "chainmodels", raising=False)
    return worker_mod


def _spec(**kw: Any) -> dict[str, Any]:
    return {
        "factory": "chainmodels:chain",
        "input_shapes": [[8]],
        "batch_size": 2,
        "dtype": "float32",
        "iterations": 3,
        "warmup": 0,
        "granularity": "children",
        "layer_start": 1,
        "layer_end": None,
        **kw,
    }


def test_the_worker_reports_each_timed_iteration_in_its_layers_phase(
    worker: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under a quota the worker sends ``edgeprof run``'s events: one ``layer:N`` phase per
    layer, holding its timed iterations (3 each here), nothing else."""
    r, w = os.pipe()
    monkeypatch.setenv("EDGEPROF_EVENTS_FD", str(w))
    monkeypatch.setenv("EDGEPROF_EVENTS_INODE", str(os.fstat(w).st_ino))
    monkeypatch.setattr(worker.instrument, "_channel", worker.instrument._Channel())
    out = io.StringIO()
    worker.profile(_spec(report_iterations=True), out)
    os.close(w)
    with os.fdopen(r) as f:
        # Not the ``waited`` notes of writes the scheduler held up (a loaded host's), nor the
        # client's timing of its own cost.
        own = ("waited ", "probe ", "cost ")
        sent = [ln for ln in f.read().splitlines() if not ln.startswith(own)]
        lines = [line.split()[:2] for line in sent]
    kinds = [x[0] if x[0] == "iter" else " ".join(x) for x in lines]
    assert kinds == [
        *("begin layer:1", "iter", "iter", "iter", "end layer:1"),
        *("begin layer:2", "iter", "iter", "iter", "end layer:2"),
        *("begin layer:3", "iter", "iter", "iter", "end layer:3"),
    ]
    # Without a quota, nothing is sent.
    r2, w2 = os.pipe()
    monkeypatch.setenv("EDGEPROF_EVENTS_FD", str(w2))
    monkeypatch.setenv("EDGEPROF_EVENTS_INODE", str(os.fstat(w2).st_ino))
    monkeypatch.setattr(worker.instrument, "_channel", worker.instrument._Channel())
    worker.profile(_spec(report_iterations=False), io.StringIO())
    os.close(w2)
    with os.fdopen(r2) as f:
        assert f.read() == ""


# -- 3. bad input is not the model's failure ---------------------------------------------------


def test_a_layer_range_past_the_last_layer_is_bad_input(worker: Any, tmp_path: Path) -> None:
    spec_path, out = tmp_path / "spec.json", tmp_path / "out.jsonl"
    spec_path.write_text(json.dumps(_spec(layer_end=9, out=str(out))))
    assert worker.main(["layers.py", str(spec_path)]) == 2
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert records[-1] == {
        "kind": "error",
        "message": "layer range 1-9 is outside the model's layers 1-3",
        "layer": None,
        "input": True,
    }
    run = _collect(make_result(exit_code=2), request(), Limits(), records)
    assert run.bad_input and not run.ok
    assert run.failure(Path("p.yml")) == (
        "layer range 1-9 is outside the model's layers 1-3; nothing written to p.yml"
    )


def test_the_cli_says_bad_input_in_one_line_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    records: list[dict[str, Any]] = [
        MODEL,
        {
            "kind": "error",
            "message": "layer range 1-9 is outside the model's layers 1-3",
            "layer": None,
            "input": True,
        },
    ]

    def fake_run(req: Any, limits: Any, **kw: Any) -> Any:
        return _collect(make_result(exit_code=2), req, limits, records)

    monkeypatch.setattr("edgeprof.layers.run.run_layers", fake_run)
    out = tmp_path / "p.yml"
    rc = main(["layers", "m:build", "--input-shape", "8", "-L", "9", "-o", str(out)])
    captured = capsys.readouterr()
    assert rc == 2 and captured.out == ""
    assert captured.err == (
        f"edgeprof: error: layer range 1-9 is outside the model's layers 1-3; nothing written "
        f"to {out}\n"
    )
    assert not out.exists()


def test_an_interpreter_without_torch_is_refused_before_the_run(tmp_path: Path) -> None:
    no_site = tmp_path / "python-no-site"
    no_site.write_text(f'#!/bin/sh\nexec {sys.executable} -S -I "$@"\n')
    no_site.chmod(0o755)
    with pytest.raises(ConfigError) as info:
        check_torch(str(no_site))
    assert str(info.value) == (
        f"--python {no_site}: PyTorch is not installed for it: pip install torch"
    )
    with pytest.raises(ConfigError, match=r"^--python /nonexistent/python: cannot run it: No "):
        check_torch("/nonexistent/python")


# -- 4. a file of another kind says what it is ---------------------------------------------------


def _models_file() -> dict[str, Any]:
    return {
        "m:build": {
            "layers": 3,
            "mem_MB": [0.1] * 3,
            "parameters_in": 8,
            "parameters_out": [8, 8, 4],
        }
    }


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (_models_file(), "a models file (`edgeprof layers export models` writes it)"),
        (
            {"dev": {"mem_MB": 1, "bw_Mbps": 1, "model_profiles": {}}},
            "a device types file (`edgeprof layers export device-types` writes it)",
        ),
        (make_result().to_dict(), "a run's result (result.json)"),
        ({"schema": "edgeprof-sweep/1", "runs": [], "cells": []}, "a sweep's results (sweep.json)"),
    ],
)
def test_a_file_of_another_kind_says_what_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], data: dict[str, Any], kind: str
) -> None:
    path = tmp_path / "x.json"
    path.write_text(json.dumps(data))
    before = path.read_text()
    expected = (
        f"edgeprof: error: {path} is {kind}, not a per-layer profile: expected the "
        "profiler_results.yml that `edgeprof layers MODULE:FACTORY -o FILE` writes\n"
    )
    assert main(["layers", "export", "models", "-i", str(path), "-o", str(tmp_path / "m")]) == 2
    assert capsys.readouterr().err == expected
    rc = main(["layers", "m:build", "--input-shape", "8", "--backend", "fake", "-o", str(path)])
    assert rc == 2
    assert capsys.readouterr().err == expected
    assert path.read_text() == before


def test_kill_grace_reaches_the_layers_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``layers profile`` had --timeout but no --kill-grace (a verifier's): it reaches the
    run, and a bad value is refused before it."""
    seen: dict[str, Any] = {}

    def fake_run(req: Any, limits: Any, **kw: Any) -> Any:
        seen.update(kw)
        return _collect(make_result(exit_code=2), req, limits, [MODEL])

    monkeypatch.setattr("edgeprof.layers.run.run_layers", fake_run)
    out = tmp_path / "p.yml"
    argv = ["layers", "m:build", "--input-shape", "8", "-o", str(out), "--timeout", "5"]
    main([*argv, "--kill-grace", "0.5"])
    assert seen["timeout"] == "5" and seen["kill_grace"] == "0.5"
    capsys.readouterr()
    seen.clear()
    assert main([*argv, "--kill-grace", "-1"]) == 2
    assert capsys.readouterr().err == (
        "edgeprof: error: --kill-grace: invalid kill grace '-1': must be greater than 0\n"
    )
    assert seen == {}
