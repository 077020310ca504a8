"""Options that several commands declare alike."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

EnvItems = Annotated[
    list[str] | None,
    typer.Option("--env", "-E", help="KEY=VALUE for the workload; repeatable."),
]
CalibrationFile = Annotated[
    Path | None,
    typer.Option(help="A calibration file (edgeprof calibrate): add predicted device values."),
]
CpuPeriod = Annotated[
    str | None,
    typer.Option(
        help="CFS period of the --cpus quota, e.g. 10ms (default: 5ms for a share that can "
        "stall, lengthened to keep the kernel's 1ms minimum quota; 100ms otherwise)."
    ),
]
DeviceName = Annotated[
    str | None,
    typer.Option(
        help="A catalog device (edgeprof devices): its cores, memory and speed as limits; "
        "--cpus, --memory, --cpu-period given as well replace the device's values."
    ),
]
DevicesFile = Annotated[
    Path | None,
    typer.Option(
        help="A device catalog (YAML) merged over the shipped one and $EDGEPROF_DEVICES."
    ),
]
