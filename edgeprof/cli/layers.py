"""``edgeprof layers``: the typer sub-app (registered by :mod:`edgeprof.cli`).  Thin: parses,
calls :mod:`edgeprof.layers`, renders.

``edgeprof layers MODULE:FACTORY …`` profiles (the hidden default command ``profile``);
``edgeprof layers export models|device-types …`` converts a results file.
"""

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from . import complete
from .app import exit_code
from .options import (
    AllowOverHost,
    CoresBusy,
    CpuPeriod,
    DeviceName,
    DevicesFile,
    KillGrace,
    LocalBackendName,
)

# The library (yaml, the layer results) loads in the commands: `import edgeprof.cli` and the
# other commands do not pay for it.


class _ProfileByDefault(TyperGroup):
    """``edgeprof layers MODULE:FACTORY …`` means ``edgeprof layers profile MODULE:FACTORY …``:
    anything that is not a subcommand (or the group's --help) goes to ``profile``."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["profile", *args]
        return super().parse_args(ctx, args)


layers_app = typer.Typer(
    cls=_ProfileByDefault,
    help="Per-layer time, memory and shapes of a PyTorch model under the device's limits. "
    "`edgeprof layers MODULE:FACTORY …` is short for `edgeprof layers profile MODULE:FACTORY …`.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)
export_app = typer.Typer(
    help="Convert profiler_results.yml into the scheduler's models.yml / device_types.yml.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)
layers_app.add_typer(export_app, name="export")


@layers_app.command(name="profile")
def profile_cmd(
    factory: Annotated[
        str,
        typer.Argument(
            metavar="MODULE:FACTORY",
            help="A function (or class) returning the torch.nn.Module: pkg.mod:build or "
            "file.py:build, imported from the working directory.",
            show_default=False,
        ),
    ],
    input_shape: Annotated[
        list[str] | None,
        typer.Option(
            help="One sample's input shape, e.g. 3,224,224 (no batch dimension); repeat for "
            "a model taking several tensors."
        ),
    ] = None,
    batch_size: Annotated[int, typer.Option(help="Samples per batch.")] = 8,
    dtype: Annotated[
        str,
        typer.Option(
            help="float32 | float64 | float16 | bfloat16", autocompletion=complete.dtypes
        ),
    ] = "float32",
    iterations: Annotated[int, typer.Option(help="Timed runs of each layer.")] = 10,
    warmup: Annotated[int, typer.Option(help="Untimed runs of each layer first.")] = 2,
    granularity: Annotated[
        str,
        typer.Option(
            help="children: the model's children; blocks: also nn.Sequential expanded; "
            "leaves: modules without children.",
            autocompletion=complete.granularities,
        ),
    ] = "children",
    layer_start: Annotated[int, typer.Option("--layer-start", "-l", help="First layer.")] = 1,
    layer_end: Annotated[
        int | None, typer.Option("--layer-end", "-L", help="Last layer (default: the last).")
    ] = None,
    factory_arg: Annotated[
        list[str] | None,
        typer.Option(help="NAME=VALUE passed to the factory (a Python literal); repeatable."),
    ] = None,
    model_name: Annotated[
        str | None, typer.Option(help="model_name in the results (default: MODULE:FACTORY).")
    ] = None,
    output: Annotated[
        Path,
        typer.Option(
            "--output", "-o", help="Results file; an existing one is checked, then extended."
        ),
    ] = Path("profiler_results.yml"),
    backend: LocalBackendName = "auto",
    cpus: Annotated[str | None, typer.Option(help="CPU bandwidth in CPUs, e.g. 1.5.")] = None,
    cpuset: Annotated[str | None, typer.Option(help="CPUs to run on, e.g. 0-1,3.")] = None,
    cpu_period: CpuPeriod = None,
    memory: Annotated[
        str | None, typer.Option(help="Memory limit, e.g. 512m (binary units, as Docker).")
    ] = None,
    device: DeviceName = None,
    devices: DevicesFile = None,
    timeout: Annotated[
        str | None, typer.Option(help="Stop the run after this many seconds.")
    ] = None,
    kill_grace: KillGrace = None,
    cores_busy: CoresBusy = "wait",
    python: Annotated[
        str | None, typer.Option(help="Interpreter with torch for the worker (default: this).")
    ] = None,
    seed: Annotated[int, typer.Option(help="torch.manual_seed for weights and input.")] = 0,
    cgroup_parent: Annotated[
        str | None, typer.Option(help="cgroup v2 parent group for the run group.")
    ] = None,
    allow_over_host: AllowOverHost = False,
) -> None:
    """Profile each layer of the model built by MODULE:FACTORY under the limits.

    Example: edgeprof layers mymodels:vit --input-shape 3,224,224 --batch-size 8 --cpus 1
    --memory 1g -o profiler_results.yml
    """
    from ..analysis.device_limits import device_limits
    from ..errors import ConfigError
    from ..layers.request import check_extendable, completes, make_request
    from ..layers.results import LayerResults, layer_ranges, load, merge, save
    from ..layers.run import run_layers
    from ..report.layers import render_layers
    from ..report.results import print_table
    from ..storage import check_writable
    from ..sweeps.labels import one_setting
    from ..units import named, parse_duration

    one_setting("layers profile", cpus, memory, sweep=False)
    if kill_grace is not None:  # refused now, not at the run's timeout
        with named("--kill-grace"):
            parse_duration(kill_grace, "kill grace")
    request = make_request(
        factory,
        input_shape or [],
        batch_size,
        dtype=dtype,
        iterations=iterations,
        warmup=warmup,
        granularity=granularity,
        layer_start=layer_start,
        layer_end=layer_end,
        model_name=model_name,
        factory_args=factory_arg or [],
        seed=seed,
    )
    chosen = device_limits(
        device, devices, cpus=cpus, cpuset=cpuset, memory=memory, cpu_period=cpu_period
    )
    limits = chosen.limits
    check_writable(output)
    existing: LayerResults | None = None
    if output.exists():
        existing = load(output)
        check_extendable(existing, request, limits, where=str(output))
    run = run_layers(
        request,
        limits,
        backend=backend,
        python=python,
        expect_layers=None if existing is None else existing.layers,
        check_whole=existing is not None and completes(existing, request),
        timeout=timeout,
        kill_grace=kill_grace,
        cores_busy=cores_busy,
        cgroup_parent=cgroup_parent,
        device=device,
        env=chosen.env,
        allow_over_host=allow_over_host,
        device_cores=chosen.cores,
    )
    if run.bad_input:
        raise ConfigError(run.failure(output))  # bad input: one line, exit 2, no table
    if not run.ok:
        print_table([run.result], sys.stdout)
        print(f"edgeprof: layers: {run.failure(output)}", file=sys.stderr)
        raise typer.Exit(exit_code(run.result) or 1)
    new = run.to_results()
    merged = merge(existing, new) if existing is not None else new
    save(output, merged)
    sys.stdout.write(render_layers(new) + "\n")
    print_table([run.result], sys.stdout)
    for w in (*chosen.warnings, *run.warnings):
        print(f"edgeprof: warning: {w}", file=sys.stderr)
    missing = merged.missing_text()
    print(
        f"wrote {output}: layers {layer_ranges(new.covered)} of {merged.layers}"
        + (f" (still missing: {missing})" if missing else "")
        + f"; profiling loop {run.profile_s:.2f}s, whole run {run.result.wall_s:.2f}s"
    )


_INPUT: Any = typer.Option("--input", "-i", help="The profiler results file to convert.")
_ALLOW_NOT_CHAIN: Any = typer.Option(
    help="Export a profile whose layers, chained, did not give the model's own output."
)


def _checked(input_file: Path, allow_not_chain: bool) -> Any:
    """The results in ``input_file``, refused where its layers are not the model's chain; a
    file never checked against the whole model is exported with a warning."""
    from ..layers.results import load
    from ..report.layers_export import check_chain

    results = load(input_file)
    warning = check_chain(results, str(input_file), allow=allow_not_chain)
    if warning is not None:
        print(f"edgeprof: warning: {warning}", file=sys.stderr)
    return results


@export_app.command(name="models")
def export_models_cmd(
    input_file: Annotated[Path, _INPUT] = Path("profiler_results.yml"),
    output: Annotated[Path, typer.Option("--output", "-o", help="Models file (extended).")] = Path(
        "models.yml"
    ),
    overwrite: Annotated[bool, typer.Option(help="Replace the model's existing entry.")] = False,
    allow_not_chain: Annotated[bool, _ALLOW_NOT_CHAIN] = False,
) -> None:
    """Write the model's layers, memory and input/output sizes into models.yml."""
    from ..report.layers_export import export_models
    from ..storage import check_writable

    results = _checked(input_file, allow_not_chain)
    check_writable(output)
    print(export_models(results, output, source=str(input_file), overwrite=overwrite))


@export_app.command(name="device-types")
def export_device_types_cmd(
    device_type: Annotated[
        str, typer.Argument(help="Device type name, e.g. rpi4-1cpu.", show_default=False)
    ],
    input_file: Annotated[Path, _INPUT] = Path("profiler_results.yml"),
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Device types file (extended).")
    ] = Path("device_types.yml"),
    mem_mb: Annotated[
        int | None,
        typer.Option(
            help="Device memory in MB (10^6 bytes); default: the --memory of the profile."
        ),
    ] = None,
    bw_mbps: Annotated[
        int | None, typer.Option(help="Device bandwidth in Mbit/s (needed for a new type).")
    ] = None,
    overwrite: Annotated[
        bool, typer.Option(help="Replace an existing profile (same batch size and dtype).")
    ] = False,
    allow_not_chain: Annotated[bool, _ALLOW_NOT_CHAIN] = False,
) -> None:
    """Add the model's per-layer times to DEVICE_TYPE in device_types.yml."""
    from ..report.layers_export import export_device_types
    from ..storage import check_writable

    results = _checked(input_file, allow_not_chain)
    check_writable(output)
    print(
        export_device_types(
            results,
            output,
            device_type,
            mem_mb=mem_mb,
            bw_mbps=bw_mbps,
            source=str(input_file),
            overwrite=overwrite,
        )
    )
