"""Ranking under constraints and the plain-language reasons."""

import polars as pl

from workbook.training import options, recommend
from workbook.training.scenario import Constraints, ModelSpec, Scenario


def _rec(framework="pytorch", **constraints):
    s = Scenario(
        model=ModelSpec.from_params(70e9),
        tokens=1.4e12,
        framework=framework,
        days=30,
        pricing=("on-demand",),
        constraints=Constraints(**constraints),
    )
    return recommend.recommend(options.evaluate(s), framework)


def test_winner_is_cheapest_feasible_and_runners_up_are_other_chips():
    r = _rec()
    ids = [r.best["accelerator_id"]] + [o["accelerator_id"] for o in r.runners_up]
    assert len(set(ids)) == len(ids) == 3
    costs = [r.best["cost_usd"]] + [o["cost_usd"] for o in r.runners_up]
    assert costs == sorted(costs)
    assert r.reasons[0].startswith("Cheapest option")


def test_multi_cloud_excludes_tpu_and_trainium():
    r = _rec(multi_cloud=True)
    assert r.best["kind"] == "gpu"
    reasons = r.infeasible.filter(pl.col("accelerator_id") == "tpu-v5p")["reason"].item()
    assert "only one cloud" in reasons


def test_gcp_only_and_framework_switch_reason():
    r = _rec(framework="tensorflow", clouds=("gcp",))
    assert r.best["cloud"] == "gcp"
    text = " ".join(r.reasons)
    assert "TensorFlow->" in text and "engineer-weeks" in text


def test_impossible_budget_says_why():
    r = _rec(budget_usd=10)
    assert r.best is None and "No option" in r.reasons[0]
