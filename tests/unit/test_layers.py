"""edgeprof.layers without torch: the results schema and its YAML, statistics, merging and
the checks before extending a file, the converters on a known file, request validation, the
one-line account of a failed run, and the CLI's refusals (nothing started, nothing written)."""

from __future__ import annotations

import copy
import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from edgeprof.cli import main
from edgeprof.errors import ConfigError
from edgeprof.layers import results
from edgeprof.layers.request import (
    LayersRequest,
    check_extendable,
    check_importable,
    make_request,
    parse_factory_args,
)
from edgeprof.layers.run import _collect
from edgeprof.model import Limits, MemoryStats, Termination
from edgeprof.report import layers_export as export
from tests.conftest import require
from tests.unit.conftest import make_result

# A results file as PipeEdge's profiler writes it (the seed's example, three layers).
PIPEEDGE = """\
batch_size: 8
dtype: torch.float32
layers: 3
model_name: google/vit-base-patch16-224
profile_data:
- layer: 1
  memory: 26.857472
  shape_in:
  - [3, 224, 224]
  shape_out:
  - [197, 768]
  - [197, 768]
  time: 0.36892950534820557
- layer: 2
  memory: 18.890751999999992
  shape_in:
  - [197, 768]
  - [197, 768]
  shape_out:
  - [197, 3072]
  - [197, 768]
  time: 0.06506834030151368
- layer: 3
  memory: 32.669696
  shape_in:
  - [197, 3072]
  - [197, 768]
  shape_out:
  - [1000]
  time: 0.24404664039611818
"""


def request(**kw: Any) -> LayersRequest:
    args: dict[str, Any] = {"factory": "m:build", "input_shapes": ["3,32,32"], "batch_size": 4}
    args.update(kw)
    return make_request(
        args.pop("factory"), args.pop("input_shapes"), args.pop("batch_size"), **args
    )


def layer_record(i: int, times: list[float], **kw: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "kind": "layer",
        "layer": i,
        "name": f"l{i}",
        "type": "Linear",
        "shape_in": [[16]],
        "shape_out": [[16]],
        "param_bytes": 1088,
        "output_bytes": 256,
        "alloc_peak_bytes": 256,
        "rss_peak_bytes": 100_000_000,
        "rss_growth_bytes": 0,
        "times_s": times,
    }
    rec.update(kw)
    return rec


MODEL = {
    "kind": "model",
    "layers": 3,
    "names": ["l1", "l2", "l3"],
    "types": ["Linear"] * 3,
    "torch": "2.13.0+cpu",
    "threads": 1,
    "build_s": 0.01,
    "param_bytes": 3264,
}


def finished_run(req: LayersRequest, limits: Limits, layers: range) -> results.LayerResults:
    records = [
        MODEL,
        *(layer_record(i, [0.001 * i, 0.002 * i, 0.003 * i]) for i in layers),
        {"kind": "done", "profile_s": 0.5},
    ]
    return _collect(make_result(limits=limits), req, limits, records).to_results()


# -- statistics -------------------------------------------------------------------------------


def test_time_stats_percentiles_interpolate_like_numpy() -> None:
    s = results.TimeStats.of([0.5, 0.1, 0.4, 0.2, 0.3])  # order of the runs does not matter
    assert (s.iterations, s.median, s.min, s.max) == (5, 0.3, 0.1, 0.5)
    assert s.mean == pytest.approx(0.3)
    # numpy.percentile([.1,.2,.3,.4,.5], 90) = 0.46, 95 -> 0.48, 99 -> 0.496
    assert (s.p90, s.p95, s.p99) == pytest.approx((0.46, 0.48, 0.496))
    one = results.TimeStats.of([0.25])
    # One iteration has no spread: null in the file, not 0.0
    assert (one.median, one.p99, one.sd) == (0.25, 0.25, None)
    assert one.to_dict()["sd"] is None


# -- schema and YAML --------------------------------------------------------------------------


def test_a_pipeedge_file_loads_and_dumps_back_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "profiler_results.yml"
    path.write_text(PIPEEDGE)
    r = results.load(path)
    assert (r.batch_size, r.dtype, r.layers, r.model_name, r.meta) == (
        8,
        "torch.float32",
        3,
        "google/vit-base-patch16-224",
        None,
    )
    assert r.profile_data[1].shape_out == [[197, 3072], [197, 768]]
    assert r.complete
    # Same keys, same order of the seed's fields, shapes in flow style: byte for byte.
    assert results.dump(r) == PIPEEDGE


def test_edgeprof_results_round_trip_with_units_and_run_metadata(tmp_path: Path) -> None:
    limits = Limits(cpus=1, memory="1g")
    r = finished_run(request(), limits, range(1, 4))
    path = tmp_path / "out.yml"
    results.save(path, r)
    data = yaml.safe_load(path.read_text())
    # PipeEdge's keys first, in its order; then the units and how the profile was made.
    assert list(data)[:4] == ["batch_size", "dtype", "layers", "model_name"]
    assert list(data)[-1] == "profile_data"
    assert data["units"]["memory"].startswith("MB = 10^6 bytes")
    assert data["units"]["time"] == "seconds per batch: median of the timed iterations"
    assert list(data["profile_data"][0])[:5] == ["layer", "memory", "shape_in", "shape_out", "time"]
    first = data["profile_data"][0]
    assert first["memory"] == 1088 / 1e6
    assert first["time"] == 0.002  # the median of 0.001, 0.002, 0.003
    assert first["time_stats"]["mean"] == pytest.approx(0.002)
    assert first["param_bytes"] == 1088 and first["name"] == "l1"
    meta = data["edgeprof"]
    assert meta["schema"] == "edgeprof-layers/1"
    assert meta["limits"]["describe"] == "cpus=1, memory=1.0GiB"
    assert meta["runs"][0]["layers"] == [1, 3] and meta["runs"][0]["threads"] == 1
    assert results.load(path) == r


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d.pop("dtype"), "missing key 'dtype'"),
        (lambda d: d.update(batch_size=0), "batch_size must be a positive integer"),
        (lambda d: d["profile_data"][1].update(layer=7), "layer must be an integer in 1-3"),
        (lambda d: d["profile_data"][1].update(layer=1), "layer 1: appears twice"),
        (lambda d: d["profile_data"][0].update(time="fast"), "layer 1: time must be a number"),
        (lambda d: d["profile_data"][2].update(shape_out=[1000]), "layer 3: shape_out must be"),
        (lambda d: d["profile_data"][0].pop("memory"), "profile_data[0]: missing memory"),
        (lambda d: d.update(edgeprof={"schema": "other"}), "not schema edgeprof-layers/1"),
    ],
)
def test_schema_errors_name_the_file_and_the_entry(edit: Any, message: str) -> None:
    data = yaml.safe_load(PIPEEDGE)
    edit(data)
    with pytest.raises(ConfigError, match=r"^r\.yml: ") as e:
        results.from_dict(data, "r.yml")
    assert message in str(e.value)


def test_invalid_yaml_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yml"
    path.write_text("batch_size: 8\nprofile_data: [\n")
    with pytest.raises(ConfigError) as info:
        results.load(path)
    assert str(info.value) == f"{path}:3: expected the node content, but found '<stream end>'"


# -- extending a file -------------------------------------------------------------------------


def test_merge_adds_the_missing_range_and_keeps_both_runs() -> None:
    req, limits = request(), Limits(cpus=1)
    first = finished_run(req, limits, range(1, 3))
    assert not first.complete and first.missing_text() == "3"
    second = finished_run(request(layer_start=3), limits, range(3, 4))
    merged = results.merge(first, second)
    assert merged.covered == [1, 2, 3] and merged.complete
    assert [run["layers"] for run in merged.meta["runs"]] == [[1, 2], [3, 3]]  # type: ignore[index]
    with pytest.raises(ConfigError, match="layers 3 are already in the results"):
        results.merge(merged, second)


def test_extending_checks_model_dtype_batch_split_input_limits_and_overlap() -> None:
    limits = Limits(cpus=1)
    existing = finished_run(request(), limits, range(1, 3))
    check_extendable(existing, request(layer_start=3), limits)  # the missing layer: fine
    # Factory arguments survive the file's YAML round trip (a tuple comes back as a list).
    tuple_arg = request(factory_args=["shape=(1, 2)"])
    saved = results.from_dict(
        yaml.safe_load(results.dump(finished_run(tuple_arg, limits, range(1, 3)))), "f.yml"
    )
    check_extendable(saved, request(layer_start=3, factory_args=["shape=(1, 2)"]), limits)
    cases = [
        (request(layer_start=3, model_name="other"), limits, "is for model 'm:build', not"),
        (request(layer_start=3, dtype="float16"), limits, "dtype torch.float32, not torch.float16"),
        (request(layer_start=3, batch_size=8), limits, "batch size 4, not 8"),
        (request(layer_start=3, granularity="leaves"), limits, "granularity 'children'"),
        (request(layer_start=3, input_shapes=["3,64,64"]), limits, "input shape"),
        (request(layer_start=3, factory_args=["blocks=2"]), limits, "factory arguments"),
        (request(layer_start=3), Limits(cpus=2), "profiled under limits cpus=1, not cpus=2"),
        (request(layer_start=2), limits, "already holds layers 2 (missing: 3)"),
        (request(), limits, "already holds layers 1-2 (missing: 3)"),
        (request(layer_start=3, layer_end=4), limits, "declares 3 layers"),
    ]
    for req, lim, message in cases:
        with pytest.raises(ConfigError) as e:
            check_extendable(existing, req, lim)
        assert message in str(e.value), (req, str(e.value))
    pipeedge = results.from_dict(yaml.safe_load(PIPEEDGE), "p.yml")
    req = request(model_name="google/vit-base-patch16-224", batch_size=8)
    with pytest.raises(ConfigError, match="not written by edgeprof"):
        check_extendable(pipeedge, req, limits)


# -- converters on a known file ----------------------------------------------------------------


def test_models_yml_from_the_pipeedge_example(tmp_path: Path) -> None:
    src = results.from_dict(yaml.safe_load(PIPEEDGE), "p.yml")
    out = tmp_path / "models.yml"
    out.write_text(
        "DummyModel:\n  layers: 0\n  mem_MB: []\n  parameters_in: 0\n  parameters_out: []\n"
    )
    line = export.export_models(src, out)
    assert line == f"added model 'google/vit-base-patch16-224' (3 layers) in {out}"
    assert yaml.safe_load(out.read_text()) == {
        "DummyModel": {"layers": 0, "mem_MB": [], "parameters_in": 0, "parameters_out": []},
        "google/vit-base-patch16-224": {
            "layers": 3,
            "mem_MB": [26.857472, 18.890751999999992, 32.669696],
            "parameters_in": 3 * 224 * 224,
            # PipeEdge's README: 302592 (2 × 197×768), 756480 (197×3072 + 197×768), 1000
            "parameters_out": [302592, 756480, 1000],
        },
    }
    with pytest.raises(ConfigError, match=r"already has model .* \(--overwrite replaces it\)"):
        export.export_models(src, out)
    assert export.export_models(src, out, overwrite=True).startswith("replaced model")


def test_device_types_yml_from_the_pipeedge_example(tmp_path: Path) -> None:
    src = results.from_dict(yaml.safe_load(PIPEEDGE), "p.yml")
    out = tmp_path / "device_types.yml"
    with pytest.raises(ConfigError, match="new device type 'RCC': give --mem-mb and --bw-mbps"):
        export.export_device_types(src, out, "RCC")
    assert not out.exists()
    export.export_device_types(src, out, "RCC", mem_mb=8192, bw_mbps=1000)
    expected = {
        "RCC": {
            "mem_MB": 8192,
            "bw_Mbps": 1000,
            "model_profiles": {
                "google/vit-base-patch16-224": [
                    {
                        "batch_size": 8,
                        "dtype": "torch.float32",
                        "time_s": [0.36892950534820557, 0.06506834030151368, 0.24404664039611818],
                    }
                ]
            },
        }
    }
    assert yaml.safe_load(out.read_text()) == expected
    with pytest.raises(ConfigError, match=r"already has a profile .* batch size 8"):
        export.export_device_types(src, out, "RCC")
    with pytest.raises(ConfigError, match="has 8192, not --mem-mb 4096"):
        export.export_device_types(src, out, "RCC", mem_mb=4096, overwrite=True)
    # Another batch size is one more profile of the same model on the same device type.
    other = results.from_dict({**yaml.safe_load(PIPEEDGE), "batch_size": 16}, "p.yml")
    export.export_device_types(other, out, "RCC")
    profiles = yaml.safe_load(out.read_text())["RCC"]["model_profiles"]
    assert [p["batch_size"] for p in profiles["google/vit-base-patch16-224"]] == [8, 16]


def test_device_memory_defaults_to_the_profiles_limit_in_mb(tmp_path: Path) -> None:
    r = finished_run(request(), Limits(memory="1g"), range(1, 4))
    out = tmp_path / "device_types.yml"
    export.export_device_types(r, out, "pi", bw_mbps=100)
    assert yaml.safe_load(out.read_text())["pi"]["mem_MB"] == 1073  # 2^30 bytes / 10^6


def test_an_incomplete_profile_is_not_exported(tmp_path: Path) -> None:
    r = finished_run(request(), Limits(), range(1, 3))
    with pytest.raises(ConfigError, match="holds layers 1, 2 of 3: profile layers 3 first"):
        export.export_models(r, tmp_path / "models.yml")
    assert not (tmp_path / "models.yml").exists()


# -- requests and run outcomes ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"factory": "nocolon"}, "expected MODULE:FACTORY"),
        ({"factory": "missing.py:f"}, "no such file missing.py"),
        ({"input_shapes": ["3,x,32"]}, "--input-shape '3,x,32'"),
        ({"input_shapes": []}, "--input-shape is required"),
        ({"batch_size": 0}, "--batch-size 0"),
        ({"dtype": "int8"}, "--dtype 'int8'"),
        ({"iterations": 0}, "--iterations 0"),
        ({"granularity": "ops"}, "--granularity 'ops'"),
        ({"layer_start": 3, "layer_end": 2}, "--layer-end 2 is before --layer-start 3"),
        ({"factory_args": ["4"]}, "--factory-arg '4': expected NAME=VALUE"),
    ],
)
def test_bad_requests(kw: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as e:
        request(**kw)
    assert message in str(e.value)


def test_a_module_nobody_can_import_is_refused_before_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYTHONPATH", raising=False)
    with pytest.raises(ConfigError, match=r"'nomod\.sub:f': no module named 'nomod' in "):
        check_importable("nomod.sub:f", None, tmp_path, None)
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "nomod.py").write_text("def f(): pass\n")
    check_importable("nomod:f", None, tmp_path, {"PYTHONPATH": str(lib)})  # the workload's
    check_importable("lib.nomod:f", None, tmp_path, None)  # a package in the directory
    check_importable("json:loads", None, tmp_path, None)  # installed here
    check_importable("nomod:f", "/opt/other/python", tmp_path, None)  # another Python: unknown
    check_importable("nomod.py:f", None, tmp_path, None)  # a file: make_request checks it


def test_factory_args_are_literals_or_strings() -> None:
    assert parse_factory_args(["blocks=4", "p=0.5", "name=vit", "shape=(1, 2)"]) == {
        "blocks": 4,
        "p": 0.5,
        "name": "vit",
        "shape": (1, 2),
    }
    assert request(dtype="torch.float16").torch_dtype == "torch.float16"


def test_an_oom_kill_is_one_line_naming_the_layer_it_stopped_in() -> None:
    limits = Limits(memory="400m")
    oomed = make_result(
        limits=limits,
        termination=Termination.OOM,
        exit_code=137,
        signal=9,
        memory=MemoryStats(400 * 2**20, "kernel", None, 400 * 2**20, 1, None, None),
    )
    run = _collect(oomed, request(), limits, [MODEL, layer_record(1, [0.1])])
    assert not run.ok
    assert run.failure(Path("p.yml")) == (
        "the run ended oom (exit 137) under memory=400.0MiB, peak 400.0MiB, during layer 2 (l2) "
        "of 3; layers 1 were profiled before it; nothing written to p.yml"
    )
    early = _collect(oomed, request(), limits, [])
    assert "before the model was built" in early.failure(None)
    with pytest.raises(ConfigError):
        run.to_results()


def test_a_model_error_is_reported_with_the_workers_line() -> None:
    failed = make_result(exit_code=3)
    records = [MODEL, {"kind": "error", "message": "layer 2 (l2: Linear) failed: boom", "layer": 2}]
    run = _collect(failed, request(), Limits(), records)
    assert run.failure(None) == "the model failed (exit 3): layer 2 (l2: Linear) failed: boom"


# -- the CLI refuses before starting anything --------------------------------------------------


def test_cli_rejects_a_results_file_of_another_batch_size(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "p.yml"
    r = finished_run(request(), Limits(), range(1, 3))
    results.save(path, r)
    before = path.read_text()
    rc = main(
        [
            "layers",
            "m:build",
            "--input-shape",
            "3,32,32",
            "--batch-size",
            "8",
            "--backend",
            "fake",
            "-l",
            "3",
            "-o",
            str(path),
        ]
    )
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    assert err == f"edgeprof: error: {path} has batch size 4, not 8\n"
    assert path.read_text() == before


def test_cli_rejects_a_broken_results_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "p.yml"
    data = yaml.safe_load(PIPEEDGE)
    bad = copy.deepcopy(data)
    bad["profile_data"][0]["time"] = -1
    path.write_text(yaml.safe_dump(bad))
    rc = main(
        ["layers", "m:build", "--input-shape", "3,32,32", "--backend", "fake", "-o", str(path)]
    )
    assert rc == 2
    assert capsys.readouterr().err == (
        f"edgeprof: error: {path}: layer 1: time must be a number ≥ 0, got -1\n"
    )


def test_cli_export_both_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "profiler_results.yml"
    src.write_text(PIPEEDGE)
    models, types = tmp_path / "models.yml", tmp_path / "device_types.yml"
    assert main(["layers", "export", "models", "-i", str(src), "-o", str(models)]) == 0
    assert (
        main(
            [
                "layers",
                "export",
                "device-types",
                "RCC",
                "-i",
                str(src),
                "-o",
                str(types),
                "--mem-mb",
                "8192",
                "--bw-mbps",
                "1000",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out.splitlines()
    assert out == [
        f"added model 'google/vit-base-patch16-224' (3 layers) in {models}",
        f"added timings of 'google/vit-base-patch16-224' (batch 8, torch.float32) for device "
        f"type 'RCC' in {types}",
    ]
    assert yaml.safe_load(models.read_text())["google/vit-base-patch16-224"]["layers"] == 3
    assert main(["layers", "export", "device-types", "X", "-i", str(src), "-o", str(types)]) == 2
    assert "new device type 'X': give --mem-mb and --bw-mbps" in capsys.readouterr().err


def test_report_and_compare_name_the_export_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``report m2.yml`` of export's own outputs had said ``cannot read result m2.yml:
    Expecting value: line 1 column 1 (char 0)``: each is now named, with its command."""
    src = tmp_path / "profiler_results.yml"
    src.write_text(PIPEEDGE)
    models, types = tmp_path / "m2.yml", tmp_path / "dt.yml"
    assert main(["layers", "export", "models", "-i", str(src), "-o", str(models)]) == 0
    argv = ["layers", "export", "device-types", "RCC", "-i", str(src), "-o", str(types)]
    assert main([*argv, "--mem-mb", "8192", "--bw-mbps", "1000"]) == 0
    capsys.readouterr()
    assert main(["report", str(models)]) == 2
    assert capsys.readouterr().err == (
        f"edgeprof: error: {models} is the scheduler's models.yml from `edgeprof layers export "
        "models` (each model's layers, memory per layer and input/output sizes), not a run "
        f"result: PipeEdge's scheduler reads it, and `edgeprof layers export models -o {models} "
        "-i PROFILE` adds a profile to it (report and compare read result.json and sweep.json)\n"
    )
    assert main(["compare", str(types), str(types)]) == 2
    assert capsys.readouterr().err == (
        f"edgeprof: error: {types} is the scheduler's device_types.yml from `edgeprof layers "
        "export device-types` (each device type's memory, bandwidth and per-layer times), not a "
        "run result: PipeEdge's scheduler reads it, and `edgeprof layers export device-types "
        f"TYPE -o {types} -i PROFILE` adds a profile to it (report and compare read result.json "
        "and sweep.json)\n"
    )
    # A directory of them alone: its error names them too.
    (tmp_path / "profiler_results.yml").unlink()
    assert main(["report", str(tmp_path)]) == 2
    assert f"below it; {types} is the scheduler's" in (
        capsys.readouterr().err
    )
    # The profile itself keeps its own line.
    from edgeprof.storage import layers_file_note, layers_profile_note

    assert layers_file_note(src, PIPEEDGE) == layers_profile_note(src, PIPEEDGE) is not None


def test_edgeprof_and_its_cli_do_not_import_torch() -> None:
    # torch is optional: only the worker, inside the limited run, imports it.
    import subprocess
    import sys

    code = (
        "import sys, edgeprof, edgeprof.cli, edgeprof.layers, edgeprof.cli.layers; "
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout == "False\n"


def test_a_factory_its_module_surely_lacks_is_refused_before_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``models:nope`` had run the worker for seconds, printed the table and exited 3: the
    module's source, found under the working directory as the worker imports it, says so."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "models.py").write_text("import torch\ndef build():\n    pass\n")
    for factory in ("pkg.models:nope", "pkg/models.py:nope"):
        with pytest.raises(ConfigError, match=r"defines no 'nope'"):
            request(factory=factory)
    assert request(factory="pkg.models:build").factory == "pkg.models:build"
    assert request(factory="pkg.models:torch").factory == "pkg.models:torch"  # imported: bound
    # Not a file under the working directory (an installed package): the worker says.
    assert request(factory="somewhere.else:build").factory == "somewhere.else:build"


def test_a_file_factory_imports_the_modules_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As ``python pkg/lm.py`` would (the worker's ``cannot import pkg/lm.py:
    ModuleNotFoundError`` had stopped such a model)."""
    from edgeprof.workload.user_code import load_factory

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "blocks_beside.py").write_text("def build():\n    return 'model'\n")
    (pkg / "lm.py").write_text("from blocks_beside import build\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the worker's insertion, undone after
    assert load_factory("pkg/lm.py:build")() == "model"


def test_a_views_output_bytes_are_its_own_elements() -> None:
    """``x[:, -1]`` of a 4×10×64 float32 tensor is 1 KiB of data on its base's 10 KiB
    storage: output_bytes had counted the storage (10 KiB) while the layer allocated
    nothing."""
    require(importlib.util.find_spec("torch") is not None, "needs torch (the CPU wheel)")
    import torch

    from edgeprof.workload import layer_memory as memory
    from edgeprof.workload import layers as worker

    class Pick(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x[:, -1]

    x = torch.randn(4, 10, 64)
    with torch.inference_mode():
        rec = worker._profile_layer(
            torch, 1, "pick", Pick(), x, 1, 0, memory.Rss(), memory.allocation_tracker(torch), 4
        )
    assert (rec["output_bytes"], rec["alloc_peak_bytes"]) == (4 * 64 * 4, 0)


def test_shapes_leave_out_the_batch_wherever_it_is() -> None:
    """Dim 0 is the batch of a plain layer's tensors, but an LSTM's output is (seq, batch,
    hidden) and its h and c (layers, batch, hidden): dim 0 alone had shown a (2, 1, 32) h
    at batch 1 as ``[1, 32]``."""
    require(importlib.util.find_spec("torch") is not None, "needs torch (the CPU wheel)")
    import torch

    from edgeprof.workload import layer_memory as memory
    from edgeprof.workload import layers as worker

    lstm = torch.nn.LSTM(input_size=8, hidden_size=32, num_layers=2)
    x = torch.randn(5, 1, 8)  # (seq, batch, features): the module's own layout
    with torch.inference_mode():
        rec = worker._profile_layer(
            torch, 1, "lstm", lstm, x, 1, 0, memory.Rss(), memory.allocation_tracker(torch), 1
        )
    assert rec["shape_in"] == [[5, 8]]
    assert rec["shape_out"] == [[5, 32], [2, 32], [2, 32]]
    assert worker.shapes(torch.zeros(4, 3, 4), torch, 4) == [[3, 4]]  # dim 0 first
    assert worker.shapes(torch.zeros(()), torch, 4) == [[]]  # no batch: shown whole
