"""``compare --pair BASE=CUR``: two differently named variants held against each other."""

from __future__ import annotations

import pytest

from edgeprof.analysis.pairs import pair_hint, resolve
from edgeprof.analysis.regression import Verdict, compare_results
from edgeprof.errors import ConfigError
from edgeprof.report.library import compare
from tests.unit.gating_helpers import run

FP32 = [run("model_fp32", wall=w) for w in (1.00, 1.02, 0.98)]
INT8 = [run("model_int8", wall=w) for w in (0.50, 0.51, 0.49)]


def test_a_pair_compares_two_names_under_one_joint_label() -> None:
    with pytest.raises(ConfigError, match=r"pair them: --pair model_fp32=model_int8$"):
        compare_results(FP32, INT8)
    # The library's hint is in its own spelling (it had read "pair model_fp32=model_int8").
    with pytest.raises(ConfigError, match=r"pair them: pair=\{'model_fp32': 'model_int8'\}$"):
        compare(FP32, INT8)
    # A pair whose name is not there: the sentence's colon stays out of the dict (a
    # verifier's "pair={'m1': 'zz:'} the current results have no model zz").
    with pytest.raises(ConfigError, match=r"^pair=\{'model_fp32': 'zz'\}: "):
        compare(FP32, INT8, pair={"model_fp32": "zz"})
    changes, notes = compare_results(FP32, INT8, pairs=["model_fp32=model_int8"])
    wall = next(c for c in changes if c.metric.key == "wall")
    assert (wall.label, wall.setting) == ("model_fp32 → model_int8", "cpus=1, memory=1.0GiB")
    assert (wall.verdict, wall.change_text()) == (Verdict.IMPROVEMENT, "-50.0% [-52.2%, -47.7%]")
    assert not any("new (not in the baseline)" in n or "only in" in n for n in notes)


def test_a_pair_leaves_the_other_models_paired_by_name() -> None:
    both = [run("other", wall=w) for w in (1.0, 1.1)]
    changes, notes = compare_results(
        FP32 + both, INT8 + both, pairs=["model_fp32=model_int8"]
    )
    assert sorted({c.label for c in changes}) == ["model_fp32 → model_int8", "other"]
    # A current model taken by a pair is no longer its own name's: the baseline's cell of
    # that name is said to be left out, not missing (it had read "only in the baseline: not
    # in the current results, so not measured" and failed the gate, beside the current's
    # model_int8 in the pair).
    changes, notes = compare_results(FP32 + INT8, INT8, pairs=["model_fp32=model_int8"])
    assert (
        "model_int8 (cpus=1, memory=1.0GiB): not compared: the current's model_int8 is held "
        "against the baseline's model_fp32 (--pair model_fp32=model_int8), and a cell holds "
        "one side of one pair"
    ) in notes
    assert {c.label for c in changes} == {"model_fp32 → model_int8"}
    assert not any(c.verdict is Verdict.NOT_MEASURED for c in changes)


def test_a_pair_across_sides_that_hold_both_names_fails_nothing_it_left_out() -> None:
    """``--pair small=big`` where both sweeps hold small and big (a user's): the pair is
    compared; the baseline's big and the current's small, whose partners the pair holds, are
    said to be left out, not "only in the baseline" (failed as not measured) and "new"."""
    small = [run("small", wall=w) for w in (0.20, 0.21, 0.19)]
    big = [run("big", wall=w) for w in (0.40, 0.41, 0.39)]
    changes, notes = compare_results(small + big, small + big, pairs=["small=big"])
    assert {c.label for c in changes} == {"small → big"}
    assert not any(c.verdict is Verdict.NOT_MEASURED for c in changes)
    left = [n for n in notes if "not compared" in n]
    assert left == [
        "big (cpus=1, memory=1.0GiB): not compared: the current's big is held against the "
        "baseline's small (--pair small=big), and a cell holds one side of one pair",
        "small (cpus=1, memory=1.0GiB): not compared: the baseline's small is held against "
        "the current's big (--pair small=big), and a cell holds one side of one pair",
    ]
    assert not any("only in the baseline" in n or "new (not in" in n for n in notes)
    assert not any("nothing was measured again" in n for n in notes)
    _, notes = compare_results(small + big, small + big)
    assert any("nothing was measured again" in n for n in notes)


def test_the_split_is_at_the_labels_and_bad_pairs_are_one_line() -> None:
    """A label may hold an ``=`` (a bench's ``infer bs=1``)."""
    assert resolve(["infer bs=1=infer bs=2"], ["infer bs=1"], ["infer bs=2"]) == [
        ("infer bs=1", "infer bs=2")
    ]
    cases = {
        "fp32": "--pair 'fp32': write BASELINE_NAME=CURRENT_NAME (e.g. --pair "
        "model_fp32=model_int8)",
        "x=int8": "--pair x=int8: the baseline has no model x (its models: fp32, fp16)",
        "fp32=x": "--pair fp32=x: the current results have no model x (theirs: int8)",
    }
    for text, message in cases.items():
        with pytest.raises(ConfigError) as err:
            resolve([text], ["fp32", "fp16"], ["int8"])
        assert str(err.value) == message.replace("fp32, fp16", "fp16, fp32")
    with pytest.raises(ConfigError) as err:
        resolve(["fp32=int8", "fp16=int8"], ["fp32", "fp16"], ["int8"])
    assert str(err.value) == (
        "--pair: int8 is paired more than once in the current: a cell holds one side of one pair"
    )
    # The same pair twice is one pair; a conflicting second one is still refused.
    assert resolve(["fp32=int8", "fp32=int8"], ["fp32"], ["int8"]) == [("fp32", "int8")]
    assert pair_hint(["a", "b"], ["c"]) == (
        "to hold one variant against another, pair them: --pair BASE_NAME=CUR_NAME"
    )
    assert pair_hint(["a b"], ["c"]).endswith("--pair 'a b=c'")


def test_the_library_takes_a_dict() -> None:
    got = compare(FP32, INT8, pair={"model_fp32": "model_int8"})
    assert {c.label for c in got.changes} == {"model_fp32 → model_int8"}
    with pytest.raises(ConfigError, match="is not a dict of a baseline model's name"):
        compare(FP32, INT8, pair=[("model_fp32", "model_int8")])  # type: ignore[arg-type]


def test_two_variants_under_different_limits_are_told_both_options() -> None:
    """Two cards' runs: another model and another setting.  The hint had named --pair alone,
    which was then refused for the limits."""
    a2 = [run("model_int8", wall=w, cpus=2) for w in (0.50, 0.51, 0.49)]
    with pytest.raises(ConfigError) as err:
        compare_results(FP32, a2)
    assert str(err.value).endswith(
        "pair them: --pair model_fp32=model_int8 --ignore-limits (their limits differ too)"
    )
    changes, _ = compare_results(FP32, a2, pairs=["model_fp32=model_int8"], match_limits=False)
    assert {c.label for c in changes} == {"model_fp32 → model_int8"}
