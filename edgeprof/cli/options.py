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
