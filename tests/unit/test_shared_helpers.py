"""The helpers that had been copied between modules, each now in one place with its rule:
:func:`edgeprof.analysis.stats.median` (the rule for a missing value said at each call),
:func:`edgeprof.errors.one_line` and :func:`edgeprof.units.us_to_s`."""

from __future__ import annotations

import json

import pytest

from edgeprof.analysis.stats import median
from edgeprof.errors import one_line
from edgeprof.units import us_to_s


def test_median_says_what_a_missing_value_does() -> None:
    values = [3.0, None, 1.0, 2.0]
    assert median(values, missing="skip") == 2.0  # the known three
    assert median(values, missing="none") is None  # not every run has it
    assert median([4, 1, 3, 2], missing="none") == 2.5
    assert median([4, 1, 3, 2], missing="none", low=True) == 2  # a count stays one of them
    for missing in ("skip", "none"):
        assert median([], missing=missing) is None
        assert median([None, None], missing=missing) is None


def test_one_line_and_us_to_s() -> None:
    with pytest.raises(json.JSONDecodeError) as exc:
        json.loads('{"a":\n\n  }')
    assert one_line(exc.value) == "Expecting value: line 3 column 3 (char 9)"
    assert one_line(KeyError()) == "KeyError"  # says nothing: its type
    assert one_line(ValueError("two\n  lines")) == "two lines"
    assert us_to_s(1_500_000) == 1.5
    assert us_to_s(None) is None
