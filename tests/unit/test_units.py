"""units.py: sizes (Docker's rules), CPU counts, CPU lists, durations, quotas, formatting."""

from __future__ import annotations

import math

import pytest

from edgeprof.cpu_units import (
    CFS_PERIOD_US,
    MIN_QUOTA_US,
    check_quota,
    cpu_quota_us,
    format_cpuset,
    format_period,
    parse_cpu_period,
    parse_cpus,
    parse_cpuset,
    shortest_period_us,
)
from edgeprof.errors import ConfigError
from edgeprof.model import Limits
from edgeprof.units import (
    article,
    decimal_looking,
    format_binary,
    format_decimal,
    format_rate,
    format_seconds,
    parse_duration,
    parse_memory_limit,
    parse_size,
)

MiB = 2**20


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("156m", 156 * MiB),
        ("156mb", 156 * MiB),
        ("156MiB", 156 * MiB),
        ("156M", 156 * MiB),
        ("512MiB", 512 * MiB),
        ("1.5g", 1536 * MiB),
        ("1.5GiB", 1536 * MiB),
        ("2k", 2048),
        ("1t", 2**40),
        ("1024", 1024),
        ("1024b", 1024),
        (" 64 m ", 64 * MiB),
    ],
)
def test_parse_size_binary_multiples_as_docker(text: str, expected: int) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["12x", "0", "0.4", "", "m", "-5m", "1ib", "1.5.2g", "5 m b"])
def test_parse_size_rejects(text: str) -> None:
    with pytest.raises(ConfigError, match="invalid size"):
        parse_size(text)


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("420MB", ("420", "MB", 420 * 10**6)),
        ("420 mb", ("420", "MB", 420 * 10**6)),
        ("1.5GB", ("1.5", "GB", 1_500_000_000)),
        (" 2 kb ", ("2", "KB", 2000)),
        ("420m", None),
        ("420MiB", None),
        ("420 MiB", None),
        ("1024b", None),
        ("1024", None),
        (420, None),
    ],
)
def test_a_size_whose_unit_reads_as_decimal_is_found(
    text: object, found: tuple[str, str, int] | None
) -> None:
    """``420MB`` is 420 MiB by Docker's rule (``parse_size``), 440401920 bytes: 4.9 % more
    than a datasheet's 420 × 10⁶."""
    assert decimal_looking(text) == found


def test_parse_size_error_names_the_text() -> None:
    with pytest.raises(ConfigError) as e:
        parse_size("12x")
    assert "'12x'" in str(e.value)


def test_memory_limit_floor_is_6m() -> None:
    assert parse_memory_limit("6m") == 6 * MiB
    with pytest.raises(ConfigError, match="below the minimum of 6m"):
        parse_memory_limit("5m")
    with pytest.raises(ConfigError, match="below the minimum"):
        parse_memory_limit("1024")
    with pytest.raises(ConfigError, match="invalid size"):
        parse_memory_limit("12x")


@pytest.mark.parametrize(("text", "expected"), [("1.5", 1.5), ("0.01", 0.01), ("2", 2.0), (4, 4.0)])
def test_parse_cpus_valid(text: str | float, expected: float) -> None:
    assert parse_cpus(text) == expected


@pytest.mark.parametrize("text", ["-1", "0", "0.009", "abc", "", "nan", "inf", "-inf"])
def test_parse_cpus_invalid(text: str) -> None:
    with pytest.raises(ConfigError, match="invalid CPU count"):
        parse_cpus(text)


@pytest.mark.parametrize(("text", "why"), [("-1", "must be from 0.01 to"),
                                           ("-0.5", "must be from 0.01 to"),
                                           ("-x", "expected a number such as 1.5")])  # fmt: skip
def test_a_negative_cpu_count_is_told_its_range_not_that_it_is_no_number(
    text: str, why: str
) -> None:
    """``--cpus -1`` had been told "expected a number such as 1.5" (a CLI tester's)."""
    with pytest.raises(ConfigError, match=f"invalid CPU count '{text}': {why}"):
        parse_cpus(text)


@pytest.mark.parametrize(("text", "why"), [("-5", "must be greater than 0"),
                                           ("-250ms", "must be greater than 0"),
                                           ("-x", "expected seconds")])  # fmt: skip
def test_a_negative_duration_is_told_its_range(text: str, why: str) -> None:
    with pytest.raises(ConfigError, match=f"invalid timeout '{text}': {why}"):
        parse_duration(text, "timeout")


def test_parse_cpus_invalid_floats() -> None:
    for v in (float("nan"), float("inf"), 0.0, -1.0):
        with pytest.raises(ConfigError):
            parse_cpus(v)


@pytest.mark.parametrize(
    ("cpus", "quota"),
    [(0.5, 50_000), (1, 100_000), (1.5, 150_000), (2.25, 225_000), (0.01, 1000), (1 / 3, 33_333)],
)
def test_cpu_quota_us(cpus: float, quota: int) -> None:
    assert cpu_quota_us(cpus) == quota
    assert CFS_PERIOD_US == 100_000


def test_cpu_quota_us_floor_and_custom_period() -> None:
    assert cpu_quota_us(0.001) == 1000  # the kernel's 1 ms minimum
    assert cpu_quota_us(0.5, period_us=200_000) == 100_000
    assert cpu_quota_us(0.333336) == 33_334  # rounded, not truncated


@pytest.mark.parametrize(
    ("text", "cpus"),
    [
        ("0-2,5", (0, 1, 2, 5)),
        ("3", (3,)),
        ("5,1,1", (1, 5)),
        ("0-1", (0, 1)),
        ("0-1, 3", (0, 1, 3)),
        ("2-2", (2,)),
    ],
)
def test_parse_cpuset(text: str, cpus: tuple[int, ...]) -> None:
    assert parse_cpuset(text) == cpus


@pytest.mark.parametrize("text", ["", "a", "1-", "-1", "0-2,", "1;2", "1.5"])
def test_parse_cpuset_invalid(text: str) -> None:
    with pytest.raises(ConfigError, match="invalid CPU list"):
        parse_cpuset(text)


def test_parse_cpuset_reversed_range() -> None:
    with pytest.raises(ConfigError, match="range 3-1 is reversed"):
        parse_cpuset("3-1")


@pytest.mark.parametrize(
    ("cpus", "text"),
    [((0, 1, 2, 5), "0-2,5"), ((3,), "3"), ((0, 2, 4), "0,2,4"), ((7, 6, 5, 0), "0,5-7"), ((), "")],
)
def test_format_cpuset(cpus: tuple[int, ...], text: str) -> None:
    assert format_cpuset(cpus) == text


@pytest.mark.parametrize("text", ["0-2,5", "0", "1,3,5-9,11", "0-63"])
def test_cpuset_round_trip(text: str) -> None:
    assert format_cpuset(parse_cpuset(text)) == text


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("0.1", 0.1),
        ("1.5", 1.5),
        ("1.5s", 1.5),
        ("250ms", 0.25),
        ("2m", 120.0),
        ("1h", 3600.0),
        ("1000000us", 1.0),  # us, as --cpu-period reads it
        ("2500us", 0.0025),
        (".5", 0.5),
        (0.1, 0.1),
        (3, 3.0),
    ],
)
def test_parse_duration(text: str | float, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["0", "0ms", 0, 0.0, "-1", "abc", "5d", "", float("nan"), -2.0])
def test_parse_duration_invalid(text: str | float) -> None:
    with pytest.raises(ConfigError, match="invalid timeout"):
        parse_duration(text, "timeout")


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (None, "n/a"),
        (0, "0B"),
        (1023, "1023B"),
        (1024, "1.0KiB"),
        (1536, "1.5KiB"),
        (156 * MiB, "156.0MiB"),
        (int(117.9 * MiB), "117.9MiB"),
        (3 * 2**30 // 2, "1.5GiB"),
        (2 * 2**40, "2.0TiB"),
        (5000 * 2**40, "5000.0TiB"),
    ],
)
def test_format_binary(n: int | None, text: str) -> None:
    assert format_binary(n) == text


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (None, "n/a"),
        (742, "742B"),
        (999, "999B"),
        (1000, "1.0kB"),
        (12_000_000, "12.0MB"),
        (1_500_000_000, "1.5GB"),
        (3 * 10**12, "3.0TB"),
    ],
)
def test_format_decimal(n: int | None, text: str) -> None:
    assert format_decimal(n) == text


def test_format_digits_and_seconds() -> None:
    assert format_binary(1536, digits=2) == "1.50KiB"
    assert format_decimal(1234, digits=0) == "1kB"
    assert format_seconds(None) == "n/a"
    assert format_seconds(0.0123) == "12.3ms"
    assert format_seconds(75.2) == "75.20s"


@pytest.mark.parametrize(
    ("sd", "mean", "text"),
    [
        (0.004e-6, 10.19e-6, "4ns"),  # the tester's p50s 10.19-10.20 µs: had been 0.00µs
        (0.01e-6, 20.19e-6, "0.01µs"),  # not 0 in the mean's unit: kept in it
        (5e-9, 924e-9, "5ns"),
        (0.7e-3, 20.1e-3, "0.70ms"),
        (0.3e-6, 2.0, "300ns"),  # 0.000s beside seconds
        (0.0, 10.19e-6, "0.00ms"),  # an exact 0 stays 0
    ],
)
def test_a_deviation_that_rounds_to_0_in_its_means_unit_takes_its_own(
    sd: float, mean: float, text: str
) -> None:
    assert format_seconds(sd, digits=2, like=mean) == text


@pytest.mark.parametrize(
    ("rate", "text"),
    [(241745.1, "241745"), (999.95, "1000"), (999.94, "999.9"), (517.13, "517.1"), (0.0, "0.0")],
)
def test_a_throughput_is_whole_from_1000_up(rate: float, text: str) -> None:
    assert format_rate(rate) == text


def test_limits_normalises_user_spellings() -> None:
    lim = Limits(cpus="1.5", cpuset="3,0-1", memory="512m")
    assert (lim.cpus, lim.cpuset, lim.memory) == (1.5, (0, 1, 3), 512 * MiB)
    assert Limits(cpuset=[2, 0, 2]).cpuset == (0, 2)
    assert Limits() == Limits(cpus=None, cpuset=None, memory=None)
    with pytest.raises(ConfigError):
        Limits(memory="5m")
    with pytest.raises(ConfigError):
        Limits(cpus="0")
    with pytest.raises(ConfigError):
        Limits(cpuset="3-1")
    assert Limits(memory=64 * MiB).memory == Limits(memory=float(64 * MiB)).memory == 64 * MiB


@pytest.mark.parametrize(
    ("limits", "message"),
    [
        ({"cpuset": []}, "invalid CPU list: empty"),
        ({"cpuset": [0, True]}, "invalid CPU list: True is not a CPU number"),
        ({"cpuset": [-1]}, "invalid CPU list '-1'"),
        ({"cpuset": 1}, "invalid CPU list: 1 (expected CPU numbers"),  # had been a TypeError
        ({"memory": math.nan}, "invalid memory limit nan: expected bytes"),
        ({"memory": 1.5}, "invalid memory limit 1.5: expected bytes"),
        # A number is bytes already: told it is negative, not of units (a library user's).
        ({"memory": -5}, "invalid memory limit -5: a negative size"),
        ({"memory": 0}, "memory limit '0' is below the minimum of 6m"),
    ],
)
def test_the_librarys_limits_are_refused_as_the_options_are(
    limits: dict[str, object], message: str
) -> None:
    """Each had passed the constructor: an empty cpuset failed at the core lease ("cannot
    lease 0 of the cores "), NaN memory raised a bare ValueError, 0 said "'0b'"."""
    with pytest.raises(ConfigError) as info:
        Limits(**limits)  # type: ignore[arg-type]
    assert str(info.value).startswith(message), info.value


@pytest.mark.parametrize(
    ("text", "us"),
    [("2ms", 2000), ("100ms", 100_000), ("2500us", 2500), ("2500µs", 2500), ("0.1s", 100_000),
     ("1s", 1_000_000), (".5s", 500_000), (1000, 1000)],
)  # fmt: skip
def test_parse_cpu_period(text: str | int, us: int) -> None:
    assert parse_cpu_period(text) == us


@pytest.mark.parametrize("text", ["2", "0.5ms", "2s", "1.5us", "fast", "", "-2ms", 999, 10**7])
def test_parse_cpu_period_invalid(text: str | int) -> None:
    with pytest.raises(ConfigError, match="CPU period"):
        parse_cpu_period(text)


@pytest.mark.parametrize(("us", "text"), [(2000, "2ms"), (2500, "2500us"), (1_000_000, "1s")])
def test_format_period_round_trips(us: int, text: str) -> None:
    assert format_period(us) == text
    assert parse_cpu_period(text) == us


@pytest.mark.parametrize(
    ("cpus", "us"), [(1, 1000), (2, 1000), (0.5, 2000), (0.25, 4000), (0.3, 3334), (0.01, 100_000)]
)
def test_shortest_period_keeps_the_kernels_minimum_quota(cpus: float, us: int) -> None:
    assert shortest_period_us(cpus) == us
    assert cpu_quota_us(cpus, us) >= MIN_QUOTA_US
    check_quota(cpus, us)  # accepted
    if us > MIN_QUOTA_US:
        with pytest.raises(ConfigError, match="the kernel's minimum is 1ms"):
            check_quota(cpus, us - 1)


@pytest.mark.parametrize(
    ("number", "said"),
    [
        ("81%", "an"), ("87%", "an"), ("8%", "an"), ("8.5%", "an"), ("800%", "an"),
        ("11%", "an"), ("18%", "an"), ("11.5%", "an"), ("18000", "an"),
        ("1%", "a"), ("7.4%", "a"), ("0.04%", "a"), ("23%", "a"), ("110%", "a"),
        ("180%", "a"), ("1.8%", "a"), ("90%", "a"), ("111%", "a"), ("1100", "a"),
    ],
)  # fmt: skip
def test_the_article_goes_by_how_the_number_is_said(number: str, said: str) -> None:
    """"had a 81% lower latency p50" had been printed: eight, eleven and eighteen take an."""
    assert article(number) == said


@pytest.mark.parametrize(
    ("f", "text"),
    [(0.53, "0.53×"), (2.345, "2.35×"), (0.0059, "0.0059×"), (0.00059, "0.00059×"),
     (5.9e-5, "0.000059×"), (0.0, "0.00×"), (0.0282, "0.028×"), (0.1, "0.10×"),
     (0.0996, "0.10×")],
)  # fmt: skip
def test_a_small_factor_keeps_two_significant_digits(f: float, text: str) -> None:
    """A bench 1700 times slower than the first had been ranked ``0.00×``."""
    from edgeprof.units import format_factor

    assert format_factor(f) == text


def test_a_change_that_rounds_to_nothing_has_no_sign() -> None:
    """A probe 0.4 % faster had read ``fits (-0%)``."""
    from edgeprof.units import signed_percent

    assert [signed_percent(x) for x in (0.123, -0.03, -0.004, 0.004, 0.0)] == [
        "+12%", "-3%", "0%", "0%", "0%"
    ]


@pytest.mark.parametrize(
    ("interval", "bounds"),
    [((0.0241, 0.0332), ("0.024", "0.033")), ((0.00151, 0.00173), ("0.0015", "0.0017")),
     ((0.51, 0.62), ("0.51", "0.62")), ((0.0, 0.04), ("0", "0.040")), ((0.9951, 0.998),
     ("0.995", "0.998"))],
)  # fmt: skip
def test_an_intervals_bounds_have_the_digits_of_the_factor_beside_them(
    interval: tuple[float, float], bounds: tuple[str, str]
) -> None:
    """A verifier's ``0.028× [0.03, 0.03]``, the factor outside its interval, and
    ``0.0016× [0.00, 0.00]``: under 0.1, two significant digits, as :func:`format_factor`."""
    from edgeprof.report.ratio_text import UNBOUNDED_BELOW, interval_bounds

    lo, hi = interval_bounds(interval)
    assert (lo, hi) == (bounds[0] if interval[0] > 0 else UNBOUNDED_BELOW, bounds[1])


def test_an_interval_that_says_nothing_is_bounded_in_words_not_digits() -> None:
    """A user's two runs of 0.05 s and 1.5 s had bracketed a factor with
    ``[0.0000000012, 801751306.5731809139]``: past 1000 from 1, a bound is ``>1000`` or
    ``<0.001``, and the other bound keeps its own decimals."""
    from edgeprof.report.ratio_text import interval_bounds

    assert interval_bounds((1.2e-9, 801751306.5731809)) == ("<0.001", ">1000")
    assert interval_bounds((2.3e-11, 4.8e12)) == ("<0.001", ">1000")
    assert interval_bounds((0.065, 34.608)) == ("0.065", "34.608")
    assert interval_bounds((0.00046, 17644979.5)) == ("<0.001", ">1000")
    assert interval_bounds((0.0012, 1.5)) == ("0.0012", "1.5000")


@pytest.mark.parametrize(
    ("factor", "interval", "said"),
    [(1.0046, (1.001, 1.008), "1.005×"), (1.0035, (1.003, 1.004), "1.004×"),
     (1.57, (0.065, 34.608), "1.57×"), (2.55, (1.2e-9, 8e8), "2.55×"), (0.53, None, "0.53×"),
     (1.2, (1.05, 1.4), "1.20×")],
)  # fmt: skip
def test_a_factor_is_said_to_its_intervals_decimals(
    factor: float, interval: tuple[float, float] | None, said: str
) -> None:
    """``1.01× [1.001, 1.008]`` had put a factor of 1.005 outside its own bracket (the factor
    to 2 decimals, the bounds to 3), beside a sentence of "0.5% less"."""
    from edgeprof.report.ratio_text import factor_text

    assert factor_text(factor, interval) == said


@pytest.mark.parametrize("least", [None, (0.001, "1ms")])
def test_a_nan_duration_is_no_figure_not_one_below_the_minimum(
    least: tuple[float, str] | None,
) -> None:
    """``profile(timeout=float("nan"))`` had said "timeout nan is below the minimum of 1ms"."""
    with pytest.raises(ConfigError) as raised:
        parse_duration(float("nan"), "timeout", least)
    assert str(raised.value) == "invalid timeout nan: expected seconds, e.g. 0.1, 2m"
