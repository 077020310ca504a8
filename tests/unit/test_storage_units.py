"""A storage byte rate's unit, as the option and a catalog entry read it: required, binary
(Docker's rule), and a datasheet's decimal MB/s said where a catalog writes one."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgeprof.cli import main
from edgeprof.errors import ConfigError
from edgeprof.model import Limits

from .test_storage_speed import RUN, _board

MiB = 2**20


@pytest.mark.parametrize("text", ["40m,80m", "abc", "-5m", "40m/sec", "m"])
def test_a_bad_rate_says_its_unit_is_required(text: str) -> None:
    with pytest.raises(ConfigError) as caught:
        Limits(read_bps=text)
    said = str(caught.value)
    assert said.startswith(f"invalid read rate {text!r}: expected a size a second with its unit")
    assert "optional unit" not in said  # the size's own message had called it optional


def test_a_bare_number_in_a_catalog_is_refused_as_the_option_refuses_it(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """YAML reads ``read_bps: 40`` as an integer, which had been 40 bytes a second."""
    cat = _board(tmp_path, "    read_bps: 40\n")
    assert main([*RUN, "--device", "card", "--devices", str(cat), "--", "true"]) == 2
    err = capfd.readouterr().err
    assert "device 'card': key 'read_bps': invalid read rate '40': '40' has no unit" in err, err
    assert main([*RUN, "--read-bps", "40", "--", "true"]) == 2
    assert "--read-bps: invalid read rate '40': '40' has no unit" in capfd.readouterr().err
    # A request rate is a plain number: YAML's integer is what it means.
    cat = _board(tmp_path, "    read_iops: 1500\n")
    assert main([*RUN, "--device", "card", "--devices", str(cat), "--", "true"]) == 0


def test_a_decimal_looking_rate_in_a_catalog_is_binary_and_said_so(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    cat = _board(tmp_path, "    read_bps: 10MB/s\n    write_bps: 20m\n")
    assert main(["devices", "--devices", str(cat)]) == 0
    err = capfd.readouterr().out  # devices lists its notes with the entries
    assert (
        f"card: read_bps '10MB/s' in {cat} is read as 10.0MiB/s (binary multiples: Docker's "
        "rule, as --memory); '10MB/s' in multiples of 10⁶ bytes (a datasheet's, or a device "
        "CSV's _mb) would be 9.5MiB/s: write 10MiB/s to keep it binary without this note"
    ) in err, err
    assert "write_bps" not in err  # 20m is binary as written: nothing to say
