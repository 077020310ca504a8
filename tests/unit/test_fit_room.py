"""The room ``edgeprof fit`` leaves above the floor rests on what the kernel counted, not on
how far sampling missed (:func:`fit_bounds.held_over_floor`).

A tester's eager torch script: floors 311.5 / 353.6 / 369.3 MiB read at 0.1 s, kernel peaks
373.4 / 369.4 / 369.5 MiB.  The floors' spread had made 62.5 MiB of room and an answer of
431.7 MiB ("does not fit in 512.0MiB: 5.3MiB short", exit 3), where ``run --memory 380m``
completed 3 runs of 3."""

from __future__ import annotations

import dataclasses

from edgeprof.analysis.fit_bounds import MIB, PAGE, allowance, bounds, held_over_floor, slack
from edgeprof.analysis.headroom import stat_lag
from edgeprof.analysis.need import search
from edgeprof.model import RunResult

from .test_memory_need import mem, run

KIB = 1024
CPUS = 4
"""The fake results' host (``make_result``)."""
LAG = stat_lag(CPUS)


def _run(peak: int, floor: int, source: str = "kernel") -> RunResult:
    r = run(memory=mem(peak=peak, floor=floor))
    return dataclasses.replace(r, memory=dataclasses.replace(r.memory, peak_source=source))


def _pages(mib: float) -> int:
    return int(mib * MIB) // PAGE * PAGE


# The tester's eager runs, to the page: the warm-up first, then the two reference runs.
EAGER_WARMUP = _run(_pages(373.4375), _pages(311.4921875))
EAGER_REFERENCE = [
    _run(_pages(369.51953125), _pages(369.26171875)),
    _run(_pages(369.44921875), _pages(353.5859375)),
]


def test_a_floor_spread_sampling_made_is_capped_at_the_kernels_highest_peak() -> None:
    b = bounds(EAGER_REFERENCE, 512 * MIB, None, [EAGER_WARMUP])
    assert b.floor == _pages(369.26171875)
    # 369.51953125 - 369.26171875 MiB: what a measured run held over the floor, by its kernel
    # peak; the floors' spread (the warm-up's among them) was 57.8 MiB.  The warm-up's own
    # peak, 373.4 MiB, counts the files it read cold: no cap.
    assert held_over_floor(EAGER_REFERENCE, b.floor, [EAGER_WARMUP]) == 264 * KIB
    assert b.allowance == slack(b.floor) + 264 * KIB + LAG == 3784 * KIB + 264 * KIB + 2 * MIB
    # The search starts at the measured runs' highest peak with the slack and a reading's lag
    # over it: a limit the runs' own memory leaves the slack under (it was 431.7 MiB).
    assert b.low == _pages(369.51953125) + slack(b.floor) + LAG == 384220 * KIB  # 375.2 MiB
    assert b.low < 380 * MIB  # where the tester's `run --repeat 3` completed 3 of 3
    asked: list[int] = []

    def probe(limit: int) -> bool:
        asked.append(limit)
        return limit >= _pages(369.51953125) + slack(b.floor)  # leaves the slack over the peak

    assert search(b, probe).answer == b.low and asked == [b.low]


def test_a_warm_ups_cold_peak_is_no_cap_on_the_room() -> None:
    """A verifier's eager fit: the warm-up read the model cold (floor 351.0 MiB, peak 454.7
    MiB), the measured runs' peaks reached 370.6 MiB.  The warm-up's peak had let the whole
    18.3 MiB spread through: 23.0 MiB of room, a search from 392.3 MiB."""
    warmup = _run(_pages(454.7), _pages(351.0))
    reference = [_run(_pages(370.6), _pages(369.3)), _run(_pages(370.4), _pages(365.0))]
    b = bounds(reference, 512 * MIB, None, [warmup])
    assert held_over_floor(reference, b.floor, [warmup]) == _pages(370.6) - _pages(369.3)
    assert held_over_floor([warmup, *reference], b.floor) == _pages(369.3) - _pages(351.0)
    assert b.low == _pages(370.6) + slack(b.floor) + LAG


def test_the_onnx_models_room_is_capped_the_same_way() -> None:
    """fp32: floors 145.0 / 152.7 / 186.7 MiB, kernel peaks 200.8 / 200.6 / 200.7 MiB; the
    room had been 44.5 MiB and the answer 231.2, where ``run --memory 206m`` completed 3 of
    3."""
    warmup = _run(_pages(200.8046875), _pages(145.04296875))
    reference = [_run(_pages(200.58203125), _pages(152.68359375)),
                 _run(_pages(200.6953125), _pages(186.6875))]  # fmt: skip
    b = bounds(reference, None, None, [warmup])
    assert held_over_floor(reference, b.floor, [warmup]) == _pages(200.6953125) - b.floor
    assert b.low == _pages(200.6953125) + slack(b.floor) + LAG
    assert b.low < 206 * MIB


def test_floors_that_agree_keep_their_spread_beside_a_peak_of_page_cache() -> None:
    """A first run that read its model file cold charged it to its peak (a tester's sweep:
    111.7 MiB of page cache); its floor is the others'.  The peaks' spread would have made
    that cache room: the floors' 16 KiB stand."""
    own = 100 * MIB
    runs = [_run(own + 112 * MIB, own), _run(own + MIB, own + 16 * KIB), _run(own + MIB, own)]
    assert held_over_floor(runs, own + 16 * KIB) == 16 * KIB
    assert allowance(runs, own + 16 * KIB) == slack(own + 16 * KIB) + 16 * KIB + LAG


def test_without_the_kernels_peak_in_every_run_the_floors_spread_stands() -> None:
    """A sampled peak can miss as the floor does: it bounds nothing."""
    runs = [_run(200 * MIB, 150 * MIB), _run(200 * MIB, 190 * MIB, source="sampled")]
    assert held_over_floor(runs, 190 * MIB) == 40 * MIB
    kernel = [_run(200 * MIB, 150 * MIB), _run(200 * MIB, 190 * MIB)]
    assert held_over_floor(kernel, 190 * MIB) == 10 * MIB
    unknown = [_run(200 * MIB, 150 * MIB), run(memory=mem(peak=None, floor=190 * MIB))]
    assert held_over_floor(unknown, 190 * MIB) == 40 * MIB


def test_a_floor_over_every_peak_leaves_no_room_for_a_spread() -> None:
    """A reading may lag above the kernel's peak (the lag is in the room on its own): the
    spread is then none, never negative."""
    runs = [_run(100 * MIB, 96 * MIB), _run(100 * MIB, 100 * MIB + 8 * KIB)]
    assert held_over_floor(runs, 100 * MIB + 8 * KIB) == 0
    assert held_over_floor([], 100 * MIB) == 0
    assert held_over_floor([run(memory=mem(floor=None))], 100 * MIB) == 0
