"""Which GPUs a run may use (``--gpus``): the selection's form, the GPUs it names among
those edgeprof was given, the workload's view of them, and the run's
:class:`~edgeprof.measure.gpu.GpuWatch` opened on them."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence

from ..backends.nvml import GpuInfo, NoNvidiaDriver, Nvml, NvmlUnavailable
from ..errors import ConfigError
from .gpu import GpuWatch

SELECTION_HELP = (
    "all, none, a count (2: the first two), or GPUs by index or UUID (device=1, 0,2, GPU-…)"
)
_ID = r"(?:\d+|GPU-[\w/-]+)"
_SELECTION = re.compile(rf"all|none|\d+|(?:device=)?{_ID}(?:,{_ID})*")
"""A GPU is named by NVML's index or its UUID (``GPU-…``)."""
MIG_REFUSED = (
    "a MIG slice (MIG-…) cannot be measured: NVML lists whole GPUs, and gives a slice "
    "neither utilisation nor per-process samples; name its GPU (GPU-… or an index)"
)


def check_selection(text: str) -> str:
    """``--gpus`` as given, checked for its form (the GPUs themselves at the run)."""
    t = text.strip()
    if "MIG-" in t:
        raise ConfigError(f"--gpus {text!r}: {MIG_REFUSED}")
    if not _SELECTION.fullmatch(t):
        raise ConfigError(f"--gpus {text!r}: expected {SELECTION_HELP}")
    return t


def select_gpus(text: str | None, gpus: Sequence[GpuInfo]) -> list[GpuInfo]:
    """The GPUs ``--gpus`` names among ``gpus`` (``None``: every one)."""
    if text is None or text == "all":
        return list(gpus)
    if text == "none":
        return []
    if text.isdigit():  # a count, as docker run --gpus 2
        n = int(text)
        if not 1 <= n <= len(gpus):
            # Suggest an index that is here: under an inherited CUDA_VISIBLE_DEVICES=1 the
            # hint device=0 named a GPU the next try refused.
            numbers = [g.number for g in gpus]
            hint = (
                f"one GPU by its index is device={text}"
                if n in numbers
                else "one GPU by its index is " + " or ".join(f"device={i}" for i in numbers)
            )
            raise ConfigError(f"--gpus {text}: a count of GPUs ({len(gpus)} visible here); {hint}")
        return list(gpus[:n])
    chosen: list[GpuInfo] = []
    for word in text.removeprefix("device=").split(","):
        found = [g for g in gpus if (word.isdigit() and g.number == int(word)) or g.uuid == word]
        if not found:
            known = ", ".join(f"{g.number} ({g.uuid})" for g in gpus) or "none"
            raise ConfigError(f"--gpus: no GPU {word!r} here (GPUs: {known})")
        if found[0] not in chosen:
            chosen.append(found[0])
    return chosen


NVIDIA_MAJOR = 195
"""The character-device major of ``/dev/nvidia<minor>`` and ``/dev/nvidiactl`` (the driver's
``NV_MAJOR_DEVICE_NUMBER``)."""


def denied_devices(text: str | None, others: Sequence[GpuInfo]) -> tuple[str, ...]:
    """The device files a run with ``--gpus text`` may not open, as the kernel's device rules
    (``c MAJOR:MINOR``): the GPUs not chosen; with ``none`` every NVIDIA device (so CUDA
    cannot start at all).  Nothing without ``--gpus``."""
    if text is None:
        return ()
    if text == "none":
        return (f"c {NVIDIA_MAJOR}:*",)
    return tuple(f"c {NVIDIA_MAJOR}:{g.minor}" for g in others if g.minor is not None)


def visible_devices(text: str | None, chosen: Sequence[GpuInfo]) -> dict[str, str]:
    """The environment that shows the workload only the chosen GPUs (CUDA numbers them from
    0 in this order); nothing without ``--gpus``, so the workload sees what it would."""
    if text is None:
        return {}
    return {"CUDA_VISIBLE_DEVICES": ",".join(g.uuid for g in chosen)}


def inherited(gpus: Sequence[GpuInfo], environ: Mapping[str, str]) -> list[GpuInfo]:
    """The GPUs edgeprof itself was given: those its ``CUDA_VISIBLE_DEVICES`` names (a Ray
    task's, a Slurm job's), in that order, up to the first entry that names none (where CUDA
    stops too); every GPU NVML lists without the variable.  NVML ignores the variable, so
    without this a part given GPU 3 would measure GPU 0.  An index counts in NVML's order
    (PCI bus order), which is CUDA's where ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` or the GPUs are
    alike; a UUID is exact."""
    listed = environ.get("CUDA_VISIBLE_DEVICES")
    if listed is None:
        return list(gpus)
    out: list[GpuInfo] = []
    for word in (w.strip() for w in listed.split(",")):
        found = [g for g in gpus if str(g.number) == word or g.uuid == word or
                 (word.startswith(("GPU-", "MIG-")) and g.uuid.startswith(word))]  # fmt: skip
        if not found:
            break
        if found[0] not in out:
            out.append(found[0])
    return out


def given_gpus(
    selection: str | None, watch: GpuWatch | None, on_host: bool
) -> tuple[dict[str, str], tuple[str, ...] | None, tuple[str, ...]]:
    """What a run is given of ``--gpus``: its environment (a host backend's workload), the
    chosen GPUs' UUIDs (``None``: not asked; the Docker backend requests them) and the device
    rules it is denied (a host backend's)."""
    if selection is None:
        return {}, None, ()
    chosen = [] if watch is None else watch.gpus
    ids = tuple(g.uuid for g in chosen)
    if not on_host:
        return {}, ids, ()
    denied = denied_devices(selection, [] if watch is None else watch.others)
    return visible_devices(selection, chosen), ids, denied


def undenied_warning(selection: str, backend: str) -> str:
    return (
        f"the GPUs --gpus {selection} did not choose are hidden from CUDA only "
        f"(CUDA_VISIBLE_DEVICES): the {backend} backend cannot deny their device files here "
        "(cgroup v1's devices controller and cgroup v2's BPF device filter do)"
    )


def open_watch(
    selection: str | None,
    *,
    lib_loader: Callable[[], Nvml] = Nvml,
    said: list[str] | None = None,
) -> GpuWatch | None:
    """The run's GPUs, or ``None``: without ``--gpus``, none where NVML is unavailable or
    lists no GPU (a CPU host: nothing to say; where a driver is here but NVML failed, a line
    in ``said``); with ``--gpus``, that is a ConfigError naming why, and ``--gpus none``
    measures nothing."""
    if selection == "none":
        return None
    try:
        nvml = lib_loader()
    except NvmlUnavailable as exc:
        if selection is None:
            if said is not None and not isinstance(exc, NoNvidiaDriver):
                # A driver whose GPUs went unread had left a run silent (a GPU-less user's
                # host with the driver's files but no NVML library).
                said.append(f"no GPU was measured: an NVIDIA driver is here, but {exc}")
            return None
        raise ConfigError(f"--gpus {selection}: {exc}") from None
    try:
        listed = nvml.devices()
        gpus = inherited(listed, os.environ)
        if not gpus:
            if selection is None:
                nvml.close()
                return None
            given = os.environ.get("CUDA_VISIBLE_DEVICES")
            where = "" if given is None else f" (this process's CUDA_VISIBLE_DEVICES={given!r})"
            raise ConfigError(f"--gpus {selection}: no GPU is visible here{where}")
        chosen = select_gpus(selection, gpus)
        return GpuWatch(nvml, chosen, selection, others=[g for g in listed if g not in chosen])
    except BaseException:
        nvml.close()
        raise


def measures_no_gpu(budgets: Sequence[str]) -> None:
    """Refuse GPU ``budgets`` (:func:`edgeprof.analysis.budgets.gpu_budgets`) beside
    ``--gpus none``, which hides every GPU: the run could only fail them as not measured,
    and that failure had sent the user to ``doctor`` to find the GPUs they had hidden
    themselves (a GPU-less user's)."""
    if budgets:
        them = "it" if len(budgets) == 1 else "them"
        raise ConfigError(
            f"--gpus none measures no GPU, so {' and '.join(budgets)} could only fail as not "
            f"measured: leave {them} out, or give --gpus the GPUs to measure"
        )


def check_gpus(selection: str) -> None:
    """``--gpus`` checked against this host's GPUs (NVML opened and closed): a ConfigError
    line where it names what is not here."""
    watch = open_watch(selection)
    if watch is not None:
        watch.close()
