"""``--env``'s names: refused as typed, with the form allowed; the events channel's are
edgeprof's."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgeprof.cli import main
from edgeprof.errors import ConfigError
from edgeprof.names import check_env
from edgeprof.workload import instrument

FAKE = ["run", "--backend", "fake", "--interval", "0.01"]
FORM = "expected ASCII letters, digits, '_', '.' and '-', not starting with a digit, '.' or '-'"


@pytest.mark.parametrize(
    ("key", "shown"),
    [("é", "'é'"), ("日本", "'日本'"), ("A=B", "'A=B'"), ("1A", "'1A'"), ("a\nb", "'a\\nb'")],
)
def test_a_bad_name_is_shown_as_typed_with_the_form_allowed(key: str, shown: str) -> None:
    with pytest.raises(ConfigError) as info:
        check_env(key, "1")
    assert str(info.value) == f"invalid environment variable name {shown}: {FORM}"


@pytest.mark.parametrize(
    "key",
    [
        "EDGEPROF_EVENTS_FD",
        "EDGEPROF_EVENTS_INODE",
        "EDGEPROF_EVENTS",
        "EDGEPROF_EVENTS_UNAVAILABLE",
        "EDGEPROF_EVENTS_SYNC",
    ],
)
def test_the_events_channels_variables_cannot_be_given(key: str) -> None:
    with pytest.raises(ConfigError) as info:
        check_env(key, "3")
    assert str(info.value) == (
        f"environment variable {key}: edgeprof sets it for each run (its events channel, "
        "docs/phases.md); it cannot be given"
    )


def test_the_process_backends_run_mark_cannot_be_given() -> None:
    """Its runs know their orphans by it: given with -E, it would be replaced unsaid."""
    with pytest.raises(ConfigError) as info:
        check_env("EDGEPROF_PROCESS_RUN", "1-1")
    assert str(info.value) == (
        "environment variable EDGEPROF_PROCESS_RUN: edgeprof sets it for each run (the "
        "process backend's mark of the run's processes, docs/backends.md); it cannot be given"
    )


def test_every_variable_of_the_events_channel_is_refused() -> None:
    """A variable the client reads, added later, is refused too: the hold socket's
    ``EDGEPROF_EVENTS_SYNC`` had been left out and was silently replaced."""
    channel = {
        value
        for name, value in vars(instrument).items()
        if name.endswith("_ENV") and value.startswith("EDGEPROF_EVENTS")
    }
    assert channel == {
        "EDGEPROF_EVENTS_FD",
        "EDGEPROF_EVENTS_INODE",
        "EDGEPROF_EVENTS",
        "EDGEPROF_EVENTS_SYNC",
        "EDGEPROF_EVENTS_UNAVAILABLE",
    }
    for key in channel:
        with pytest.raises(ConfigError):
            check_env(key, "3")


def test_the_cli_refuses_them_in_one_line_before_anything_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main([*FAKE, "-E", "é=1", "--out", "o", "--", "true"]) == 2
    assert main([*FAKE, "-E", "EDGEPROF_EVENTS_FD=3", "--out", "o", "--", "true"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"edgeprof: error: invalid environment variable name 'é': {FORM}",
        "edgeprof: error: environment variable EDGEPROF_EVENTS_FD: edgeprof sets it for each "
        "run (its events channel, docs/phases.md); it cannot be given",
    ]
    assert not (tmp_path / "o").exists()
    check_env("EDGEPROF_GPU_MEMORY", "1")  # a user's own cap still wins
