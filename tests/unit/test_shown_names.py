"""Long phase names shortened in tables and warnings, whole in result.json."""

from __future__ import annotations

from edgeprof.measure.phases import missed_windows_warning
from edgeprof.names import shown_name
from edgeprof.workload.instrument import _shortened


def test_a_long_name_keeps_its_first_40_characters_and_its_distinguishing_suffix() -> None:
    """ph.py's two 214-character names (cut by the workload to 200, ``~daf9b131`` and
    ``~92a1edba``) had printed whole: a Phases table ~270 columns wide."""
    attention, mlp = _shortened("x" * 205 + "attention"), _shortened("x" * 205 + "mlp")
    assert (len(attention), attention[-9:], mlp[-9:]) == (200, "~daf9b131", "~92a1edba")
    assert shown_name(attention) == "x" * 40 + "…~daf9b131"
    assert shown_name(mlp) == "x" * 40 + "…~92a1edba"
    assert "'" + "x" * 40 + "…~92a1edba' are sampled" in missed_windows_warning([mlp])
    # Uncut but long: a suffix of the whole name keeps two apart; short names stay whole.
    a, b = "y" * 70 + "a", "y" * 70 + "b"
    assert shown_name(a)[:41] == "y" * 40 + "…" and shown_name(a) != shown_name(b)
    assert len(shown_name(a)) == 50
    assert shown_name("z" * 60) == "z" * 60
    assert shown_name("infer") == "infer"
