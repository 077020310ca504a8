"""The device catalog (edgeprof.analysis.devices), --device on run, and edgeprof devices."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from edgeprof.analysis.calibration import calibrate, load_calibration, read_measurements
from edgeprof.analysis.calibration.speed import Slope, implied_speed
from edgeprof.analysis.device_names import calibrated_devices, calibration_device_notes
from edgeprof.analysis.device_setting import device_setting, resolve_device
from edgeprof.analysis.device_share import share_of
from edgeprof.analysis.devices import (
    DEVICES_ENV,
    builtin_catalog,
    catalog_paths,
    find_device,
    load_catalog,
    parse_catalog,
)
from edgeprof.analysis.headroom import limit_fit
from edgeprof.analysis.similar import similar_devices
from edgeprof.cli import main
from edgeprof.errors import ConfigError
from edgeprof.measure.limits import THREAD_VARS
from edgeprof.model import HostInfo, Limits, RunResult
from edgeprof.report.memory import headroom
from edgeprof.resultfiles import load_runs
from tests.unit.fuzz_strategies import fuzz

from .test_calibration import _calibration, _csv, _run

RUN = ["run", "--backend", "fake", "--interval", "0.01"]
GIB = 2**30
HOST = HostInfo(kernel="6.1.0", cpus=4, cpu_model="Test CPU", hostname="h")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DEVICES_ENV, raising=False)
    for v in THREAD_VARS:
        monkeypatch.delenv(v, raising=False)


def _catalog(tmp_path: Path, body: str, name: str = "devices.yml") -> Path:
    p = tmp_path / name
    p.write_text("devices:\n" + body)
    return p


# -- the catalog -------------------------------------------------------------------------------


def test_shipped_catalog_has_the_boards_from_their_spec_sheets() -> None:
    cat = parse_catalog(builtin_catalog())
    assert {
        n: (d.cores, d.memory // GIB) for n, d in cat.items()
    } == {
        "rpi4-1gb": (4, 1), "rpi4-2gb": (4, 2), "rpi4-4gb": (4, 4), "rpi4-8gb": (4, 8),
        "rpi5-4gb": (4, 4), "rpi5-8gb": (4, 8), "jetson-nano": (4, 4),
        "coral-dev-board": (4, 1), "coral-dev-board-4gb": (4, 4),
    }  # fmt: skip
    for d in cat.values():
        # Speed is in no spec sheet: the shipped entries claim none, and name their source.
        assert d.share is None and d.speed is None and d.calibration is None
        assert d.source is not None and d.source.startswith("https://")


def test_catalogs_merge_shipped_then_environment_then_option(tmp_path: Path) -> None:
    env_cat = _catalog(tmp_path, "  rpi4-4gb:\n    cores: 2\n    memory: 1g\n  a:\n"
                       "    cores: 1\n    memory: 64m\n", "env.yml")  # fmt: skip
    opt_cat = _catalog(tmp_path, "  a:\n    cores: 2\n    memory: 128m\n    speed: 0.5\n", "o.yml")
    paths = catalog_paths(opt_cat, {DEVICES_ENV: str(env_cat)})
    assert paths == [builtin_catalog(), env_cat, opt_cat]
    cat = load_catalog(paths)
    assert (cat["rpi4-4gb"].cores, cat["rpi4-4gb"].memory) == (2, GIB)  # env over shipped
    assert (cat["a"].cores, cat["a"].memory, cat["a"].speed) == (2, 128 * 2**20, 0.5)
    assert cat["a"].catalog == opt_cat
    assert "jetson-nano" in cat
    assert catalog_paths(None, {}) == [builtin_catalog()]


def test_a_bad_catalog_from_the_environment_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A path set in a shell's profile, not on the command line: the error says where from."""
    monkeypatch.setenv(DEVICES_ENV, str(tmp_path / "nope.yml"))
    with pytest.raises(ConfigError, match=r"nope\.yml: cannot read it: .* \(\$EDGEPROF_DEVICES"):
        load_catalog(catalog_paths(None))
    good = _catalog(tmp_path, "  a:\n    cores: 1\n    memory: 64m\n")
    monkeypatch.setenv(DEVICES_ENV, str(good))
    with pytest.raises(ConfigError) as info:
        load_catalog(catalog_paths(tmp_path / "typo.yml"))
    assert "typo.yml: cannot read it" in str(info.value) and "$" not in str(info.value)


def test_entry_keys_parsed(tmp_path: Path) -> None:
    p = _catalog(
        tmp_path,
        "  b:\n    cores: 4\n    memory: 1.5g\n    share: 1.25\n    calibration: cal/b.yml\n"
        "    cpu_period: 10ms\n    description: a board\n    source: vendor page\n",
    )
    d = parse_catalog(p)["b"]
    assert (d.cores, d.memory, d.share, d.speed) == (4, int(1.5 * GIB), 1.25, None)
    assert d.calibration == tmp_path / "cal" / "b.yml"  # relative to the catalog
    assert (d.cpu_period_us, d.description, d.source) == (10_000, "a board", "vendor page")
    assert (d.gpu_memory, d.unified_memory) == (None, False)
    assert parse_catalog(tmp_path / "e.yml", "") == {}
    gpu = _catalog(
        tmp_path,
        "  g:\n    cores: 6\n    memory: 8g\n    gpu_memory: 4g\n"
        "  u:\n    cores: 6\n    memory: 8g\n    unified_memory: true\n",
        "g.yml",
    )
    cat = parse_catalog(gpu)
    assert (cat["g"].gpu_memory, cat["g"].unified_memory) == (4 * GIB, False)
    assert (cat["u"].gpu_memory, cat["u"].unified_memory) == (None, True)
    assert parse_catalog(builtin_catalog())["jetson-nano"].unified_memory


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("    cores: 4\n    memory: 1g\n    ram: 2g\n", "device 'x': unknown key 'ram'"),
        ("    memory: 1g\n", "device 'x': missing key 'cores'"),
        ("    cores: four\n    memory: 1g\n", "device 'x': key 'cores': expected a whole"),
        ("    cores: 0\n    memory: 1g\n", "device 'x': key 'cores': expected a whole"),
        ("    cores: 2.5\n    memory: 1g\n", "device 'x': key 'cores': expected a whole"),
        ("    cores: true\n    memory: 1g\n", "device 'x': key 'cores': expected a whole"),
        ("    cores: 4\n    memory: 5x\n", "device 'x': key 'memory': invalid size '5x'"),
        ("    cores: 4\n    memory: 1m\n", "device 'x': key 'memory': memory limit '1m' is below"),
        ("    cores: 4\n    memory: [1g]\n", "device 'x': key 'memory': expected a size"),
        ("    cores: 4\n    memory: 1g\n    speed: -1\n", "device 'x': key 'speed': expected a"),
        # Its one word named: "expected a positive number" alone hid it (a tester's).
        (
            "    cores: 4\n    memory: 1g\n    speed: fast\n",
            "device 'x': key 'speed': expected a positive number or 'calibration' (got 'fast')",
        ),
        ("    cores: 4\n    memory: 1g\n    share: .nan\n", "device 'x': key 'share': expected"),
        (
            "    cores: 2\n    memory: 1g\n    share: 0.004\n",
            "key 'share': expected CPUs as --cpus takes them, at least 0.01 (got 0.004)",
        ),
        (
            "    cores: 4\n    memory: 1g\n    share: 1\n    speed: 0.5\n",
            "device 'x': give 'share' or 'speed', not both",
        ),
        (
            "    cores: 4\n    memory: 1g\n    speed: calibration\n",
            "device 'x': key 'speed': 'calibration' needs a calibration file",
        ),
        # Left empty: listed as "from calibration", then run --device asserted (a reviewer's).
        (
            "    cores: 4\n    memory: 1g\n    speed: calibration\n    calibration:\n",
            "device 'x': key 'speed': 'calibration' needs a calibration file in the entry "
            "(got 'calibration')",
        ),
        # Present but empty: an AssertionError traceback, exit 1 (a reviewer's).
        (
            "    cores: 1\n    memory:\n",
            "device 'x': key 'memory': expected a size such as 4g (got None)",
        ),
        # 401 digits: OverflowError in math.isfinite (a reviewer's).
        (
            f"    cores: 1\n    memory: 1g\n    speed: 1{'0' * 400}\n",
            "device 'x': key 'speed': expected a positive number within float's range "
            "(got an integer of 1329 bits)",
        ),
        (
            f"    cores: 1\n    memory: 1g\n    share: 1{'0' * 400}\n",
            "device 'x': key 'share': expected a positive number within float's range "
            "(got an integer of 1329 bits)",
        ),
        # The whole number had been printed twice.
        (
            f"    cores: 1{'0' * 400}\n    memory: 1g\n",
            "device 'x': key 'cores': expected a whole number of cores, from 1 to 65536 "
            "(got an integer of 1329 bits)",
        ),
        ("    cores: 4\n    memory: 1g\n    cpu_period: 1us\n", "device 'x': key 'cpu_period'"),
        # Had passed here, and at the run named a --cpus and --cpu-period nobody typed.
        (
            "    cores: 1\n    memory: 1g\n    speed: 0.5\n    cpu_period: 1ms\n",
            "key 'cpu_period': a share of 0.5 CPUs makes a quota of 0.5ms per period, under "
            "the kernel's 1ms: give at least 2ms",
        ),
        (
            "    cores: 2\n    memory: 1g\n    share: 0.1\n    cpu_period: 5ms\n",
            "a share of 0.1 CPUs makes a quota of 0.5ms",
        ),
        ("    cores: 4\n    memory: 1g\n    source: 5\n", "device 'x': key 'source': expected"),
        ("    cores: 4\n    memory: 1g\n    calibration: 3\n", "device 'x': key 'calibration'"),
        ("    - 4\n", "device 'x': expected a mapping"),
        ("    cores: 4\n    memory: 1g\n    gpu_memory: lots\n", "key 'gpu_memory': invalid"),
        ("    cores: 4\n    memory: 1g\n    unified_memory: 1\n", "expected true or false"),
        (
            "    cores: 4\n    memory: 1g\n    unified_memory: true\n    gpu_memory: 1g\n",
            "a unified memory is 'memory' itself",
        ),
    ],
)
def test_bad_entries_name_file_entry_and_key(tmp_path: Path, entry: str, message: str) -> None:
    p = _catalog(tmp_path, "  x:\n" + entry)
    with pytest.raises(ConfigError) as info:
        parse_catalog(p)
    text = str(info.value)
    assert text.startswith(f"device catalog {p}: ")
    assert message in text
    assert "\n" not in text and len(text) < 300  # no 401-digit echo


def test_an_empty_key_is_no_value(tmp_path: Path) -> None:
    """``share:`` left empty beside ``speed: 0.5`` had been refused as "not both"; an empty
    ``devices:`` is an empty catalog, as an empty file is."""
    p = _catalog(tmp_path, "  x:\n    cores: 2\n    memory: 1g\n    speed: 0.5\n    share:\n")
    (x,) = parse_catalog(p).values()
    assert (x.speed, x.share) == (0.5, None)
    assert device_setting(x).cpus == 1.0
    (tmp_path / "e.yml").write_text("devices:\n")
    assert parse_catalog(tmp_path / "e.yml") == {}


def test_a_catalog_fault_is_one_line_exit_2_on_every_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An empty ``memory:`` had been a traceback, exit 1, in ``devices`` and ``run --device``."""
    p = _catalog(tmp_path, "  board:\n    cores: 1\n    memory:\n")
    want = f"edgeprof: error: device catalog {p}: device 'board': key 'memory': expected a size"
    for argv in (["devices", "--devices", str(p)],
                 [*RUN, "--devices", str(p), "--device", "board", "--", "true"]):  # fmt: skip
        assert main(argv) == 2
        assert capsys.readouterr().err.startswith(want)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("boards: {}\n", "expected one top-level key 'devices'"),
        ("devices: [a]\n", "'devices' must map names to entries (got a list)"),
        # These three had been read as an empty catalog, in silence (a reviewer's).
        ("devices: []\n", "'devices' must map names to entries (got a list)"),
        ("devices: 0\n", "'devices' must map names to entries (got 0)"),
        ("devices: ''\n", "'devices' must map names to entries (got '')"),
        ("devices:\n  x: [\n", "c.yml:3: expected the node content, but found '<stream end>'"),
        ("devices:\n  'a b':\n    cores: 1\n    memory: 1g\n", "device 'a b': a name is"),
    ],
)
def test_bad_catalogs(tmp_path: Path, text: str, message: str) -> None:
    p = tmp_path / "c.yml"
    p.write_text(text)
    with pytest.raises(ConfigError, match=r"device catalog .*c\.yml(:\d+)?: ") as info:
        parse_catalog(p)
    assert message in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(ConfigError, match="cannot read it"):
        parse_catalog(tmp_path / "absent.yml")


# -- speed and share --------------------------------------------------------------------------


def test_speed_to_share_arithmetic() -> None:
    assert share_of(4, 0.35) == (1.4, False)  # four cores at 0.35 of a host core
    assert share_of(1, 0.5) == (0.5, False)
    assert share_of(4, 1.0) == (4.0, False)
    assert share_of(4, 1.5) == (4.0, True)  # a faster core: capped at the host's speed
    assert share_of(2, 0.001) == (0.01, False)  # the smallest --cpus


@given(st.integers(1, 64), st.floats(0.005, 4.0))
@fuzz(100)  # no deadline: one stall on a loaded host had failed an example
def test_share_never_exceeds_the_cores(cores: int, speed: float) -> None:
    cpus, capped = share_of(cores, speed)
    assert 0.01 <= cpus <= cores
    assert capped == (speed * cores > cores)
    if not capped and cores * speed >= 0.01:
        # share_of rounds to 3 decimals: a half-way tie lands a hair over 5e-4.
        assert cpus == pytest.approx(cores * speed, abs=5e-4 + 1e-9)


def test_device_settings_by_what_is_known(tmp_path: Path) -> None:
    p = _catalog(
        tmp_path,
        "  plain:\n    cores: 2\n    memory: 64m\n"
        "  slow:\n    cores: 4\n    memory: 64m\n    speed: 0.25\n    cpu_period: 10ms\n"
        "  fast:\n    cores: 2\n    memory: 64m\n    speed: 2\n"
        "  shared:\n    cores: 2\n    memory: 64m\n    share: 3\n",
    )
    cat = parse_catalog(p)
    plain = device_setting(cat["plain"])
    assert (plain.cpus, plain.memory, plain.pinned, plain.speed_from) == (2.0, 64 << 20, True,
                                                                          "none")  # fmt: skip
    (w,) = plain.warnings
    assert "runs at this host's speed" in w or "run at this host's speed" in w
    assert "edgeprof calibrate" in w
    assert plain.thread_env == {}  # pinned to its 2 cores: the runner sizes the pools
    slow = device_setting(cat["slow"])
    assert (slow.cpus, slow.cpu_period_us, slow.pinned, slow.warnings) == (1.0, 10_000, False, ())
    # Pools of the device's size, which MKL (and torch's pool, which follows it) would cap
    # at this host's cores without MKL_DYNAMIC=FALSE (torch had 2 threads on 2 cores).
    assert slow.thread_env == {**dict.fromkeys(THREAD_VARS, "4"), "MKL_DYNAMIC": "FALSE"}
    for name in ("fast", "shared"):
        s = device_setting(cat[name])
        assert s.cpus == 2.0
        assert "cannot be emulated" in s.warnings[0]


# -- the speed a calibration implies ----------------------------------------------------------


def test_calibration_stores_the_speed_it_implies(tmp_path: Path) -> None:
    cal = _calibration(tmp_path)  # runtime = 2.94 × profiler + 0.15 s, under cpus=1
    assert cal.speed is not None
    assert (cal.speed.metric, cal.speed.setting_cpus) == ("runtime", 1.0)
    # The slope of the form the predictions use, the line through the origin here (2.99),
    # so that the file says one speed: the line's 2.94 had implied 0.34 CPUs while the
    # predictions used 2.99× (a tester's 3.199 against 2.897).
    [runtime] = [f for f in cal.fits if f.metric == "runtime"]
    assert (runtime.choice.form, cal.speed.form) == ("origin", "origin")
    assert cal.speed.slope == pytest.approx(runtime.choice.fit.a) == pytest.approx(89.7 / 30)
    assert cal.speed.host_cpus == pytest.approx(30 / 89.7)
    assert cal.speed.host_model == "Test CPU"
    path = tmp_path / "phone.yml"
    cal.save(path)
    back = load_calibration(path)
    assert back.speed == cal.speed
    # A file from before the speed was stored loads, without one.
    text = path.read_text()
    path.write_text(text[: text.index("implied_speed:")])
    assert load_calibration(path).speed is None
    from edgeprof.report.calibration import render_calibration

    assert (
        "Implied speed: the device ≈ 0.334 CPUs of the profiling host (Test CPU) for these "
        "workloads: runtime [cpus=1, memory=1.0GiB], 1 CPU used / slope 2.99 (line through "
        "the origin; a device entry"
    ) in render_calibration(cal)


def test_the_speed_counts_the_cpus_the_workloads_used_not_the_settings(
    tmp_path: Path,
) -> None:
    """Single-threaded workloads profiled under ``cpus=2`` used one CPU: the device is
    ``1 / slope`` CPUs of this host, not ``2 / slope`` (a tester's same models gave 0.504
    CPUs profiled under cpus 1 and 0.993 under cpus 2)."""
    runs = [
        _run(f"m{i}", x, cpus=2.0, cpu=dataclasses.replace(_run("m", 1.0).cpu, peak_pct=p))
        for i, (x, p) in enumerate([(1.0, 99.0), (2.0, 100.0), (3.0, 101.0), (4.0, 100.0)])
    ]
    m = read_measurements(
        _csv(tmp_path, "model,runtime_ms\nm0,2000\nm1,4000\nm2,6000\nm3,8000\n")
    )
    sp = calibrate(runs, m, "phone").speed
    assert sp is not None and (sp.setting_cpus, sp.used_cpus) == (2.0, 1.0)
    assert sp.host_cpus == pytest.approx(0.5)
    path = tmp_path / "phone.yml"
    calibrate(runs, m, "phone").save(path)
    assert load_calibration(path).speed == sp
    # Never more than the setting's: a busiest second past the quota is the sampling's.
    over = [dataclasses.replace(r, cpu=dataclasses.replace(r.cpu, peak_pct=230.0)) for r in runs]
    sp = calibrate(over, m, "phone").speed
    assert sp is not None and sp.used_cpus == 2.0 and sp.host_cpus == pytest.approx(1.0)
    # Runs shorter than the peak's 1 s window have their average there, start-up and all:
    # not a figure of the CPUs used (then unknown: the setting's, as the report says).
    short = [dataclasses.replace(r, wall_s=r.wall_s / 5) for r in runs]  # 0.2 to 0.8 s
    sp = calibrate(short, m, "phone").speed
    assert sp is not None and sp.used_cpus is None and sp.cpus == 2.0


def test_a_calibration_file_from_before_the_speeds_form_keeps_its_speed_and_says_so(
    tmp_path: Path,
) -> None:
    """A file without ``form`` keeps the line's slope it was made with (a device's speed
    must not move with edgeprof's version), and one without ``used_cpus`` under a setting of
    several CPUs is warned about where a device takes its speed."""
    import yaml

    runs = [
        _run(f"m{i}", x, cpus=2.0, cpu=dataclasses.replace(_run("m", 1.0).cpu, peak_pct=100.0))
        for i, x in enumerate([1.0, 2.0, 3.0, 4.0])
    ]
    rows = "model,runtime_ms\nm0,3100\nm1,5900\nm2,9200\nm3,11800\n"
    m = read_measurements(_csv(tmp_path, rows))
    path = tmp_path / "phone.yml"
    calibrate(runs, m, "phone").save(path)
    doc = yaml.safe_load(path.read_text())
    for key in ("form", "used_cpus"):
        del doc["implied_speed"][key]
    path.write_text(yaml.safe_dump(doc))
    sp = load_calibration(path).speed
    assert sp is not None and (sp.form, sp.used_cpus) == ("line", None)
    assert sp.slope == pytest.approx(2.94) and sp.host_cpus == pytest.approx(2 / 2.94)
    entry = "  phone:\n    cores: 2\n    memory: 1g\n    calibration: phone.yml\n"
    cat = _catalog(tmp_path, entry + "    speed: calibration\n")
    s = resolve_device("phone", cat, HOST, {})
    assert [w for w in s.warnings if "records no CPUs its runs used" in w] == [
        f"phone: calibration {path} records no CPUs its runs used: its speed assumes all 2 "
        "CPUs of its setting; run edgeprof calibrate again for the speed of the CPUs they used"
    ]


def test_a_power_laws_speed_quotes_its_own_slope_at_the_geometric_mean(tmp_path: Path) -> None:
    """Under a power law the speed is the law's slope ``k·c·x^(k−1)`` at the profiled values'
    geometric mean, not the line's (a tester's law had 0.528 there and was quoted the line's
    0.479); a file from before it was recorded keeps the line's, and says so."""
    import yaml

    from edgeprof.report.calibration import render_calibration

    xs = [1.0, 2.0, 4.0, 8.0]  # geometric mean 2^1.5 s
    runs = [
        _run(f"m{i}", x, cpu=dataclasses.replace(_run("m", 1.0).cpu, peak_pct=100.0))
        for i, x in enumerate(xs)
    ]
    rows = "".join(f"m{i},{3000 * x**0.7}\n" for i, x in enumerate(xs))  # 3·x^0.7 s
    m = read_measurements(_csv(tmp_path, "model,runtime_ms\n" + rows))
    cal = calibrate(runs, m, "phone")
    sp = cal.speed
    assert sp is not None and sp.form == "power"
    assert sp.at == pytest.approx(2**1.5)
    assert sp.slope == pytest.approx(0.7 * 3 * (2**1.5) ** -0.3)  # 1.537
    assert cal.fits[0].fit.a == pytest.approx(1.3865, abs=1e-4)  # the line's, not quoted
    assert (
        "1 CPU used / slope 1.54 (power law: the device is not one factor slower on these "
        "workloads, this is its slope at the margin at 2828 ms, the profiled values' "
        "geometric mean; a device entry"
    ) in render_calibration(cal)
    path = tmp_path / "phone.yml"
    cal.save(path)
    assert load_calibration(path).speed == sp
    doc = yaml.safe_load(path.read_text())
    del doc["implied_speed"]["slope_at"]
    path.write_text(yaml.safe_dump(doc))
    old = load_calibration(path)
    assert old.speed is not None and (old.speed.form, old.speed.at) == ("power", None)
    assert old.speed.slope == pytest.approx(cal.fits[0].fit.a)
    assert (
        "slope 1.39 (power law: the device is not one factor slower on these workloads, "
        "this is the line's slope, as this file was made; a device entry"
    ) in render_calibration(old)


def test_latency_is_preferred_and_a_falling_fit_implies_nothing() -> None:
    from edgeprof.analysis.calibration import fit

    line_up = fit([1.0, 2.0, 3.0], [2.0, 4.0, 6.0], ["a", "b", "c"])
    line_down = fit([1.0, 2.0, 3.0], [6.0, 4.0, 2.0], ["a", "b", "c"])
    up, down = (Slope(f.a, "line", f.r2, f.a) for f in (line_up, line_down))
    s = implied_speed({("runtime", "s1"): up, ("latency", "s2"): up}, {"s1": 1.0, "s2": 2.0}, HOST)
    assert s is not None and s.metric == "latency" and s.host_cpus == pytest.approx(1.0)
    assert implied_speed({("runtime", "s1"): down}, {"s1": 1.0}, HOST) is None
    assert implied_speed({("runtime", "none"): up}, {"none": None}, HOST) is None


def test_a_device_takes_its_calibrated_speed(tmp_path: Path) -> None:
    _calibration(tmp_path).save(tmp_path / "phone.yml")
    p = _catalog(
        tmp_path,
        "  phone:\n    cores: 2\n    memory: 1g\n    calibration: phone.yml\n"
        "    speed: calibration\n",
    )
    s = resolve_device("phone", p, HOST, {})
    assert s.cpus == pytest.approx(round(30 / 89.7, 3)) and s.speed_from.endswith("phone.yml")
    assert s.warnings == ()
    other = dataclasses.replace(HOST, cpu_model="Other CPU")
    elsewhere = resolve_device("phone", p, other, {})
    (w,) = elsewhere.warnings
    assert "learned on a Test CPU, this host is a Other CPU" in w
    # With --cpus the share's notes go, this one stays: the calibration still predicts.
    assert elsewhere.said_with(cpus_given=True) == (w,)
    entry = "  slow:\n    cores: 2\n    memory: 1g\n    speed: 0.001\n"
    slow = resolve_device("slow", _catalog(tmp_path, entry), HOST, {})
    assert slow.warnings and slow.said_with(cpus_given=True) == ()


# -- the command line -------------------------------------------------------------------------


def _tiny(tmp_path: Path, extra: str = "") -> Path:
    return _catalog(tmp_path, "  tiny:\n    cores: 2\n    memory: 64m\n" + extra)


def test_run_with_a_device_applies_and_records_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cat = _tiny(tmp_path)
    out = tmp_path / "out"
    assert main([*RUN, "--device", "tiny", "--devices", str(cat), "--out", str(out), "--",
                 "true"]) == 0  # fmt: skip
    r = load_runs([out / "result.json"])[0]
    assert r.device == "tiny"
    assert (r.limits.cpus, r.limits.memory) == (2.0, 64 << 20)
    assert json.loads((out / "result.json").read_text())["device"] == "tiny"
    captured = capsys.readouterr()
    assert "warning: tiny: no speed known" in captured.err
    assert "true: fake/fake, device tiny, limits: cpus=2, " in captured.out


def test_a_one_core_device_is_one_core(tmp_path: Path) -> None:
    """The warning had read "its 1 cores run at this host's speed", then "its 1 core run"."""
    cat = parse_catalog(_catalog(tmp_path, "  one:\n    cores: 1\n    memory: 64m\n"))
    assert "one: no speed known (a spec sheet gives none): its core runs at" in (
        device_setting(cat["one"]).warnings[0]
    )


def test_a_device_share_and_explicit_options(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    cat = _tiny(tmp_path, "    speed: 0.25\n")
    assert main([*RUN, "--json", "--device", "tiny", "--devices", str(cat), "--", "sh", "-c",
                 "echo threads=$OMP_NUM_THREADS >&2"]) == 0  # fmt: skip
    out, err = capfd.readouterr()
    d = json.loads(out)
    assert (d["limits"]["cpus"], d["limits"]["memory_bytes"], d["device"]) == (0.5, 64 << 20,
                                                                                "tiny")  # fmt: skip
    assert "threads=2" in err  # a pool of the device's two cores, not of the 0.5 share
    # An explicit option replaces the device's value, and says so.
    assert main([*RUN, "--json", "--device", "tiny", "--devices", str(cat), "--memory", "128m",
                 "--cpus", "1", "--", "true"]) == 0  # fmt: skip
    out, err = capfd.readouterr()
    d = json.loads(out)
    assert (d["limits"]["cpus"], d["limits"]["memory_bytes"]) == (1.0, 128 << 20)
    assert "--memory 128m replaces tiny's 64.0MiB" in err
    # With its unit, its making, and the pools that went with it (it had read "tiny's 0.5").
    assert (
        "--cpus 1 replaces tiny's 0.5 CPUs (2 cores at speed 0.25; the thread pools follow "
        "--cpus, not its 2)"
    ) in err
    # Recorded, so the memory verdict names --memory as its limit's source, not the device
    # (it had read "memory limit 30.0MiB (device rpi4-2gb): does not fit …").
    assert (d["device"], d["device_replaced"]) == ("tiny", ["--cpus", "--memory"])
    r = RunResult.from_dict(d)
    verdict = headroom(limit_fit(r))
    assert verdict is not None
    assert verdict.startswith("memory limit 128.0MiB (--memory, replacing device tiny's): ")
    assert main([*RUN, "--json", "--device", "tiny", "--devices", str(cat), "--cpus", "1",
                 "--", "true"]) == 0
    d = json.loads(capfd.readouterr().out)
    assert d["device_replaced"] == ["--cpus"]
    verdict = headroom(limit_fit(RunResult.from_dict(d)))
    assert verdict is not None and verdict.startswith("memory limit 64.0MiB (device tiny): ")


def test_run_with_a_calibrated_device_predicts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = [_run(f"m{i}", x, cpus=2.0, memory="64m") for i, x in enumerate([0.1, 0.2, 0.3])]
    csv = tmp_path / "tiny.csv"
    csv.write_text("model,runtime_ms\nm0,410\nm1,790\nm2,1220\n")
    calibrate(runs, read_measurements(csv), "tiny").save(tmp_path / "tiny-cal.yml")
    cat = _tiny(tmp_path, "    calibration: tiny-cal.yml\n")
    assert main([*RUN, "--device", "tiny", "--devices", str(cat), "--", "true"]) == 0
    out = capsys.readouterr().out
    assert f"Predicted on tiny (calibration {tmp_path / 'tiny-cal.yml'})" in out
    (row,) = [ln for ln in out.splitlines() if ln.startswith("true ") and "runtime" in ln]
    assert "ms" in row


def test_a_calibration_fitted_at_other_limits_is_said_to_predict_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A tester's entry of 1 core with a calibration fitted at ``cpus=0.5`` was listed
    "host's; predicted", and each run then said "no calibration for this setting"."""
    runs = [_run(f"m{i}", x, cpus=0.5, memory="64m") for i, x in enumerate([0.1, 0.2, 0.3])]
    csv = tmp_path / "tiny.csv"
    csv.write_text("model,runtime_ms\nm0,410\nm1,790\nm2,1220\n")
    calibrate(runs, read_measurements(csv), "tiny").save(tmp_path / "tiny-cal.yml")
    cat = _tiny(tmp_path, "    calibration: tiny-cal.yml\n")
    assert main(["devices", "--devices", str(cat)]) == 0
    (row,) = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("tiny ")]
    assert "host's; calibrated at other limits" in row
    s = resolve_device("tiny", cat, HOST, {})
    assert (
        f"tiny: its 2 cores run at this host's speed, and its calibration {tmp_path}/"
        "tiny-cal.yml predicts nothing at its own setting (cpus=2, memory=64.0MiB): it was "
        "calibrated at cpus=0.5, memory=64.0MiB (give the options of one of those for its "
        "predictions)"
    ) in s.warnings
    # An entry with a speed or a share (a verifier's): its own setting is its share's.
    speeds = _catalog(
        tmp_path,
        "  fast:\n    cores: 2\n    memory: 64m\n    speed: 0.5\n    calibration: tiny-cal.yml\n"
        "  half:\n    cores: 1\n    memory: 64m\n    speed: 0.5\n    calibration: tiny-cal.yml\n",
        "speeds.yml",
    )
    assert main(["devices", "--devices", str(speeds)]) == 0
    rows = {ln.split()[0]: ln for ln in capsys.readouterr().out.splitlines() if " 64.0MiB " in ln}
    assert "speed 0.5; calibrated at other limits" in rows["fast"]
    assert "speed 0.5 " in rows["half"] and "other limits" not in rows["half"]
    fast = resolve_device("fast", speeds, HOST, {})
    assert any("predicts nothing at its own setting (cpus=1, memory=64.0MiB)" in w
               for w in fast.warnings)  # fmt: skip
    half = resolve_device("half", speeds, HOST, {})
    assert not any("predicts nothing" in w for w in half.warnings)
    # Fitted at the entry's own setting: predicted, as before.
    ok = [_run(f"m{i}", x, cpus=2.0, memory="64m") for i, x in enumerate([0.1, 0.2, 0.3])]
    calibrate(ok, read_measurements(csv), "tiny").save(tmp_path / "tiny-cal.yml")
    assert main(["devices", "--devices", str(cat)]) == 0
    (row,) = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("tiny ")]
    assert "host's; predicted" in row


def test_a_calibration_of_another_device_is_warned_of_unless_the_entry_names_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``run --device jetson-nano --calibration rpi4.yml`` had printed "Predicted on
    rpi4-4gb" without a word; an entry whose calibration the file is (``my-pi``, fitted as
    ``rpi4-4gb``) links the two, and is not warned of."""
    runs = [_run(f"m{i}", x, cpus=2.0, memory="64m") for i, x in enumerate([0.1, 0.2, 0.3])]
    csv = tmp_path / "board.csv"
    csv.write_text("model,runtime_ms\nm0,410\nm1,790\nm2,1220\n")
    cal = tmp_path / "board.yml"
    calibrate(runs, read_measurements(csv), "board").save(cal)
    cat = _catalog(
        tmp_path,
        "  tiny:\n    cores: 2\n    memory: 64m\n    calibration: board.yml\n"
        "  other:\n    cores: 2\n    memory: 64m\n",
    )
    warning = (
        "  warning: these runs emulated other, the calibration was measured on board: its "
        "predictions are board's, not other's (run with --device board, or calibrate with "
        "measurements made on other)\n"
    )
    run = [*RUN, "--devices", str(cat), "--device"]
    assert main([*run, "other", "--calibration", str(cal), "--", "true"]) == 0
    out = capsys.readouterr().out
    assert f"Predicted on board (calibration {cal})" in out and warning in out
    for extra in ([], ["--calibration", str(cal)]):  # the entry's own, or given as well
        assert main([*run, "tiny", *extra, "--", "true"]) == 0
        out = capsys.readouterr().out
        assert f"Predicted on board (calibration {cal})" in out and "warning: these" not in out


def test_calibrate_notes_another_device_and_a_name_no_catalog_has(tmp_path: Path) -> None:
    """``calibrate --device rpi4-4g`` (a typo) on runs made as ``rpi4-4gb`` had written
    ``rpi4-4g.yml`` without a word."""
    assert calibration_device_notes("rpi4-4g", ["rpi4-4gb", None], {}) == [
        "--device rpi4-4g: the runs were made as --device rpi4-4gb; the calibration will be "
        "for --device rpi4-4g (give --device rpi4-4gb if the CSV was measured on it)",
        "--device rpi4-4g is in no device catalog (did you mean rpi4-4gb, rpi5-4gb or "
        "rpi4-8gb?): fine for a device of your own, but the calibration records this name, "
        "and a run as another device is warned that its predictions are for --device rpi4-4g",
    ]
    # A name of two words is quoted, as one word is not (a tester's read "mÿ board is").
    assert calibration_device_notes("mÿ board", ["rpi4-4gb"], {})[0] == (
        "--device 'mÿ board': the runs were made as --device rpi4-4gb; the calibration will "
        "be for --device 'mÿ board' (give --device rpi4-4gb if the CSV was measured on it)"
    )
    assert calibration_device_notes("mÿ-board", [], {})[0].startswith(
        "--device mÿ-board is in no device catalog:"
    )
    # A catalog name the runs were made as, or runs made without --device: nothing to say.
    assert calibration_device_notes("rpi4-4gb", ["rpi4-4gb"], {}) == []
    assert calibration_device_notes("jetson-nano", [None], {}) == []
    # A user catalog ($EDGEPROF_DEVICES) holds names too.
    mine = _catalog(tmp_path, "  my-pi:\n    cores: 1\n    memory: 1g\n")
    assert calibration_device_notes("my-pi", [], {DEVICES_ENV: str(mine)}) == []
    # The runs were made as the name, from a catalog not given here: the fix is named (a
    # tester's pizero2w, run with --devices boards.yml, had been called unknown).
    assert calibration_device_notes("pizero2w", ["pizero2w"], {}) == [
        "--device pizero2w is in no device catalog given here, but the runs were made as "
        "--device pizero2w: give its catalog with --devices FILE (or set $EDGEPROF_DEVICES "
        "to it)"
    ]
    board = _catalog(tmp_path, "  pizero2w:\n    cores: 4\n    memory: 420m\n", "b.yml")
    assert calibration_device_notes("pizero2w", ["pizero2w"], {}, board) == []
    # Runs of two devices, the one given among them: pooled, and said so (a user's had read
    # "the runs were made as" the other device, whichever was given).
    made: list[str | None] = ["rpi4-4gb"] * 4 + ["rpi4-8gb"] * 4 + [None]
    for name in ("rpi4-4gb", "rpi4-8gb"):
        assert calibration_device_notes(name, made, {}) == [
            f"--device {name}: the runs were made as several devices (4 as --device "
            "rpi4-4gb, 4 as --device rpi4-8gb, 1 as no --device): each model's profiler "
            "figure pools them; calibrate from one device's runs"
        ]


def test_calibrated_devices_are_the_entries_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "pi.yml").write_text("")
    cat = _catalog(
        tmp_path,
        "  a:\n    cores: 1\n    memory: 1g\n    calibration: pi.yml\n"
        "  b:\n    cores: 1\n    memory: 1g\n",
    )
    named = calibrated_devices(tmp_path / "pi.yml", ["a", "b", "nope"], cat)
    assert named == {"a"}
    assert calibrated_devices(tmp_path / "other.yml", ["a"], cat) == set()


def test_similar_devices_offer_the_whole_family_first() -> None:
    names = ["rpi4-1gb", "rpi4-2gb", "rpi5-4gb", "jetson-nano"]
    assert similar_devices("rpi4", names, close=1) == ["rpi4-1gb", "rpi4-2gb"]
    assert similar_devices("rpi4", names) == ["rpi4-1gb", "rpi4-2gb", "rpi5-4gb"]
    assert similar_devices("rpi5-4g", names, close=1) == ["rpi5-4gb"]
    assert similar_devices("rpi6-4gb", names, close=1) == ["rpi5-4gb"]  # no family: close
    assert similar_devices("nope", names) == []
    assert similar_devices("", names) == []  # every name begins with it: no family


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--device", "nope"], "--device nope: no such device (known: coral-dev-board,"),
        (
            ["--device", "rpi4-4g"],
            "--device rpi4-4g: no such device (did you mean rpi4-4gb? known: ",
        ),
        (
            ["--device", "rpi4"],
            "--device rpi4: no such device (did you mean rpi4-1gb, rpi4-2gb, rpi4-4gb or "
            "rpi4-8gb? known: ",
        ),
        (["--device", "x", "--devices", "BAD"], "device 'x': key 'cores': expected a whole"),
        (["--devices", "BAD"], "is a catalog for --device: give --device"),
    ],
)
def test_bad_device_is_one_line_and_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    bad = _catalog(tmp_path, "  x:\n    cores: many\n    memory: 1g\n")
    args = [str(bad) if a == "BAD" else a for a in args]
    out = tmp_path / "out"
    assert main([*RUN, *args, "--out", str(out), "--", "true"]) == 2
    captured = capsys.readouterr()
    (line,) = captured.err.splitlines()
    assert line.startswith("edgeprof: error: ") and message in line
    assert not out.exists()


def test_a_device_larger_than_the_host_is_named_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cat = _catalog(tmp_path, "  huge:\n    cores: 4096\n    memory: 1g\n    speed: 1\n")
    out = tmp_path / "out"
    assert main([*RUN, "--device", "huge", "--devices", str(cat), "--out", str(out), "--",
                 "true"]) == 2  # fmt: skip
    (line,) = capsys.readouterr().err.splitlines()  # refused before any warning is said
    # The way to keep the device's memory on this host's CPUs is named first (a tester's
    # coral-dev-board on 2 CPUs was told only --allow-over-host).
    assert line == (
        "edgeprof: error: --device huge: --cpus 4096 (the device's) exceeds the 2 CPU(s) "
        "available here (0-1); --cpus 2 replaces the device's CPUs and keeps its memory, or "
        "--allow-over-host to run anyway"
    )
    assert not out.exists()
    assert main([*RUN, "--device", "huge", "--devices", str(cat), "--cpus", "3", "--", "true"]) == 2
    (line,) = capsys.readouterr().err.splitlines()  # the user's --cpus is not the device's
    assert line.startswith("edgeprof: error: --device huge: --cpus 3 exceeds the 2 CPU(s) ")
    args = ["--device", "huge", "--devices", str(cat), "--cpus", "2", "--out", str(out)]
    assert main([*RUN, *args, "--", "true"]) == 0  # as it says
    r = load_runs([out / "result.json"])[0]
    assert (r.limits.cpus, r.limits.memory, r.device_replaced) == (2, 2**30, ("--cpus",))


def test_a_library_refusal_of_a_devices_cpus_names_the_device(tmp_path: Path) -> None:
    import edgeprof
    from tests.fakes import FakeBackend

    cat = _catalog(tmp_path, "  huge:\n    cores: 4096\n    memory: 1g\n    speed: 1\n")
    with pytest.raises(edgeprof.LimitError) as over:
        edgeprof.profile(["true"], backend=FakeBackend(), device="huge", devices=cat)
    assert str(over.value) == (
        "device huge: cpus 4096 (the device's) exceeds the 2 CPU(s) available here (0-1); "
        "cpus 2 replaces the device's CPUs and keeps its memory, or allow_over_host=True to "
        "run anyway"
    )


def test_devices_command_lists_the_catalog(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["devices"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["device", "cores", "memory", "speed", "cpu", "period",
                                "storage", "calibration", "catalog", "source"]  # fmt: skip
    (rpi,) = [ln for ln in lines if ln.startswith("rpi4-4gb ")]
    assert rpi.split()[:9] == ["rpi4-4gb", "4", "4.0GiB", "needs", "calibration", "auto",
                               "host's", "-", "shipped"]  # fmt: skip
    assert any("docs/method.md, 'What edgeprof cannot emulate'" in ln for ln in lines)
    assert any("edgeprof calibrate" in ln for ln in lines)
    cat = _tiny(tmp_path, "    speed: 0.25\n    cpu_period: 10ms\n")
    assert main(["devices", "--devices", str(cat), "--json"]) == 0
    data = {d["name"]: d for d in json.loads(capsys.readouterr().out)}
    assert data["tiny"]["speed"] == 0.25 and data["tiny"]["cpu_period_us"] == 10_000
    assert data["tiny"]["catalog"] == str(cat) and data["jetson-nano"]["cores"] == 4
    assert data["tiny"]["replaces"] is None


def test_devices_says_where_each_entry_came_from_and_what_it_replaces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``run`` and ``doctor`` said a team catalog's ``rpi4-4gb`` replaced the shipped one;
    the listing showed it as the board, with no catalog column (a tester's)."""
    team = tmp_path / "team.yml"
    team.write_text("devices:\n  rpi4-4gb:\n    cores: 2\n    memory: 420m\n"
                    "  pizero2w:\n    cores: 4\n    memory: 420m\n")  # fmt: skip
    mine = _catalog(tmp_path, "  pizero2w:\n    cores: 4\n    memory: 400m\n")
    monkeypatch.setenv(DEVICES_ENV, str(team))
    assert main(["devices", "--devices", str(mine)]) == 0
    rows = {ln.split()[0]: ln for ln in capsys.readouterr().out.splitlines() if ln}
    assert f" {team} ($EDGEPROF_DEVICES); replaces the shipped one " in rows["rpi4-4gb"]
    assert f" {mine}; replaces the one in {team} ($EDGEPROF_DEVICES) " in rows["pizero2w"]
    assert " shipped " in rows["rpi4-1gb"]
    assert main(["devices", "--devices", str(mine), "--json"]) == 0
    data = {d["name"]: d for d in json.loads(capsys.readouterr().out)}
    assert (data["pizero2w"]["catalog"], data["pizero2w"]["replaces"]) == (str(mine), str(team))
    assert data["rpi4-4gb"]["replaces"] == str(builtin_catalog())
    assert data["rpi4-1gb"]["replaces"] is None


def test_a_decimal_looking_size_is_quoted_as_the_user_wrote_it(tmp_path: Path) -> None:
    """A verifier's ``430080kB`` had been said as "430080 KB", a unit they did not write."""
    cat = _catalog(tmp_path, "  pk:\n    cores: 1\n    memory: 430080kB\n    speed: 0.15\n")
    [note] = resolve_device("pk", cat, None, {}).device.notes
    assert note == (
        f"pk: memory '430080kB' in {cat} is read as 420.0MiB (binary multiples: Docker's "
        "rule, as --memory); '430080kB' in multiples of 10³ bytes (a datasheet's, or a device "
        "CSV's _kb) would be 410.2MiB: write 430080KiB to keep it binary without this note, or "
        "the size meant in KiB"
    )
    assert "430080 KB" not in note


def test_a_catalog_size_whose_unit_reads_as_decimal_is_said_where_it_is_used(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``memory: 420MB`` is 420 MiB (Docker's rule, every size of edgeprof's), where a device
    CSV's ``peak_mem_mb`` is 10⁶ bytes: kept (catalogs hold it meaning MiB), and said on
    each use and in the listing; ``420m`` and ``420 MiB`` say nothing."""
    cat = _catalog(
        tmp_path,
        "  pz:\n    cores: 1\n    memory: 420MB\n    speed: 0.15\n"
        "  pb:\n    cores: 1\n    memory: 420 MiB\n    speed: 0.15\n",
    )
    note = (
        f"pz: memory '420MB' in {cat} is read as 420.0MiB (binary multiples: Docker's rule, "
        "as --memory); '420MB' in multiples of 10⁶ bytes (a datasheet's, or a device CSV's "
        "_mb) would be 400.5MiB: write 420MiB to keep it binary without this note, or the size "
        "meant in MiB"
    )
    pz = resolve_device("pz", cat, None, {})
    assert pz.memory == 420 * 2**20 and pz.device.notes == (note,)
    assert pz.said_with(False)[0] == note and pz.said_with(True) == (note,)
    assert resolve_device("pb", cat, None, {}).device.notes == ()
    assert main(["devices", "--devices", str(cat)]) == 0
    assert capsys.readouterr().out.endswith(f"\nnote: {note}\n")
    assert main(["devices", "--devices", str(cat), "--json"]) == 0
    data = {d["name"]: d for d in json.loads(capsys.readouterr().out)}
    assert (data["pz"]["notes"], data["pb"]["notes"]) == ([note], [])
    assert main([*RUN, "--devices", str(cat), "--device", "pz", "--", "true"]) == 0
    assert f"edgeprof: warning: {note}\n" in capsys.readouterr().err


def test_result_device_round_trips_and_older_files_load() -> None:
    from .conftest import make_result

    r = make_result(device="rpi4-4gb", limits=Limits(cpus=4, memory="4g"))
    assert RunResult.from_dict(r.to_dict()).device == "rpi4-4gb"
    d = make_result().to_dict()
    del d["device"]
    assert RunResult.from_dict(d).device is None


def test_a_devices_gpu_memory_reaches_the_runs_and_a_unified_one_refuses_another(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from edgeprof.sweeps.request import RunRequest, plan_run

    cat = _catalog(tmp_path, "  g:\n    cores: 1\n    memory: 1g\n    gpu_memory: 2g\n")
    job = plan_run(RunRequest(command=("true",), device="g", devices=cat))
    assert (job.request.gpu_memory, job.request.unified_memory) == (f"{2 * GIB}b", False)
    job = plan_run(RunRequest(command=("true",), device="jetson-nano"))
    assert (job.request.gpu_memory, job.request.unified_memory) == (None, True)
    assert main([*RUN, "--device", "jetson-nano", "--gpu-memory", "1g", "--", "true"]) == 2
    assert "its CPU and GPU share one memory, which --memory sets" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("cores", "said"),
    [(4, "4 cores at speed 0.0001 are 0.0004"), (1, "1 core at speed 0.0001 is 0.0001")],
)
def test_a_device_slower_than_the_least_share_says_the_run_is_faster(
    tmp_path: Path, cores: int, said: str
) -> None:
    """``speed: 0.0001`` on 4 cores is 0.0004 CPUs: run at 0.01, and said (it was silent;
    one core had read "1 cores … are")."""
    p = _catalog(tmp_path, f"  crawl:\n    cores: {cores}\n    memory: 64m\n    speed: 0.0001\n")
    setting = device_setting(parse_catalog(p)["crawl"])
    assert setting.cpus == 0.01
    assert setting.warnings == (
        f"crawl: {said} CPUs, below the least share edgeprof sets (0.01): the run is faster "
        "than the device",
    )


def test_an_entrys_missing_calibration_is_named_with_its_catalog_and_entry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``cannot read calibration sub/nope.yml: [Errno 2] …`` had named neither the catalog
    nor the entry, and ``devices`` listed the entry without a word."""
    cat = _catalog(tmp_path, "  pim:\n    cores: 1\n    memory: 1g\n    calibration: nope.yml\n")
    assert main(["devices", "--devices", str(cat)]) == 0
    row = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("pim "))
    # Not "needs calibration", nor "predicted": it predicts nothing until it can be read.
    assert row.split()[3:7] == ["host's;", "calibration", "unreadable", "auto"]
    assert f"{tmp_path / 'nope.yml'} (missing)" in row
    assert main([*RUN, "--devices", str(cat), "--device", "pim", "--", "true"]) == 2
    assert capsys.readouterr().err == (
        f"edgeprof: error: device catalog {cat}: device 'pim': key 'calibration': "
        f"{tmp_path / 'nope.yml'} is not a file\n"
    )


def _calibrated_entry(tmp_path: Path, device_ms: str, contended: str | None = None) -> Path:
    """A ``speed: calibration`` entry ``phone`` (2 cores) whose calibration fits runtimes
    1-4 s to ``device_ms`` (the device's, in ms, comma-separated)."""
    runs = [_run(f"m{i}", x) for i, x in enumerate([1.0, 2.0, 3.0, 4.0])]
    rows = "".join(f"m{i},{v}\n" for i, v in enumerate(device_ms.split(",")))
    cal = calibrate(runs, read_measurements(_csv(tmp_path, "model,runtime_ms\n" + rows)), "p")
    dataclasses.replace(cal, contended=contended).save(tmp_path / "phone.yml")
    entry = "  phone:\n    cores: 2\n    memory: 1g\n    calibration: phone.yml\n"
    return _catalog(tmp_path, entry + "    speed: calibration\n")


def test_a_calibration_of_cpu_time_alone_says_which_column_implies_a_speed(
    tmp_path: Path,
) -> None:
    """A user's calibration of ``cpu_time_ms`` alone (slope 2.96) had been refused as "no
    positive time fit under a cpus setting; calibrate again … on an idle host"."""
    runs = [_run(f"m{i}", x) for i, x in enumerate([1.0, 2.0, 3.0, 4.0])]
    runs = [
        dataclasses.replace(r, cpu=dataclasses.replace(r.cpu, total_s=0.9 * r.wall_s))
        for r in runs
    ]
    rows = "".join(f"m{i},{v}\n" for i, v in enumerate((3100, 5900, 9200, 11800)))
    cal = calibrate(runs, read_measurements(_csv(tmp_path, "model,cpu_time_ms\n" + rows)), "p")
    assert cal.speed is None and [f.metric for f in cal.fits] == ["cpu_time"]
    cal.save(tmp_path / "phone.yml")
    entry = "  phone:\n    cores: 2\n    memory: 1g\n    calibration: phone.yml\n"
    cat = _catalog(tmp_path, entry + "    speed: calibration\n")
    with pytest.raises(ConfigError) as err:
        resolve_device("phone", cat, HOST, {})
    assert str(err.value).endswith(
        "implies no speed (a speed is read from a latency, mean latency or runtime fit, and "
        "it has none (its fits: cpu_time); calibrate again with a latency_* or runtime_* "
        "column), or give the entry 'speed: S' or 'share: C'"
    )


def test_a_calibrated_share_from_a_poor_fit_is_said_with_why(tmp_path: Path) -> None:
    """A board had run at 0.043 CPUs from a fit of R² 0.541, 61.9 % held-out error and
    contended profiling, without a word; the same criteria as the fit's warnings say it."""
    # Device 3, 9, 5, 12 s: the line through the origin, a = 84/30 = 2.8: 1/2.8 = 0.357 CPUs;
    # R² 0.543 and 1 of 4 held-out predictions within ±10 %.
    cat = _calibrated_entry(tmp_path, "3000,9000,5000,12000", contended="held off")
    s = resolve_device("phone", cat, HOST, {})
    assert s.cpus == 0.357
    assert s.doubts == (
        "R² = 0.543 < 0.9",
        "1 of 4 held-out predictions within ±10 % (median error 28.9 %)",
        "other tasks held its profiled runs off their CPUs, which makes it too high",
    )
    (w,) = s.warnings
    assert w == (
        f"phone: cpus=0.357 from calibration {tmp_path / 'phone.yml'} rests on a poor fit "
        f"(runtime [cpus=1, memory=1.0GiB]: {'; '.join(s.doubts)}): the device's speed may be "
        f"far from it (edgeprof report --calibration {tmp_path / 'phone.yml'} shows the fit)"
    )
    assert s.said_with(cpus_given=True) == ()  # under --cpus the share is not used
    # A good fit: no doubt, no warning.
    good = resolve_device("phone", _calibrated_entry(tmp_path, "3100,5900,9200,11800"), HOST, {})
    assert (good.doubts, good.warnings) == ((), ())


def test_a_calibration_whose_line_falls_gives_no_share(tmp_path: Path) -> None:
    """Device 12, 9, 6, 3 s for profiler 1-4 s: the line's slope is -3, while the line
    through the origin's is 2 (a tester's board had run at 0.179 CPUs from such a fit)."""
    cat = _calibrated_entry(tmp_path, "12000,9000,6000,3000")
    with pytest.raises(ConfigError) as err:
        resolve_device("phone", cat, HOST, {})
    assert str(err.value) == (
        f"device catalog {cat}: device 'phone': key 'speed': calibration "
        f"{tmp_path / 'phone.yml'} implies no speed (its time fits' slopes are not above 0 "
        "(runtime [cpus=1, memory=1.0GiB] -3): a device cannot get faster as the host gets "
        "slower; calibrate again from runs under --cpus on an idle host), or give the entry "
        "'speed: S' or 'share: C'"
    )
    line = Slope(-3.0, "origin", 0.0, -3.0)
    rising_origin = Slope(2.0, "origin", 1.0, -3.0)  # the origin rises, the line falls
    assert implied_speed({("runtime", "s"): rising_origin}, {"s": 1.0}, HOST) is None
    assert implied_speed({("runtime", "s"): line}, {"s": 1.0}, HOST) is None


def test_a_calibration_of_a_speed_no_device_has_gives_no_share(tmp_path: Path) -> None:
    """Device 3-12 ms for profiler 1-4 s (seconds under a column of ms): 333 times the host.
    calibrate warns of it; a board's ``speed: calibration`` had run on the host's whole
    cores, told only that its profiled runs were held off (a user's)."""
    cat = _calibrated_entry(tmp_path, "3,6,9,12")
    with pytest.raises(ConfigError) as err:
        resolve_device("phone", cat, HOST, {})
    said = str(err.value)
    assert said.startswith(
        f"device catalog {cat}: device 'phone': key 'speed': calibration "
        f"{tmp_path / 'phone.yml'}: the implied speed is not a device's: slope 0.003 makes the "
        "device 333 times faster than"
    ), said
    assert said.endswith("calibrate again, or give the entry 'speed: S' or 'share: C'"), said
    # The column named as calibrate names it (it had been "under 'runtime's device column'").
    assert "(seconds or microseconds under 'runtime_ms' give a factor of 1000)" in said, said


def test_devices_lists_a_calibrated_share_and_a_poor_fit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cat = _calibrated_entry(tmp_path, "3000,9000,5000,12000")
    assert main(["devices", "--devices", str(cat)]) == 0
    (row,) = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("phone ")]
    assert "cpus=0.357 from calibration, poor fit" in row
    assert main(["devices", "--json", "--devices", str(cat)]) == 0
    (d,) = [e for e in json.loads(capsys.readouterr().out) if e["name"] == "phone"]
    assert d["calibrated_cpus"] == 0.357 and d["calibration_doubts"] == [
        "R² = 0.543 < 0.9",
        "1 of 4 held-out predictions within ±10 % (median error 28.9 %)",
    ]
    falling = _calibrated_entry(tmp_path, "12000,9000,6000,3000")
    assert main(["devices", "--devices", str(falling)]) == 0
    (row,) = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("phone ")]
    assert "from calibration: refused (run --device says why)" in row


def test_a_list_of_devices_is_told_that_device_takes_one() -> None:
    """``--device a,b`` had been "no such device (did you mean a?)" (two users')."""
    with pytest.raises(ConfigError) as err:
        find_device(load_catalog(catalog_paths(None, {})), "rpi4-2gb,rpi4-4gb")
    assert str(err.value) == (
        "--device 'rpi4-2gb,rpi4-4gb': --device takes one device; run each (--device rpi4-2gb, "
        "then --device rpi4-4gb) into its own --out and report them together"
    )
