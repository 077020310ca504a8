"""What a report says of the files it reads beside runs: a fit's directory
(:func:`fit_note`, the page's banner :func:`answer_kind`), the per-layer profiles it
skips (:func:`skipped_profiles`) and the files found that are no readable results
(:func:`skipped_note`); split from :mod:`edgeprof.report.saved` at 521 lines."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..analysis.cells import cell_name, cells
from ..errors import ConfigError
from ..measure.growth import rate
from ..model import MemoryGrowth, RunResult
from ..resultdirs import walk_dirs
from ..resultfiles import load_fits
from ..storage import layers_profile_note
from ..units import format_binary


def read_together(paths: Sequence[Path], runs_of: Sequence[Sequence[RunResult]]) -> str | None:
    """What ``report A B`` says where the paths' runs share cells (``runs_of``: each path's
    runs): they are pooled as one cell's repeats, as a directory holding both is (whose
    note :func:`~edgeprof.report.saved.pooled` makes); two sweeps given by name had been
    pooled into one ``n=7`` with no word (a user's)."""
    if len(paths) < 2:
        return None
    seen: dict[tuple[str, str], set[int]] = {}
    for i, runs in enumerate(runs_of):
        for key in cells(runs):
            seen.setdefault(key, set()).add(i)
    shared = [cell_name(k) for k, where in seen.items() if len(where) > 1]
    if not shared:
        return None
    more = f" and {len(shared) - 3} more" if len(shared) > 3 else ""
    return (
        f"{', '.join(map(str, paths))} share {len(shared)} model/limits "
        f"cell{'s' if len(shared) > 1 else ''} ({', '.join(shared[:3])}{more}): their runs "
        "are pooled, cell by cell; report one of them to hold them apart, or compare them"
    )


def skipped_profiles(paths: Sequence[Path]) -> str | None:
    """The line naming the per-layer profiles (``edgeprof layers``' YAML) in the directories
    of ``paths``, which ``report`` does not read: beside result files they had been skipped
    in silence (a directory of profiles alone is an error that names them)."""
    # The directories a report reads (a whole tree had been searched for YAML: `report ~`).
    found = [
        p
        for d in paths
        if d.is_dir()
        for p in sorted(q for w, _ in walk_dirs(d) for q in w.glob("*.y*ml"))[:100]
        if layers_profile_note(p) is not None
    ]
    if not found:
        return None
    if len(found) == 1:
        return f"skipped a per-layer profile: {layers_profile_note(found[0])}"
    names = ", ".join(map(str, found[:4]))
    names += f" and {len(found) - 4} more" if len(found) > 4 else ""
    return (
        f"skipped {len(found)} per-layer profiles from `edgeprof layers`, not run results "
        f"({names}): `edgeprof layers export models|device-types -i FILE` reads each"
    )


def fits_of(path: Path) -> list[dict[str, object]] | None:
    """The fits ``path`` holds, ``None`` where it holds none or cannot be read as one: the
    runs' reader then says what is wrong with it, in its own words."""
    try:
        return load_fits(path)
    except ConfigError:
        return None


def fit_note(path: Path, doc: dict[str, object]) -> str:
    """What the runs of a fit's directory are: its unlimited runs ran under the cap fit sets
    (what the host had available), which their rows show as a memory limit, and the answer
    the probes found (``report`` of a fit's directory had shown the cap as if a device's)."""
    ref = doc.get("reference")
    cap = ref.get("memory_cap_bytes") if isinstance(ref, dict) else None
    answer, extra = doc.get("min_memory_bytes"), doc.get("recommended_bytes")
    said = (
        f"smallest memory {format_binary(answer)}"
        + (f" ({format_binary(extra)} with its margin)" if isinstance(extra, int) else "")
        if isinstance(answer, int)
        else f"no answer ({doc.get('stopped') or 'nothing up to the ceiling fits'})"
    )
    said += _on_device(doc, answer)
    capped = (
        f"; its unlimited runs are the rows at memory={format_binary(cap)}, the cap fit sets "
        "(the room this host had), not a device's limit"
        if isinstance(cap, int)
        else ""
    )
    g = fit_growth(doc)
    if g is not None and isinstance(answer, int):
        said += f", for this run's length only: its memory was still growing ({rate(g)})"
    return f"{path} is edgeprof fit's {doc.get('name')}: {said}{capped}"


def _on_device(doc: Mapping[str, object], answer: object) -> str:
    """What fit's verdict held the answer to, where it is more than the answer: the device's
    need (the files the run mapped that other groups had cached: its own memory on a
    device) and whether it fits the ceiling with its margin.  A user's report of a fit read
    "smallest memory 412.7MiB (495.2MiB with its margin)" where fit had said 497.9 MiB on
    a device, 580.5 MiB with the margin, over the 512 MiB board."""
    need, ceiling = doc.get("device_need_bytes"), doc.get("ceiling_bytes")
    out = ""
    if isinstance(need, int) and isinstance(answer, int) and need > answer:
        out += (
            f"; {format_binary(need)} on a device, with the files it mapped that were cached "
            "before it"
        )
    if not isinstance(ceiling, int):
        return out
    if doc.get("fits") is False:
        return out + f"; it does not fit in {format_binary(ceiling)}"
    if doc.get("fits_with_margin") is False:
        return out + f"; it fits in {format_binary(ceiling)} only without its margin"
    return out


def fit_growth(doc: Mapping[str, Any]) -> MemoryGrowth | None:
    """fit.json's ``memory_growth``, ``None`` where it is null, absent (a file written
    before it) or not the shape edgeprof writes (a hand-edited file is no reason to fail
    a report).  ``page_cache`` is a boolean where present."""
    g = doc.get("memory_growth")
    if not isinstance(g, dict):
        return None
    names = [f.name for f in dataclasses.fields(MemoryGrowth) if f.name != "page_cache"]
    if not all(_number(g.get(k)) or (k == "per_iteration" and g.get(k) is None) for k in names):
        return None
    if not isinstance(g.get("page_cache", True), bool):  # absent: a file written before it
        return None
    return MemoryGrowth.from_dict(g)


def _number(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def answer_kind(fit: Mapping[str, Any]) -> str:
    """A fit's banner on the page: ``pass`` with an answer (``warn`` where its memory was
    still growing: :func:`fit_growth`), ``warn`` where the search
    stopped before one (interrupted: ``fits`` is ``null``, which had been a red "does not
    fit"-like banner), ``fail`` where none fits."""
    if isinstance(fit.get("min_memory_bytes"), int):
        # An answer for this run's length only (the unlimited runs' memory still grew) is
        # no plain pass: a longer run needs more.
        return "warn" if fit_growth(fit) is not None else "pass"
    return "warn" if fit.get("fits") is None and fit.get("stopped") else "fail"


def read_again_note(count: int) -> str:
    """That ``count`` runs were read more than once and are counted once
    (:func:`~edgeprof.resultfiles.once`)."""
    return (
        f"{count} run(s) were read more than once (a result given twice, or found beside a "
        "copy of it): each is counted once"
    )


def skipped_note(unread: Sequence[tuple[Path, str]]) -> str:
    """The note under a report's tables (and in its Markdown and page) naming the files
    found that were no readable results, each with why (``unread``: the file and its one
    line): a saved report silent of them would read as all the runs there were, and one
    that said "(why: edgeprof's stderr)" sent its readers to an output long gone."""
    shown = "; ".join(why for _, why in unread[:4])
    if len(unread) > 4:
        shown += f"; and {len(unread) - 4} more (edgeprof's stderr names them)"
    return (
        f"{len(unread)} result file(s) found could not be read and are not in these figures: "
        f"{shown}"
    )
