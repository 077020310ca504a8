"""``edgeprof layers``: the whole-model check of a profile made in ranges, the export that
refuses a profile that is not the model's chain, the messages of a failing model or factory,
a model file named as the factory, a profile given to ``report``/``compare``, and times
under a millisecond."""

from __future__ import annotations

import importlib.util
import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from edgeprof.analysis.metrics import FEW_NOTE, METRICS
from edgeprof.cli import main
from edgeprof.errors import ConfigError
from edgeprof.layers import results
from edgeprof.layers.request import make_request
from edgeprof.layers.run import _collect
from edgeprof.model import Limits
from edgeprof.report.layers import render_layers
from edgeprof.resultfiles import load_runs
from edgeprof.units import format_seconds
from tests.conftest import require
from tests.unit.conftest import make_result
from tests.unit.test_layers import MODEL, layer_record, request

MODELS = """\
import torch
from torch import nn


class Skip(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer1 = nn.Linear(8, 8)
        self.layer2 = nn.Linear(8, 8)
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        return self.head(x + self.layer2(self.layer1(x)))


def skip():
    return Skip()


def chain():
    return nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 4))


class Bad(nn.Module):
    def forward(self, x):
        raise RuntimeError("always fails")


def bad_forward():
    return nn.Sequential(nn.Linear(8, 8), Bad(), nn.Linear(8, 4))


class Flat(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 12)
        self.b = nn.Linear(4, 4)

    def forward(self, x):
        return self.b(self.a(x).reshape(-1, 3, 4)).sum(1)


def flat():
    return Flat()


def factory_raises():
    raise RuntimeError("boom")
"""
BAD_FORWARD_LINE = MODELS.splitlines().index('        raise RuntimeError("always fails")') + 1
FACTORY_LINE = MODELS.splitlines().index('    raise RuntimeError("boom")') + 1


@pytest.fixture
def worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The worker module, run in-process on ``mymodels.py`` in the working directory."""
    require(importlib.util.find_spec("torch") is not None, "needs torch (the CPU wheel)")
    from edgeprof.workload import layers as worker_mod

    (tmp_path / "mymodels.py").write_text(MODELS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    monkeypatch.delitem(sys.modules, "mymodels", raising=False)
    return worker_mod


def run_worker(worker: Any, factory: str, start: int, end: int | None, **kw: Any) -> list[Any]:
    spec = {
        "factory": f"mymodels:{factory}",
        "input_shapes": [[8]],
        "batch_size": 2,
        "dtype": "float32",
        "iterations": 1,
        "warmup": 0,
        "granularity": "children",
        "layer_start": start,
        "layer_end": end,
        **kw,
    }
    out = io.StringIO()
    worker.profile(spec, out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def checks(records: list[Any]) -> list[str]:
    return [r["chain"] for r in records if r["kind"] == "check"]


# -- 1. the whole model is checked by the range that reaches the end or completes the file ----


def test_a_range_reaching_the_last_layer_checks_the_whole_model(worker: Any) -> None:
    """``-l 1 -L 2`` then ``-l 3`` of a residual model had both given ``warnings: []``."""
    first = run_worker(worker, "skip", 1, 2)
    assert checks(first) == []  # neither the end nor (as the parent says) the file's last gap
    last = run_worker(worker, "skip", 3, None)
    assert [r["layer"] for r in last if r["kind"] == "layer"] == [3]
    assert checks(last) == ["different"]
    warnings = [r["message"] for r in last if r["kind"] == "warning"]
    assert len(warnings) == 1 and results.NOT_A_CHAIN in warnings[0]
    # The range that completes the file without reaching the end (3 first, then 1-2) runs
    # the rest of the chain unprofiled to check it.
    middle = run_worker(worker, "skip", 1, 2, check_whole=True)
    assert [r["layer"] for r in middle if r["kind"] == "layer"] == [1, 2]
    assert checks(middle) == ["different"]
    assert checks(run_worker(worker, "chain", 2, 2, check_whole=True)) == ["same"]
    assert checks(run_worker(worker, "chain", 3, 3)) == ["same"]


def test_the_parent_asks_for_the_check_when_the_range_fills_the_last_gap() -> None:
    from edgeprof.layers.request import completes

    limits = Limits()
    recs = [MODEL, layer_record(1, [0.1]), layer_record(2, [0.1]), {"kind": "done", "profile_s": 1}]
    have = _collect(make_result(limits=limits), request(layer_end=2), limits, recs).to_results()
    assert completes(have, request(layer_start=3))
    assert completes(have, request(layer_start=3, layer_end=3))
    only_first = results.LayerResults(**{**have.__dict__, "profile_data": have.profile_data[:1]})
    assert not completes(only_first, request(layer_start=3))
    assert completes(only_first, request(layer_start=2))


def profile_file(tmp_path: Path, runs: list[dict[str, Any]]) -> Path:
    """A complete three-layer profile whose runs are ``runs``."""
    limits = Limits()
    recs = [MODEL, *(layer_record(i, [0.1]) for i in (1, 2, 3)), {"kind": "done", "profile_s": 1}]
    res = _collect(make_result(limits=limits), request(), limits, recs).to_results()
    meta = dict(res.meta or {})
    meta["runs"] = [{**meta["runs"][0], **r} for r in runs]
    path = tmp_path / "skip2.yml"
    results.save(path, results.LayerResults(**{**res.__dict__, "meta": meta}))
    return path


def test_export_refuses_a_profile_that_is_not_the_models_chain(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It had said "added model 'mymodels:skip' (3 layers)", rc 0."""
    bad = profile_file(
        tmp_path,
        [{"layers": [1, 2], "chain_check": None}, {"layers": [3, 3], "chain_check": "different"}],
    )
    models = tmp_path / "models.yml"
    assert main(["layers", "export", "models", "-i", str(bad), "-o", str(models)]) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [
        f"edgeprof: error: {bad}: its run of layer 3 found that the layers chained do not give "
        "the model's own output: its forward is not a chain of these modules; the scheduler "
        "would split the model wrongly (try another --granularity, or --allow-not-chain to "
        "export it anyway)"
    ]
    assert not models.exists()
    types = tmp_path / "types.yml"
    argv = ["layers", "export", "device-types", "d", "-i", str(bad), "-o", str(types)]
    assert main([*argv, "--bw-mbps", "100", "--mem-mb", "1000"]) == 2
    assert not types.exists()
    argv = ["layers", "export", "models", "-i", str(bad), "-o", str(models), "--allow-not-chain"]
    assert main(argv) == 0
    assert "exported anyway (--allow-not-chain)" in capsys.readouterr().err
    assert "mymodels" not in models.read_text() and "m:build" in models.read_text()


def test_the_chain_check_of_files_old_and_new() -> None:
    def status(*runs: dict[str, Any]) -> str:
        res = results.LayerResults(
            batch_size=1,
            dtype="torch.float32",
            layers=3,
            model_name="m",
            profile_data=(),
            meta={"schema": results.SCHEMA, "runs": list(runs)},
        )
        return results.chain_check(res)[0]

    warned = {"layers": [1, 3], "warnings": [f"the layers chained (x) {results.NOT_A_CHAIN}"]}
    assert status(warned) == "different"  # written before chain_check: its warning says it
    assert status({"layers": [1, 3], "warnings": []}) == "same"  # an old full-range run
    assert status({"layers": [1, 2]}, {"layers": [3, 3]}) == "unchecked"
    assert status({"layers": [1, 3], "chain_check": "unchecked"}) == "unchecked"
    assert status({"layers": [2, 3], "chain_check": "same"}, {"layers": [1, 1]}) == "same"


# -- 2. times under a millisecond ------------------------------------------------------------


def test_times_under_a_millisecond_show_microseconds() -> None:
    """A ReLU's 7.6 µs and a Linear's 29 µs had both printed ``0.0ms``."""
    from edgeprof.analysis.regression import Change, Verdict

    assert format_seconds(7.6e-6) == "7.6µs"
    assert format_seconds(29e-6) == "29.0µs"
    assert format_seconds(0.000235) == "235.0µs"
    assert format_seconds(0.0009999) == "1.0ms"  # rounds to a millisecond: shown so
    assert format_seconds(0.0123) == "12.3ms"  # unchanged from a millisecond up
    assert format_seconds(75.2) == "75.20s"
    assert format_seconds(0.0) == "0.0ms"
    p95 = next(m for m in METRICS if m.key == "latency_p95")
    # Under a microsecond in whole nanoseconds: a tester's p95s of 0.139, 0.101 and 0.101 µs
    # had all shown as 0.1µs, their mean and deviation as "0.1µs ± 0.0µs".
    assert [format_seconds(v) for v in (1.39e-7, 1.01e-7)] == ["139ns", "101ns"]
    assert format_seconds(2.2e-8, like=1.14e-7) == "22ns"
    assert format_seconds(0.0000041, like=1.14e-7) == "4.1µs"  # the larger unit
    change = Change("m", "cpus=1", p95, (1.39e-7, 1.01e-7, 1.01e-7), (1.2e-7,) * 3,
                    Verdict.NO_CHANGE)  # fmt: skip
    assert change.stat_text(change.base) == "114ns ± 22ns (n=3)"
    assert format_seconds(9.9996e-7) == "1.0µs"  # rounds to a microsecond: shown so
    p95 = next(m for m in METRICS if m.key == "latency_p95")
    assert p95.format(0.00021) == "210.0µs"
    assert p95.format_apart(0.00021, 0.00021004) == "210.00µs"
    # A deviation takes microseconds only beside a mean that does: "20.1ms ± 0.7ms" stays.
    assert format_seconds(0.0007, like=0.0201) == "0.7ms"
    assert format_seconds(0.0000041, like=0.000235) == "4.1µs"
    change = Change("m", "cpus=1", p95, (0.0002, 0.00021), (0.0003, 0.0006), Verdict.NO_CHANGE)
    assert change.stat_text(change.base) == "205.0µs ± 7.1µs (n=2)"  # had been 0.2ms ± 0.0ms
    assert change.stat_text(change.current) == "450.0µs ± 212.1µs (n=2)"  # 0.3ms ± 0.3ms
    assert (
        Change("m", "c", p95, (0.0195, 0.0205), (), Verdict.NO_CHANGE).stat_text((0.0195, 0.0205))
        == "20.0ms ± 0.7ms (n=2)"
    )
    limits = Limits()
    recs = [MODEL, layer_record(1, [7.6e-6] * 3), {"kind": "done", "profile_s": 1}]
    table = render_layers(
        _collect(make_result(limits=limits), request(layer_end=1), limits, recs).to_results()
    )
    assert "7.6µs          7.6µs^" in table
    # Three iterations are fewer than a p95 needs: marked, and the mark's note under the
    # table, as bench's and report's (the table had shown it bare).
    assert table.splitlines()[-1] == FEW_NOTE
    recs = [MODEL, layer_record(1, [7.6e-6] * 20), {"kind": "done", "profile_s": 1}]
    table = render_layers(
        _collect(make_result(limits=limits), request(layer_end=1), limits, recs).to_results()
    )
    assert "7.6µs          7.6µs " in table and FEW_NOTE not in table


# -- 3. a per-layer profile given to report and compare ---------------------------------------


def test_report_and_compare_say_a_layers_profile_is_not_a_result(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """They had printed ``cannot read result vit.yml: Expecting value: line 1 column 1``."""
    vit = profile_file(tmp_path, [{}])
    note = (
        f"{vit} is a per-layer profile from `edgeprof layers`, not a run result: `edgeprof "
        f"layers export models|device-types -i {vit}` reads it (report and compare read "
        "result.json and sweep.json)"
    )
    with pytest.raises(ConfigError) as exc:
        load_runs([vit])
    assert str(exc.value) == note
    assert main(["report", str(vit)]) == 2
    assert capsys.readouterr().err.splitlines() == [f"edgeprof: error: {note}"]
    assert main(["compare", str(vit), str(vit)]) == 2
    assert capsys.readouterr().err.splitlines() == [f"edgeprof: error: {note}"]
    with pytest.raises(ConfigError) as exc:
        load_runs([tmp_path])
    assert str(exc.value) == (
        f"{tmp_path}: no result.json or sweep.json in it or in the 4 levels of directories "
        f"below it; {note}"
    )


# -- 5. a failing model or factory -------------------------------------------------------------


def test_a_layer_that_always_fails_says_the_model_itself_fails(worker: Any) -> None:
    """``bad_forward`` had been told "is the model's forward a chain of these modules? try
    another --granularity"."""
    with pytest.raises(worker.ModelError) as exc:
        run_worker(worker, "bad_forward", 1, None)
    assert str(exc.value) == (
        f"layer 2 (1: Bad) failed: RuntimeError: always fails (at mymodels.py:{BAD_FORWARD_LINE})"
        f"; the whole model fails on this input too (RuntimeError at mymodels.py:"
        f"{BAD_FORWARD_LINE}): the model itself fails, not the split (check its forward, the "
        "--input-shape and --dtype)"
    )
    with pytest.raises(worker.ModelError) as exc:
        run_worker(worker, "flat", 1, None)  # runs whole; its children chained do not
    assert str(exc.value).endswith(
        "; the whole model runs on this input, but layer 2 fails on layer 1's output: the "
        "model's forward is not a chain of these modules (try another --granularity)"
    )
    assert "(at " not in str(exc.value)  # torch raised it: no line of the user's


def test_a_factory_exception_names_the_users_line(worker: Any) -> None:
    with pytest.raises(worker.ModelError) as exc:
        run_worker(worker, "factory_raises", 1, None)
    assert str(exc.value) == (
        f"mymodels:factory_raises(): RuntimeError: boom (at mymodels.py:{FACTORY_LINE})"
    )


# -- 6. a model file named as the factory -----------------------------------------------------


@pytest.mark.parametrize(
    ("name", "kind"), [("mlp.onnx", "an ONNX"), ("m.tflite", "a TensorFlow Lite")]
)
def test_a_model_file_is_refused_as_not_a_pytorch_module(name: str, kind: str) -> None:
    """``mlp.onnx:x`` had been "no module named 'mlp'"."""
    with pytest.raises(ConfigError) as exc:
        make_request(f"{name}:x", ["128"], 1)
    assert str(exc.value) == (
        f"'{name}:x': edgeprof layers profiles the layers of a PyTorch module that a Python "
        f"factory builds (MODULE:FACTORY, e.g. models.py:build); {name} is {kind} file, not "
        f"one: time the whole model with `edgeprof run -- python infer.py {name}` or `edgeprof "
        "bench infer.py:FUNC` (a script or function that loads it)"
    )


def test_the_rss_peak_is_documented_as_not_comparable_with_the_limit() -> None:
    assert "not comparable with the memory limit" in results.UNITS["rss_peak_bytes"]
