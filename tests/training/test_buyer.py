"""Answers a buyer would act on: job and capacity limits, the price one would pay, commitments, starting point."""

import dataclasses
import math
import re

import polars as pl
import pytest

from workbook import catalog, present
from workbook.training import options, recommend
from workbook.training.scenario import Constraints, ModelSpec, Scenario

SCENARIOS = [
    Scenario(model=ModelSpec.from_params(759e9), tokens=20 * 759e9, days=30, constraints=Constraints(deadline_days=30)),
    Scenario(model=ModelSpec.from_params(70e9, 12e9), tokens=1.4e12, days=1, constraints=Constraints(deadline_days=1)),
    Scenario(model=ModelSpec.from_params(70e9), tokens=15e12, days=60, constraints=Constraints(deadline_days=60)),
    Scenario(model=ModelSpec.from_params(7e9), tokens=140e9, days=10),
    Scenario(
        model=ModelSpec.from_params(70e9),
        tokens=1.4e12,
        days=30,
        pricing=("commit-1y",),
        constraints=Constraints(deadline_days=30),
    ),
    Scenario(
        model=ModelSpec.from_params(70e9),
        tokens=15e12,
        days=14,
        pricing=("spot", "on-demand"),
        constraints=Constraints(deadline_days=14),
    ),
    Scenario(model=ModelSpec.from_params(405e9), tokens=15e12, days=90, constraints=Constraints(deadline_days=90)),
]
SCENARIO_IDS = ["759b-30d", "moe-1d", "70b-15t-60d", "7b-no-deadline", "70b-commit-30d", "70b-spot-14d", "405b-90d"]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=SCENARIO_IDS)
def test_no_feasible_option_exceeds_its_job_size_or_capacity(scenario):
    frame = options.evaluate(scenario)
    feasible = frame.filter(pl.col("feasible"))
    assert frame.height > 0
    assert feasible.filter(pl.col("chips") > pl.col("max_job_chips")).height == 0
    assert feasible.filter(pl.col("chips") > pl.col("capacity_max_chips")).height == 0
    assert feasible.filter(pl.col("min_chips_to_fit") > pl.col("chips_limit")).height == 0
    if scenario.constraints.deadline_days is not None:  # the deadline holds for the finish, porting included
        assert feasible.filter(pl.col("finish_days") > scenario.constraints.deadline_days).height == 0
    rec = recommend.recommend(frame)
    if rec.best is not None:
        assert rec.best["chips"] <= rec.best["chips_limit"] <= rec.best["max_job_chips"]


def test_759b_in_30_days_gives_the_fastest_plan_within_limits():
    s = SCENARIOS[0]
    assert options.evaluate(s).filter(pl.col("feasible")).height == 0
    lines = recommend.shortest_plan(s)
    assert lines[0].startswith("Nothing finishes within 30 days. The fastest plan:")
    free = options.evaluate(dataclasses.replace(s, constraints=Constraints())).filter(pl.col("feasible"))
    assert free.height > 0 and free["finish_days"].min() > 30
    assert (free["chips"] <= free["max_job_chips"]).all()


def test_capped_options_show_time_at_the_limit():
    frame = options.evaluate(SCENARIOS[0])
    capped = frame.filter(pl.col("chips_capped") & pl.col("usd_per_chip_hour").is_not_null())
    assert capped.height > 0
    assert (capped["chips"] <= capped["chips_limit"]).all()
    assert capped.filter(pl.col("infeasible_code") == "past_deadline").height > 0


def test_price_is_cheapest_region_that_can_run_the_job_and_overrides_win(tmp_path):
    s = Scenario(model=ModelSpec.from_params(70e9), tokens=1.4e12, days=30, pricing=("on-demand",))
    row = (
        options.evaluate(s)
        .filter((pl.col("accelerator_id") == "h100-sxm") & (pl.col("cloud") == "aws"))
        .row(0, named=True)
    )
    cat = catalog.load()
    quotes = cat.price_quotes(("on-demand",)).filter(
        (pl.col("accelerator_id") == "h100-sxm") & (pl.col("cloud") == "aws") & (pl.col("chips_per_instance") >= 8)
    )
    assert quotes.height > 1
    assert row["usd_per_chip_hour"] == pytest.approx(quotes["usd_per_chip_hour"].min())
    assert row["usd_per_chip_hour"] <= row["usd_per_chip_hour_typical"] and row["region"]
    mine = tmp_path / "mine.csv"
    mine.write_text(
        "accelerator_id,cloud,pricing_model,usd_per_chip_hour,as_of,source\nh100-sxm,aws,on-demand,9.5,2026-11-01,deal\n"
    )
    ours = catalog.load(price_overrides=mine)
    overridden = options.evaluate(s, ours).filter((pl.col("accelerator_id") == "h100-sxm") & (pl.col("cloud") == "aws"))
    assert overridden["usd_per_chip_hour"].item() == 9.5  # dearer than the cheapest shipped quote, and still used
    assert overridden["user_price"].item() and overridden["region"].item() == "any"


def test_a_negotiated_price_for_one_region_competes_with_the_other_regions(tmp_path):
    s = Scenario(model=ModelSpec.from_params(70e9), tokens=1.4e12, days=30, pricing=("on-demand",))
    h100_aws = (pl.col("accelerator_id") == "h100-sxm") & (pl.col("cloud") == "aws")
    listed = options.evaluate(s).filter(h100_aws).row(0, named=True)
    regions = catalog.load().price_quotes(("on-demand",)).filter(h100_aws)["region"].unique().to_list()
    elsewhere = next(r for r in regions if r != listed["region"])
    header = "accelerator_id,cloud,pricing_model,usd_per_chip_hour,as_of,source,region\n"
    for region, price, mine in ((listed["region"], 0.5, True), (elsewhere, 9.5, False)):
        path = tmp_path / f"{region}.csv"
        path.write_text(header + f"h100-sxm,aws,on-demand,{price},2026-11-01,deal,{region}\n")
        row = options.evaluate(s, catalog.load(price_overrides=path)).filter(h100_aws).row(0, named=True)
        # cheaper than every list price: it wins its region and the job; dearer: a list price elsewhere stays cheaper
        assert row["user_price"] is mine and row["region"] == listed["region"]
        assert row["usd_per_chip_hour"] == (price if mine else listed["usd_per_chip_hour"])


def test_small_instances_do_not_price_a_multi_node_job():
    cat = catalog.load()
    jobs = pl.DataFrame(
        {
            "row": [0, 1],
            "accelerator_id": ["l4", "l4"],
            "cloud": ["aws", "aws"],
            "pricing_model": ["on-demand"] * 2,
            "chips": [1, 64],
            "block_chips": [8, 8],
            "kind": ["gpu", "gpu"],
        }
    )
    picked = cat.cheapest_quotes(jobs, ("on-demand",)).sort("row")
    assert picked["chips_per_instance"][0] >= 1 and picked["chips_per_instance"][1] >= 8
    assert picked["quote_usd_per_chip_hour"][0] < picked["quote_usd_per_chip_hour"][1]


@pytest.mark.parametrize(
    ("tpu", "chips", "block", "rented"),
    [
        ("tpu-v7", 3, 1, 4),  # three one-chip replicas: TPU7x has no single-chip slice, one 4-chip host
        ("tpu-v7", 6, 64, 8),  # a 6-chip job: two hosts
        ("tpu-v6e", 3, 1, 3),  # v6e-1 slices: one chip each
        ("tpu-v6e", 6, 2, 8),  # replicas of two chips need 2x2 slices: whole hosts
        ("tpu-v5p", 1, 64, 4),  # v5p's smallest slice is one full host (2x2x1)
        ("tpu-v5e", 1, 256, 1),
    ],
)
def test_a_tpu_rents_whole_slices(tpu, chips, block, rented):
    cat = catalog.load()
    jobs = pl.DataFrame(
        {"row": [0], "accelerator_id": [tpu], "cloud": ["gcp"], "pricing_model": ["on-demand"], "chips": [chips]}
    ).with_columns(block_chips=pl.lit(block), kind=pl.lit("tpu"))
    picked = cat.cheapest_quotes(jobs, ("on-demand",))
    assert picked["rented_chips"].to_list() == [rented]


def test_the_quote_count_and_typical_rate_are_of_the_instances_that_can_run_the_job():
    cat = catalog.load()
    frame = pl.DataFrame({"accelerator_id": ["l4"], "cloud": ["aws"], "pricing_model": ["on-demand"]}).with_columns(
        chips=pl.lit(64), block_chips=pl.lit(8), kind=pl.lit("gpu")
    )
    summary = cat.price_summary(("on-demand",), ("aws",)).filter(pl.col("accelerator_id") == "l4")
    quotes = cat.price_quotes(("on-demand",), ("aws",)).filter(
        (pl.col("accelerator_id") == "l4") & (pl.col("chips_per_instance") >= 8)
    )
    priced = cat.priced(frame.join(summary, on=["accelerator_id", "cloud", "pricing_model"]), ("on-demand",))
    row = priced.row(0, named=True)
    # one-GPU g6 instances are quoted too, but cannot hold an eight-GPU block: they are not this job's quotes
    assert 0 < quotes.height < summary["price_rows"].item()
    assert row["price_rows"] == quotes.height
    assert row["usd_per_chip_hour_typical"] == pytest.approx(quotes["usd_per_chip_hour"].median())
    assert row["usd_per_chip_hour"] <= row["usd_per_chip_hour_typical"] == row["usd_per_chip_hour_high"]
    newest = cat.usable_prices()["as_of"].max()
    assert row["price_age_years"] == pytest.approx((newest - row["price_as_of"]).days / 365)


def test_jax_team_on_tpu_pays_no_porting_and_porting_moves_the_finish():
    base = Scenario(
        model=ModelSpec.from_params(7e9),
        tokens=140e9,
        framework="jax",
        days=20,
        pricing=("on-demand",),
        accelerators=("tpu-v5p",),
        constraints=Constraints(deadline_days=20),
    )
    from_gpu = options.evaluate(base).row(0, named=True)
    on_tpu = options.evaluate(dataclasses.replace(base, current_platform="tpu")).row(0, named=True)
    assert on_tpu["migration_weeks"] == 0 and on_tpu["migration_cost_usd"] == 0 and on_tpu["start_delay_days"] == 0
    assert from_gpu["start_delay_days"] > 0
    assert from_gpu["finish_days"] == pytest.approx(from_gpu["start_delay_days"] + from_gpu["train_days"])
    assert from_gpu["finish_days"] <= 20  # chips are sized for the window left after porting


def test_spot_at_thousands_of_chips_for_long_jobs_is_ruled_out_and_overhead_grows():
    s = Scenario(
        model=ModelSpec.from_params(70e9), tokens=2e12, chips=2048, pricing=("spot",), accelerators=("h100-sxm",)
    )
    big = options.evaluate(s)
    assert (big["infeasible_code"] == "spot_at_scale").all()
    small = options.evaluate(dataclasses.replace(s, chips=64))
    assert big["preemption_overhead"].min() > small["preemption_overhead"].max() > 0


def test_commitment_for_a_short_job_says_whole_term_and_why_it_wins():
    s = Scenario(model=ModelSpec.from_params(7e9), tokens=140e9, days=30, pricing=("commit-1y",))
    rec = recommend.recommend(options.evaluate(s))
    text = " ".join(rec.reasons)
    assert rec.best["term_months"] == 12 and rec.best["cost_usd"] > rec.best["amortised_cost_usd"]
    assert "whole 12-month term is billed" in text and "ranked" in text and "only commitment prices" in text
    assert "Main risk:" in text


def test_a_rival_billed_for_a_whole_term_is_compared_first_with_the_jobs_share_of_it():
    # A 2-month job against a TPU only priced on 1-year commitments: against the whole-term bill the pick looks 92%
    # cheaper; a team that uses the rest of the term pays only the job's share, against which it is 28% cheaper
    # (measured when written). The share leads; the whole term follows.
    s = Scenario(model=ModelSpec.from_params(70e9), tokens=15e12, days=60, constraints=Constraints(deadline_days=60))
    frame = options.evaluate(s)
    rec = recommend.recommend(frame)
    tpu = next(r for r in rec.reasons if r.startswith("Best TPU alternative"))
    rival = next(o for o in recommend.rank_per_accelerator(frame, "cost_usd")[0] if o["kind"] == "tpu")
    assert rival["term_months"] and rival["amortised_cost_usd"] < rival["cost_usd"], "no longer a commitment rival"
    found = re.search(
        r"is (\d+)% (cheaper|dearer) than .*, on this job's \$[\d.]+M share of a 12-month commitment .*; "
        r"(\d+)% cheaper if the rest goes unused \(\$[\d.]+M whole-term bill",
        tpu,
    )
    assert found, tpu
    share = (1 if found[2] == "cheaper" else -1) * int(found[1])
    assert share == round(100 * (1 - rec.best["cost_usd"] / rival["amortised_cost_usd"])), tpu
    assert int(found[3]) == round(100 * (1 - rec.best["cost_usd"] / rival["cost_usd"])) > share, tpu


def test_every_current_tpu_has_1y_and_3y_prices():
    cat = catalog.load()
    tpus = cat.accelerators.filter((pl.col("kind") == "tpu") & pl.col("offered"))["accelerator_id"]
    models = cat.usable_prices().filter(pl.col("accelerator_id").is_in(tpus.implode()))
    for tpu in tpus:
        have = set(models.filter(pl.col("accelerator_id") == tpu)["pricing_model"])
        assert {"commit-1y", "commit-3y"} <= have, tpu


def test_the_deadline_counts_porting_as_well_as_training():
    """Training alone fits the deadline; porting before it does not (chips fixed, so sizing cannot absorb it)."""
    s = Scenario(
        model=ModelSpec.from_params(7e9),
        tokens=140e9,
        chips=256,
        pricing=("on-demand",),
        accelerators=("tpu-v5p",),
    )
    free = options.evaluate(s).row(0, named=True)
    assert free["feasible"] and free["start_delay_days"] > free["train_days"] > 0

    def ruled(deadline):
        with_deadline = dataclasses.replace(s, constraints=Constraints(deadline_days=deadline))
        return options.evaluate(with_deadline).select("infeasible_code", "infeasible_reason").row(0)

    code, reason = ruled(free["start_delay_days"] + free["train_days"] / 2)
    assert code == "past_deadline"
    assert f"including {free['start_delay_days']:.1f} days of porting" in reason and "-day deadline" in reason
    whole_days = math.floor(free["start_delay_days"] * 0.9)
    code, reason = ruled(whole_days)
    assert code == "porting_past_deadline" and f"past the {whole_days}-day deadline" in reason  # not "18.0-day"
    assert ruled(math.ceil(free["finish_days"])) == (None, None)


def test_card_names_the_deadline_as_the_main_risk_when_the_slow_end_passes_it():
    s = Scenario(
        model=ModelSpec.from_params(70e9),
        tokens=1.4e12,
        days=30,
        pricing=("commit-1y",),
        accelerators=("h100-sxm",),
        constraints=Constraints(deadline_days=30),
    )
    frame = options.evaluate(s)
    rec = recommend.recommend(frame)
    best = rec.best
    assert best["finish_days"] <= 30 < best["finish_days_high"]
    risks = [r for r in rec.reasons if r.startswith("Main risk")]
    assert len(risks) == 1 and risks[0].startswith("Main risk: time.")
    assert f"could take up to {present.days(best['finish_days_high'])} against a 30-day target" in risks[0]
    # The same pick with a target past its slow end: the risk named is another one.
    roomy = recommend.recommend(frame.with_columns(deadline_days=pl.lit(best["finish_days_high"] + 1)))
    assert roomy.best["accelerator_id"] == best["accelerator_id"]
    assert not any(r.startswith("Main risk: time.") for r in roomy.reasons)
    assert any(r.startswith("Main risk:") for r in roomy.reasons)


def test_shortest_plan_says_how_much_of_it_is_porting():
    s = dataclasses.replace(SCENARIOS[0], accelerators=("tpu-v7",))
    lines = recommend.shortest_plan(s)
    assert lines[0].startswith("Nothing finishes within 30 days.") and "days of porting" in lines[0]
    assert "of them are porting before training can start" in lines[1]
    at_home = recommend.shortest_plan(dataclasses.replace(s, framework="jax", current_platform="tpu"))
    assert at_home[0].startswith("Nothing finishes within 30 days.")
    assert "porting" not in at_home[0] + at_home[1]


@pytest.mark.parametrize("order", [("us-west-2", "eu-west-1"), ("eu-west-1", "us-west-2")])
def test_a_tie_between_regions_goes_to_the_same_region_whatever_the_file_order(tmp_path, order):
    path = tmp_path / "tie.csv"
    header = "accelerator_id,cloud,pricing_model,usd_per_chip_hour,as_of,source,region\n"
    path.write_text(header + "".join(f"h100-sxm,aws,on-demand,2.0,2026-11-01,deal,{r}\n" for r in order))
    cat = catalog.load(price_overrides=path)
    jobs = pl.DataFrame(
        {"row": [0], "accelerator_id": ["h100-sxm"], "cloud": ["aws"], "pricing_model": ["on-demand"]}
    ).with_columns(chips=pl.lit(64), block_chips=pl.lit(8), kind=pl.lit("gpu"))
    picked = cat.cheapest_quotes(jobs, ("on-demand",))
    assert picked.height == 1 and picked["quote_usd_per_chip_hour"][0] == 2.0
    assert picked["region"][0] == "eu-west-1"  # the first by name, not the first in the file
