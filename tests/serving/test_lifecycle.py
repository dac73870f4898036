"""Train, then serve: the total of the best GPU and TPU option of each phase over some months."""

import polars as pl
import pytest

from workbook import serving
from workbook.model.spec import ModelSpec
from workbook.model.units import HOURS_PER_MONTH
from workbook.training import options
from workbook.training.scenario import Constraints, Scenario


@pytest.fixture(scope="module")
def train():
    return options.evaluate(Scenario(model=ModelSpec.from_params(8e9), tokens=160e9, days=30))


def _serve(pricing):
    s = serving.ServeScenario(model=ModelSpec.from_params(8e9), requests_per_s=5, pricing=(pricing,))
    return serving.evaluate_serving(s)


def test_each_strategy_adds_the_best_training_and_serving_option_of_its_family(train):
    serve = _serve("on-demand")
    out = serving.train_then_serve(train, serve, 3)
    assert set(out["strategy"]) == {f"train on {a}, serve on {b}" for a in ("GPU", "TPU") for b in ("GPU", "TPU")}
    gpu = serve.filter(pl.col("feasible") & (pl.col("kind") == "gpu")).sort("usd_per_hour").row(0, named=True)
    row = out.filter(pl.col("strategy") == "train on GPU, serve on GPU").row(0, named=True)
    assert row["serve_usd"] == pytest.approx(gpu["usd_per_hour"] * 3 * HOURS_PER_MONTH)
    assert row["total_usd"] == pytest.approx(row["train_usd"] + row["serve_usd"])
    assert out["total_usd"].is_sorted()


def test_serving_on_a_commitment_bills_its_whole_term_when_served_for_less(train):
    serve = _serve("commit-1y")
    short, year, longer = (serving.train_then_serve(train, serve, m) for m in (3, 12, 18))
    for frame in (short, year, longer):
        assert frame.height and frame["serve_option"].str.contains("commit-1y").all()
    assert short["serve_usd"].to_list() == pytest.approx(year["serve_usd"].to_list())  # three months pay twelve
    assert longer["serve_usd"].to_list() == pytest.approx([v * 2 for v in year["serve_usd"]])  # two whole terms


def test_when_there_is_nothing_to_total_it_says_which_phase_has_no_option(train):
    serve = _serve("on-demand")
    assert serving.nothing_to_total(train, serve) is None
    deadline = Constraints(deadline_days=30)  # 405B on 15T tokens: no plan finishes in 30 days
    late = options.evaluate(Scenario(model=ModelSpec.from_params(405e9), tokens=15e12, days=30, constraints=deadline))
    assert serving.train_then_serve(late, serve, 3).height == 0
    assert serving.nothing_to_total(late, serve).startswith("No training plan meets")
    none_served = serve.with_columns(feasible=pl.lit(False))
    assert serving.nothing_to_total(train, none_served).startswith("No serving option meets")
