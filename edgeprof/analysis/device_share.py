"""A device's CPU share on this host: its cores times its speed, within what edgeprof can
set (``--cpus`` from 0.01 to the cores: a faster core cannot be emulated)."""

from __future__ import annotations

LEAST_CPUS = 0.01
"""The smallest ``--cpus`` (:func:`edgeprof.cpu_units.parse_cpus`): a slower device is run at it."""


def below_least(what: str, cpus: float) -> list[str]:
    """A device slower than :data:`LEAST_CPUS` runs at it: faster than the device, said
    (``speed: 0.0001`` was raised to 0.01 in silence)."""
    if cpus >= LEAST_CPUS:
        return []
    return [
        f"{what} {cpus:.3g} CPUs, below the least share edgeprof sets ({LEAST_CPUS:g}): the "
        "run is faster than the device"
    ]


def share_of(cores: int, speed: float) -> tuple[float, bool]:
    """The ``--cpus`` of ``cores`` device cores at ``speed`` (a host core = 1): ``cores ×
    speed``, capped at ``cores`` (a faster core cannot be emulated); and whether it was
    capped.  Rounded to 1/1000 CPU (a quota in µs of a ms-scale period)."""
    wanted = cores * speed
    if wanted > cores:
        return float(cores), True
    return max(round(wanted, 3), LEAST_CPUS), False
