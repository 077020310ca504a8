"""``edgeprof run`` without typer: its arguments read from a table, and the run itself.

Start-up is the fixed cost of every run: importing typer (and its click) took 40–65 ms of a
~240 ms ``edgeprof run -- /bin/true`` on our 2-core host.  So :func:`edgeprof.cli.main`
first tries :func:`parse`, which reads the plain forms (``--opt value``, ``--opt=value``,
the short options as separate words, flags, ``--``) and gives up on anything else: help,
an unknown or misspelt option, ``-Evalue``, a missing value, a value that is not a number.
Then the typer command (:mod:`edgeprof.cli.run`) parses the same words, and prints its help
or its error exactly as before.  Both paths end in :func:`execute`.

:data:`OPTIONS` restates the typer command's options; a unit test checks the two against
each other (names, kinds, defaults) and that both parse generated command lines alike.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..errors import ConfigError

if TYPE_CHECKING:
    from ..sweeps.request import RunRequest

Kind = Literal["str", "path", "int", "list", "flag", "no-flag"]

OPTIONS: dict[str, tuple[str, Kind]] = {
    "--backend": ("backend", "str"),
    "--cpus": ("cpus", "list"),
    "--cpuset": ("cpuset", "list"),
    "--cpu-period": ("cpu_period", "str"),
    "--device": ("device", "str"),
    "--devices": ("devices", "path"),
    "--cores-busy": ("cores_busy", "str"),
    "--memory": ("memory", "list"),
    "--pids": ("pids", "str"),
    "--read-bps": ("read_bps", "list"),
    "--write-bps": ("write_bps", "list"),
    "--read-iops": ("read_iops", "list"),
    "--write-iops": ("write_iops", "list"),
    "--gpus": ("gpus", "str"),
    "--gpu-memory": ("gpu_memory", "str"),
    "--interval": ("interval", "str"),
    "--timeout": ("timeout", "str"),
    "--kill-grace": ("kill_grace", "str"),
    "--env": ("env", "list"),
    "-E": ("env", "list"),
    "--cwd": ("cwd", "path"),
    "--out": ("out", "path"),
    "--json": ("json_out", "flag"),
    "--report-to": ("report_to", "str"),
    "--markdown": ("markdown", "path"),
    "--name": ("name", "str"),
    "--cgroup-parent": ("cgroup_parent", "str"),
    "--image": ("image", "str"),
    "--docker-args": ("docker_args", "str"),
    "--base-image": ("base_image", "str"),
    "--apt": ("apt", "list"),
    "--pip": ("pip", "list"),
    "--prerun": ("prerun", "list"),
    "--dir": ("env_dir", "path"),
    "--dockerfile": ("dockerfile", "path"),
    "--models": ("model_list", "str"),
    "--modellist": ("model_list", "str"),
    "-m": ("model_list", "str"),
    "--model-file": ("model_file", "path"),
    "--modelfile": ("model_file", "path"),
    "-f": ("model_file", "path"),
    "--repeat": ("repeat", "str"),
    "--min-runs": ("min_runs", "int"),
    "--max-runs": ("max_runs", "int"),
    "--target": ("target", "str"),
    "--warmup": ("warmup", "int"),
    "--shard": ("shard", "str"),
    "--resume": ("resume", "flag"),
    "--calibration": ("calibration", "path"),
    "--predictions": ("predictions", "path"),
    "--max-wall": ("max_wall", "str"),
    "--max-cpu-time": ("max_cpu_time", "str"),
    "--max-peak-memory": ("max_peak_memory", "str"),
    "--max-avg-memory": ("max_avg_memory", "str"),
    "--max-latency-max": ("max_latency_max", "str"),
    "--max-latency-p99": ("max_latency_p99", "str"),
    "--max-latency-p95": ("max_latency_p95", "str"),
    "--max-latency-p50": ("max_latency_p50", "str"),
    "--min-throughput": ("min_throughput", "str"),
    "--max-memory-need": ("max_memory_need", "str"),
    "--max-gpu-memory": ("max_gpu_memory", "str"),
    "--max-energy": ("max_energy", "str"),
    "--latency-phase": ("latency_phase", "str"),
    "--squeeze": ("squeeze", "flag"),
    "--budgets": ("budgets_file", "path"),
    "--summary": ("summary", "path"),
    "--junit": ("junit", "path"),
    "--environment": ("environment", "path"),
    "-e": ("environment", "path"),
    "--plots": ("plots", "path"),
    "--html": ("html", "path"),
    "--as-root": ("as_root", "flag"),
    "--no-as-root": ("as_root", "no-flag"),
    "--allow-over-host": ("allow_over_host", "flag"),
    "--executor": ("executor", "str"),
}
"""Every option of ``run`` → (its parameter, how its value is read)."""

DEFAULTS: dict[str, Any] = {
    **{param: None for param, _ in OPTIONS.values()},
    "command": None,
    "backend": "auto",
    "cores_busy": "wait",
    "report_to": "stdout",
    "repeat": "1",
    "warmup": 0,
    **{param: False for param, kind in OPTIONS.values() if kind in ("flag", "no-flag")},
}
"""Each parameter's value when its option is not given (the typer command's defaults)."""

_NOT_PLAIN = object()

BUDGET_PARAMS = {
    "wall": "max_wall",
    "cpu_time": "max_cpu_time",
    "peak_memory": "max_peak_memory",
    "avg_memory": "max_avg_memory",
    "latency_max": "max_latency_max",
    "latency_p99": "max_latency_p99",
    "latency_p95": "max_latency_p95",
    "latency_p50": "max_latency_p50",
    "memory_need": "max_memory_need",
    "gpu_memory": "max_gpu_memory",
    "energy": "max_energy",
    "throughput": "min_throughput",
}
"""Budget metric → the parameter of its ``--max-…``/``--min-…`` option (``run``'s and
``merge``'s)."""

GATE = frozenset({*BUDGET_PARAMS.values(), "budgets_file", "summary", "junit", "html"})
"""``run``'s options that ``merge`` takes over: the gate is the merged sweep's."""

REFUSED_IN_PARTS = {
    "shard": "each part is given its --shard",
    "out": "each part's results go where its engine collects them",
    "json_out": "a part's own output: merge writes the sweep's (edgeprof report renders it)",
    "markdown": "a part's own report: merge writes the sweep's report.md",
    "plots": "a part's own charts: run edgeprof report --plots on the merged sweep",
    "predictions": "a part's own: run edgeprof report --calibration C --predictions FILE on "
    "the merged sweep",
    "cpuset": "it names cores of one machine; each part gets its cores from its engine: "
    "give --cpus",
    "executor": "the recipe's engine runs each part; --executor runs a whole sweep and "
    "takes no --shard",
    "resume": "a part writes where its engine collects it, not into an --out of its own: "
    "a lost part is made again whole",
}
"""``run``'s options a part cannot take, and why."""


def parse(argv: Sequence[str]) -> dict[str, Any] | None:
    """The parameters ``run``'s typer command would give for ``argv`` (the words after
    ``run``), or ``None`` where it must parse them itself.

    As click parses them with ``allow_interspersed_args`` off: options until ``--`` or the
    first word that is not one, and every word after that is the command's; an option's
    value is the next word whatever it starts with; a list option keeps every value, and a
    single-value option given twice, or a boolean pair given both ways, is the typer
    command's to refuse (:mod:`.repeats`)."""
    scanned = _scan(argv)
    if scanned is None:
        return None
    options, command = scanned
    params: dict[str, Any] = {}
    for option in options:
        if option.kind in ("flag", "no-flag"):
            on = option.kind == "flag"
            if params.get(option.param, on) != on:  # --as-root --no-as-root: refused there
                return None
            params[option.param] = on
            continue
        converted = _convert(option.kind, option.value)
        if converted is _NOT_PLAIN:
            return None
        if option.kind == "list":
            params.setdefault(option.param, []).append(converted)
        elif option.param in params:  # given twice: the typer command refuses it (repeats)
            return None
        else:
            params[option.param] = converted
    if command:
        params["command"] = command
    return params


@dataclass(frozen=True)
class _Option:
    param: str
    kind: Kind
    value: str
    """The value as given; ``""`` for a flag."""
    words: list[str]
    """The words it took: the option (``--opt=value``), or the option and its value."""


def _scan(argv: Sequence[str]) -> tuple[list[_Option], list[str]] | None:
    """``argv``'s options in their plain forms and the command after them; ``None`` at the
    first word of another form (an unknown option, ``--flag=x``, a missing value)."""
    options: list[_Option] = []
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            i += 1
            break
        if not word.startswith("-") or word == "-":
            break
        name, eq, value = word.partition("=") if word.startswith("--") else (word, "", "")
        spec = OPTIONS.get(name)
        if spec is None:
            return None
        param, kind = spec
        width = 1 if eq or kind in ("flag", "no-flag") else 2
        if (eq and kind in ("flag", "no-flag")) or i + width > len(argv):
            return None
        if width == 2:
            value = argv[i + 1]
        options.append(_Option(param, kind, value, list(argv[i : i + width])))
        i += width
    return options, list(argv[i:])


def to_words(params: Mapping[str, Any]) -> list[str]:
    """The command line that :func:`parse` reads back as ``params``: each parameter that is
    not its default, under its first (long) option, then ``--`` and the command."""
    words: list[str] = []
    done: set[str] = set()
    for name, (param, kind) in OPTIONS.items():
        if param in done:
            continue
        done.add(param)
        value = params.get(param, DEFAULTS[param])
        if value == DEFAULTS[param] or value is None or value == []:
            continue
        if kind in ("flag", "no-flag"):
            words.append(name)  # True: the default of every flag is False
        elif kind == "list":
            for item in value:
                words += [name, str(item)]
        else:
            words += [name, str(value)]
    return [*words, "--", *(params.get("command") or ())]


def _convert(kind: Kind, value: str) -> object:
    if kind == "int":
        try:
            return int(value)
        except ValueError:
            return _NOT_PLAIN  # typer says why
    if kind == "path":
        return Path(value) if value else _NOT_PLAIN  # "" is no path: typer's to judge
    return value


def run_request(params: Mapping[str, Any]) -> RunRequest:
    """The request ``params`` make (any not given take :data:`DEFAULTS`); unchecked."""
    from ..sweeps.request import RunRequest

    p = {**DEFAULTS, **params}
    return RunRequest(
        command=tuple(p["command"] or ()),
        backend=p["backend"],
        cpus=tuple(p["cpus"] or ()),
        cpuset=tuple(p["cpuset"] or ()),
        memory=tuple(p["memory"] or ()),
        pids=p["pids"],
        read_bps=tuple(p["read_bps"] or ()),
        write_bps=tuple(p["write_bps"] or ()),
        read_iops=tuple(p["read_iops"] or ()),
        write_iops=tuple(p["write_iops"] or ()),
        gpus=p["gpus"],
        gpu_memory=p["gpu_memory"],
        cpu_period=p["cpu_period"],
        interval=p["interval"],
        timeout=p["timeout"],
        kill_grace=p["kill_grace"],
        env=tuple(p["env"] or ()),
        cwd=p["cwd"],
        out=p["out"],
        name=p["name"],
        cgroup_parent=p["cgroup_parent"],
        image=p["image"],
        docker_args=p["docker_args"],
        base_image=p["base_image"],
        apt=tuple(p["apt"] or ()),
        pip=tuple(p["pip"] or ()),
        prerun=tuple(p["prerun"] or ()),
        env_dir=p["env_dir"],
        dockerfile=p["dockerfile"],
        models=p["model_list"],
        model_file=p["model_file"],
        repeat=p["repeat"],
        min_runs=p["min_runs"],
        max_runs=p["max_runs"],
        target=p["target"],
        warmup=p["warmup"],
        shard=p["shard"],
        resume=p["resume"],
        calibration=p["calibration"],
        budgets=budget_values(p),
        budgets_file=p["budgets_file"],
        environment=p["environment"],
        as_root=p["as_root"],
        cores_busy=p["cores_busy"],
        device=p["device"],
        devices=p["devices"],
        squeeze=p["squeeze"],
        allow_over_host=p["allow_over_host"],
    )


def budget_values(params: Mapping[str, Any]) -> dict[str, str | None]:
    """The ``--max-…`` options' values by metric (``None`` where not given); ``--gpu-memory``
    is the GPU memory budget where ``--max-gpu-memory`` is not given."""
    values = {metric: params.get(param) for metric, param in BUDGET_PARAMS.items()}
    values["latency_phase"] = params.get("latency_phase")  # budgets.PHASE_KEY
    if values["gpu_memory"] is None and params.get("gpu_memory") is not None:
        gpu = str(params["gpu_memory"]).strip()
        # A limit may be bare bytes, which a budget refuses as a unit left out: said as bytes.
        values["gpu_memory"] = f"{gpu}b" if gpu.isascii() and gpu.isdigit() else gpu
    return values


def execute(params: Mapping[str, Any]) -> int:
    """Run as ``params`` say (any not given take :data:`DEFAULTS`) and report; the exit
    code (:func:`edgeprof.cli.outcome.runs_exit_code`)."""
    from ..report.run import RunOutputs, run_and_report
    from .outcome import runs_exit_code

    p = {**DEFAULTS, **params}
    request = run_request(p)
    if p["executor"] is not None:
        return _on_executor(p)
    outputs = RunOutputs(
        markdown=p["markdown"],
        summary=p["summary"],
        junit=p["junit"],
        plots=p["plots"],
        html=p["html"],
        predictions=p["predictions"],
        json_out=p["json_out"],
        report_to=p["report_to"],
    )
    report = run_and_report(request, outputs, sys.stdout, sys.stderr)
    return runs_exit_code(report.results, report.breached)


def _on_executor(p: Mapping[str, Any]) -> int:
    """``--executor``: the sweep's rounds as parts on a cluster, merged into ``--out``."""
    from ..report.distributed import run_on_executor
    from ..report.run import RunOutputs, check_report_to
    from .outcome import runs_exit_code

    for name, (param, _) in OPTIONS.items():
        refused = param in REFUSED_IN_PARTS and param not in ("out", "executor")
        if refused and p[param] not in (None, False, []):
            raise ConfigError(f"{name} with --executor: {REFUSED_IN_PARTS[param]}")
    # --report-to is where this machine prints the merged sweep's tables: no part's option.
    part = {k: v for k, v in p.items() if k not in GATE | {"executor", "out", "report_to"}}
    outputs = RunOutputs(
        summary=p["summary"], junit=p["junit"], html=p["html"], report_to=p["report_to"]
    )
    check_report_to(outputs)
    stdout = sys.stderr if outputs.report_to == "stderr" else sys.stdout
    runs, breached = run_on_executor(
        p["executor"], run_request(p), to_words(part), outputs, stdout, sys.stderr
    )
    return runs_exit_code(runs, breached)


def split_for_parts(
    argv: Sequence[str],
) -> tuple[list[str], list[str], list[str], dict[str, Any]]:
    """``run``'s words → (a part's options, the workload, the options ``merge`` takes, and
    the parameters of them all, as :func:`parse` reads them)."""
    scanned, params = _scan(argv), parse(argv)
    if scanned is None or params is None:
        raise ConfigError(
            f"edgeprof run cannot read the options of {' '.join(argv)!r}: "
            "edgeprof run --help lists them"
        )
    found, command = scanned
    options: list[str] = []
    gate: list[str] = []
    for option in found:
        if option.param in REFUSED_IN_PARTS:
            raise ConfigError(
                f"{option.words[0].partition('=')[0]} in a part of a sweep: "
                f"{REFUSED_IN_PARTS[option.param]}"
            )
        (gate if option.param in GATE else options).extend(option.words)
    implied = budget_values(params)["gpu_memory"]
    if implied is not None and params.get("max_gpu_memory") is None:
        # --gpu-memory is also run's GPU memory budget (budget_values): merge gates on it.
        gate.extend(["--max-gpu-memory", implied])
    if not command:
        raise ConfigError(
            "no workload: give edgeprof run's options, then -- and the command, e.g. "
            "-- --cpus 1 --memory 1g --repeat 6 -- python infer.py"
        )
    return options, command, gate, params
