"""The backtest is recomputed on every run: these guard its accuracy against regressions.

Measured with the parallelism planner (issue 12): median |ln(pred/real)| 0.233 over 41 full runs in-sample, 0.276
leave one family out (before the planner: 0.180 in-sample; the issue's target is 0.15: not met), 3 runs beyond 2x
in-sample and 4 held out, naive baseline median 0.504, exact-FLOPs rule 0.494; leave-one-family-out medians Ampere
0.264, Hopper 0.348, TPU 0.049, Volta 0.276.
"""

import math

import polars as pl
import pytest

from workbook import catalog
from workbook.training import validation

MEDIAN_GUARD = 0.25  # regression guard just above today's 0.233; the 0.15 target is reported, not yet met
BEYOND_TWO_X_GUARD = 3


@pytest.fixture(scope="module")
def cat():
    return catalog.load()


@pytest.fixture(scope="module")
def backtest(cat):
    return validation.backtest(cat)


def test_every_full_run_is_predicted(cat, backtest):
    assert backtest.height == validation.full_runs(cat).height >= 25
    assert backtest["predicted_chip_hours"].is_not_null().all()


def test_median_error_does_not_regress(backtest):
    summary = validation.summarize(backtest)
    assert summary.median_abs_error <= MEDIAN_GUARD
    assert summary.beyond_factor_two <= BEYOND_TWO_X_GUARD


def test_model_clearly_beats_the_naive_baseline(backtest):
    summary = validation.summarize(backtest)
    assert summary.median_abs_error <= summary.naive_median_abs_error / 2


@pytest.fixture(scope="module")
def held(cat):
    return validation.held_out(cat)


def test_held_out_predicts_every_run_once(cat, held):
    assert held.height == validation.full_runs(cat).height > 0
    assert held["run_id"].is_unique().all() and held["predicted_chip_hours"].is_not_null().all()


def test_leave_one_family_out_stays_close(cat, held):
    lofo = validation.leave_one_family_out(cat, held)
    assert lofo["runs"].sum() == held.height
    assert set(lofo["family"]) >= {"Ampere", "Hopper", "TPU"}
    assert (lofo["median_abs_error"] <= 0.35).all()
    assert (lofo["median_abs_error"] < lofo["naive_median_abs_error"]).all()


def test_held_out_family_really_is_held_out(cat):
    held_out = validation.without_family(cat, "TPU")
    assert not held_out.reference_runs["accelerator_id"].str.starts_with("tpu").any()
    assert cat.reference_runs["accelerator_id"].str.starts_with("tpu").any()


def test_errors_are_log_ratios(backtest):
    row = backtest.row(0, named=True)
    assert row["error"] == pytest.approx(math.log(row["predicted_chip_hours"] / row["reported_chip_hours"]))


def test_accuracy_in_plain_words():
    summary = validation.Summary(
        runs=41,
        median_abs_error=0.18,
        worst_abs_error=math.log(5.1),
        worst_run="llama32-1b",
        within_25_percent=25,
        beyond_factor_two=2,
        within_band=29,
        naive_median_abs_error=0.504,
        naive_worst_abs_error=2.29,
        exact_flops_median_abs_error=0.49,
    )
    first, second = summary.words()
    assert "41 published training runs within 20% on median" in first and "within 66%" in first  # e^0.18 - 1
    assert "25 of 41 within 25%, 2 off by more than a factor of 2" in second and "factor of 5.1" in second
    assert "ln" not in " ".join(summary.words())
    per_family = pl.DataFrame({"family": ["TPU", "Hopper"], "runs": [1, 19], "median_abs_error": [0.136, 0.202]})
    held_out = validation.held_out_words(per_family)
    assert "Hopper within 22% (19 runs); TPU within 15% (1 run)" in held_out and "flatter" in held_out
    assert "No chip family" in validation.held_out_words(per_family.clear())
