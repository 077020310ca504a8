"""``edgeprof doctor``'s check of the environment variables (edgeprof.analysis.environment)."""

from __future__ import annotations

from pathlib import Path

from edgeprof.analysis.environment import environment_findings
from edgeprof.measure.doctor import Finding


def test_an_unreadable_catalog_is_a_miss_with_its_fix() -> None:
    """``EDGEPROF_DEVICES=/nonexistent.yml`` had passed doctor with no line (a tester's)."""
    (cat,) = environment_findings({"EDGEPROF_DEVICES": "/nonexistent.yml"})
    assert cat == Finding(
        "device catalog",
        False,
        "device catalog /nonexistent.yml: cannot read it: No such file or directory",
        "fix or unset $EDGEPROF_DEVICES",
    )


def test_a_catalog_that_parses_names_the_shipped_entries_it_replaces(tmp_path: Path) -> None:
    p = tmp_path / "team.yml"
    p.write_text("devices:\n  rpi4-4gb:\n    cores: 2\n    memory: 1g\n  mine:\n"
                 "    cores: 1\n    memory: 1g\n")  # fmt: skip
    (cat,) = environment_findings({"EDGEPROF_DEVICES": str(p)})
    assert cat.ok is True
    assert cat.detail == f"$EDGEPROF_DEVICES: {p}, 2 device(s); replaces the shipped rpi4-4gb"
    p.write_text("devices:\n  b:\n    cores: 1\n    memory:\n")
    (cat,) = environment_findings({"EDGEPROF_DEVICES": str(p)})
    assert cat.ok is False and "key 'memory': expected a size such as 4g" in cat.detail


def test_every_variable_set_is_one_line_and_unset_ones_none(tmp_path: Path) -> None:
    (only,) = environment_findings({})
    assert only == Finding("device catalog", None, "shipped only ($EDGEPROF_DEVICES is not set)")
    afile = tmp_path / "f"
    afile.write_text("")
    env = {
        "EDGEPROF_LEASE_DIR": str(tmp_path / "leases" / "new"),  # made at the first run
        "XDG_RUNTIME_DIR": str(afile / "x"),  # under a file: never a directory
        "GITHUB_STEP_SUMMARY": str(tmp_path),  # a directory: cannot be appended to
        "NO_COLOR": "1",
        "RAY_ADDRESS": "ray://h:10001",
    }
    found = {f.topic: f for f in environment_findings(env, euid=1000)}
    assert list(found) == ["device catalog", "$EDGEPROF_LEASE_DIR", "$XDG_RUNTIME_DIR",
                           "$GITHUB_STEP_SUMMARY", "$NO_COLOR", "$RAY_ADDRESS"]  # fmt: skip
    assert found["$EDGEPROF_LEASE_DIR"].ok is True
    # $EDGEPROF_LEASE_DIR holds the leases: $XDG_RUNTIME_DIR is only shown.
    xdg = repr(str(afile / "x"))
    assert found["$XDG_RUNTIME_DIR"] == Finding(
        "$XDG_RUNTIME_DIR", None, f"{xdg} (not where the leases are)"
    )
    # A user's run without it keeps its leases there: checked.
    del env["EDGEPROF_LEASE_DIR"]
    env["OMP_NUM_THREADS"] = "2"
    found = {f.topic: f for f in environment_findings(env, euid=1000)}
    assert found["$XDG_RUNTIME_DIR"] == Finding(
        "$XDG_RUNTIME_DIR", False, f"{afile / 'x'}: {afile} is not a directory",
        "point $XDG_RUNTIME_DIR elsewhere",
    )  # fmt: skip
    assert found["$OMP_NUM_THREADS"] == Finding("$OMP_NUM_THREADS", None, "'2'")
    # Root's leases are in /run/edgeprof: a bad $XDG_RUNTIME_DIR is no fault of its (it had
    # been [MISS], a verifier's).
    assert environment_findings(env, euid=0)[1] == Finding(
        "$XDG_RUNTIME_DIR", None, f"{xdg} (not where the leases are)"
    )
    found = {f.topic: f for f in environment_findings(env, euid=1000)}
    assert found["$GITHUB_STEP_SUMMARY"].ok is False
    assert found["$NO_COLOR"] == Finding("$NO_COLOR", None, "'1'")


def test_a_relative_lease_directory_is_a_miss_as_every_run_refuses_it() -> None:
    """``EDGEPROF_LEASE_DIR=rel`` had been ``[ok]`` here while ``run`` refused it."""
    (found,) = [
        f for f in environment_findings({"EDGEPROF_LEASE_DIR": "rel"}, euid=0)
        if f.topic == "$EDGEPROF_LEASE_DIR"
    ]
    assert found.ok is False
    assert found.detail.startswith("EDGEPROF_LEASE_DIR=rel is a relative path: give an absolute")
    assert found.fix == "set $EDGEPROF_LEASE_DIR to an absolute directory, or unset it"
