"""``calibrate`` says when its profiled runs were held off their CPUs by other tasks (their
times, so its slopes and implied speed, were the busy host's: the tutorial's half-core
stand-in read as 1.15 CPUs of the host), and its warnings never print an equal-looking
comparison as "greater" (the tutorial's "leverage 0.90 > 0.90")."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from edgeprof.analysis.calibration import calibrate, load_calibration, read_measurements
from edgeprof.analysis.calibration.fit import fit, fit_warnings
from edgeprof.model import RunResult
from edgeprof.report.calibration import render_calibration

from .test_calibration import _csv, _run

DEVICE = "model,runtime_ms\nm0,3100\nm1,5900\nm2,9200\nm3,11800\n"


def _held(r: RunResult, share: float) -> RunResult:
    # Its CPU time what the others left it: no more than its CPUs give in the rest.
    cpu = dataclasses.replace(
        r.cpu, held_s=share * r.wall_s, throttled_s=0.0, total_s=(1 - share) * r.wall_s
    )
    return dataclasses.replace(r, cpu=cpu)


def _runs(shares: tuple[float, ...]) -> list[RunResult]:
    return [
        _held(_run(f"m{i}", x), s)
        for i, (x, s) in enumerate(zip((1.0, 2.0, 3.0, 4.0), shares, strict=True))
    ]


def test_calibrate_warns_when_its_runs_were_contended(tmp_path: Path) -> None:
    m = read_measurements(_csv(tmp_path, DEVICE))
    cal = calibrate(_runs((0.5, 0.52, 0.0, 0.48)), m, "half-core")
    said = (
        "other tasks on this host held 3 of 4 runs of the matched models off their CPUs, up to "
        "52% of a run's wall time (1.04s): their times are longer than this host's own, so a "
        "time fit's slope is too small and the implied speed too high (profile on an idle "
        "host, or on --cpuset CPUs nothing else uses)"
    )
    assert cal.contended == said
    text = render_calibration(cal).splitlines()
    assert text[1] == f"  warning: {said}"
    speed = next(i for i, ln in enumerate(text) if ln.startswith("Implied speed"))
    assert (
        text[speed + 1] == "  warning: from runs other tasks held off their CPUs (above): too high"
    )
    # The file keeps it: a calibration read back says what it was made from.
    cal.save(tmp_path / "c.yml")
    assert load_calibration(tmp_path / "c.yml").contended == said


def test_calibrate_of_idle_runs_says_nothing(tmp_path: Path) -> None:
    m = read_measurements(_csv(tmp_path, DEVICE))
    # Under a tenth of each run's wall time, as run warns.
    cal = calibrate(_runs((0.05, 0.0, 0.09, 0.0)), m, "d")
    assert cal.contended is None
    assert "off their CPUs" not in render_calibration(cal)
    cal.save(tmp_path / "c.yml")
    assert "contended" not in (tmp_path / "c.yml").read_text()


def test_a_leverage_just_over_the_cap_is_shown_over_it() -> None:
    # Four points, the last at leverage 0.9015 against the 0.9 cap: it had read "0.90 > 0.90".
    xs = [1.0, 2.0, 3.0, 6.2]
    f = fit(xs, [2 * x + 0.1 * (-1) ** i for i, x in enumerate(xs)], ["a", "b", "c", "d"])
    assert abs(f.leverage[3] - 0.9015) < 1e-4
    (said,) = fit_warnings(f, "s", "time")
    assert said.startswith("d dominates the fit (leverage 0.902 > 0.900, Cook's distance 0.56)")


def test_apart_adds_the_digits_that_tell_two_figures_apart() -> None:
    from edgeprof.analysis.calibration.fit import apart

    assert apart(0.93, 0.9) == ("0.93", "0.90")  # already apart: as before
    assert apart(0.9012, 0.9) == ("0.901", "0.900")
    assert apart(0.90004, 0.9) == ("0.90004", "0.90000")
    assert apart(0.8996, 0.9, 3) == ("0.8996", "0.9000")  # an R² just under --min-r2 0.9


def _speed_text(tmp_path: Path, device_csv: str) -> list[str]:
    m = read_measurements(_csv(tmp_path, device_csv))
    cal = calibrate([_run(f"m{i}", x) for i, x in enumerate((1.0, 2.0, 3.0, 4.0))], m, "pi")
    text = render_calibration(cal).splitlines()
    speed = next(i for i, ln in enumerate(text) if ln.startswith("Implied speed"))
    return text[speed : speed + 2]


def test_an_implied_speed_no_device_has_is_named_a_unit_slip(tmp_path: Path) -> None:
    # Seconds under runtime_ms (a tester's Pi read as 309 CPUs of an EPYC, with no warning):
    # 3.1 s → "3.1": the device about 1000/3 times faster than the 1 CPU the runs used.
    head, said = _speed_text(tmp_path, "model,runtime_ms\nm0,3.1\nm1,5.9\nm2,9.2\nm3,11.8\n")
    assert head.startswith("Implied speed: the device ≈ 334 CPUs of the profiling host")
    assert said == (
        "  warning: the implied speed is not a device's: slope 0.00299 makes the device 334 "
        "times faster than the 1 CPU of this host the workloads used (runtime [cpus=1, "
        "memory=1.0GiB]); a unit slip does this (seconds or microseconds under 'runtime_ms' "
        "give a factor of 1000): check that column's unit"
    )
    # Microseconds under runtime_ms: 1000 times slower than the host.
    _, said = _speed_text(tmp_path, "model,runtime_ms\nm0,3100000\nm1,5900000\nm2,9200000\n")
    assert "slope 3050 makes the device 3,050 times slower than the 1 CPU" in said
    # The tutorial's half-core stand-in (about 3 times slower) says nothing.
    assert not _speed_text(tmp_path, DEVICE)[1].startswith("  warning:")


def test_a_falling_time_fit_says_it_implies_no_speed(tmp_path: Path) -> None:
    """``calibrate`` of a device slower on the host's faster models had said nothing of a
    speed; the catalog's ``speed: calibration`` and ``run`` refused it later (a user's)."""
    head, _ = _speed_text(tmp_path, "model,runtime_ms\nm0,60\nm1,55\nm2,40\nm3,30\n")
    assert head.startswith(
        "Implied speed: none: its time fits' slopes are not above 0 (runtime [cpus=1, "
        "memory=1.0GiB] -"
    )
    assert head.endswith("calibrate again from runs under --cpus on an idle host")
