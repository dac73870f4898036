"""Ranking under constraints and the plain-language reasons."""

import dataclasses
import math

import polars as pl
import pytest

from workbook.present import days
from workbook.training import options, recommend
from workbook.training.scenario import Assumptions, Constraints, ModelSpec, Scenario


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


def test_a_cheaper_negotiated_price_wins_and_is_marked(tmp_path):
    from workbook import catalog
    from workbook.app import state

    scenario = state.scenario_from({"days": 60})  # at 30 days on-demand capacity leaves H100 past the deadline
    before = recommend.recommend(options.evaluate(scenario, catalog.load()))
    assert before.best is not None and before.best["accelerator_id"] != "h100-sxm"
    mine = tmp_path / "mine.csv"
    mine.write_text(
        "accelerator_id,cloud,pricing_model,usd_per_chip_hour,as_of,source\n"
        "h100-sxm,nebius,on-demand,0.80,2026-01-01,our contract\n"
    )
    after = recommend.recommend(options.evaluate(scenario, catalog.load(price_overrides=mine)))
    assert after.best["accelerator_id"] == "h100-sxm" and after.best["cloud"] == "nebius"
    assert "your price" in after.headline and any("your price" in r for r in after.reasons)
    assert "your price" not in before.headline


def test_the_pick_is_compared_with_a_runner_up_that_is_an_alternative_on_time():
    # 70B on 2T tokens, on-demand: MI325X is held to its largest documented job (one 8-GPU node) and would take
    # years where the pick takes weeks; it stays a runner-up by price, but the comparison and the close call are
    # made against the next one, which finishes in about the same time.
    s = Scenario(model=ModelSpec.from_params(70e9), tokens=2e12, framework="pytorch", days=30, pricing=("on-demand",))
    r = recommend.recommend(options.evaluate(s), "pytorch")
    slow, *others = r.runners_up
    assert slow["finish_days"] > recommend.FAR_LATER * r.best["finish_days"], "no far slower runner-up any more"
    other = others[0]
    assert other["finish_days"] <= recommend.FAR_LATER * r.best["finish_days"]
    assert r.reasons[1].startswith(f"{r.best['name']} is ") and other["name"] in r.reasons[1]
    assert slow["name"] not in " ".join(r.reasons[1:3])
    # alone, the far slower one is said to finish far later, and is no close call; a feasible option meets any
    # deadline, so no deadline rules it out
    versus = recommend._compare(r.best, slow)
    assert "times later." in versus and "rules it out" not in versus, versus
    deadline = math.ceil(slow["finish_days"])
    assert f"times later, though within the {deadline}-day deadline." in recommend._compare(
        {**r.best, "deadline_days": deadline}, slow
    )
    assert recommend._close_call(r.best, slow) is None


def test_a_far_slower_option_is_not_said_to_be_ruled_out_by_time_without_a_deadline():
    # 1,024 chips and no --days: the card said of H200 "It would finish 2 times later, so time rules it out".
    s = Scenario(model=ModelSpec.preset("llama3-70b"), tokens=1.4e12, chips=1024, framework="jax", days=None)
    r = recommend.recommend(options.evaluate(s), "jax", "tpu")
    assert r.best["deadline_days"] is None
    slower = [o for o in r.runners_up if recommend._far_later(r.best, o)]
    assert slower, "no far slower runner-up any more"
    for other in slower:
        versus = recommend._compare(r.best, other)
        ratio = other["finish_days"] / r.best["finish_days"]
        assert f"It would finish {ratio:.1f} times later." in versus and "deadline" not in versus, versus
    assert not any("rules it out" in line for line in r.reasons)


def _llama3_405b(deadline_days):
    from workbook.catalog.schemas import PRICING_MODELS
    from workbook.training.scenario import TODAYS_PRACTICE_TOKENS

    return Scenario(
        model=ModelSpec.preset("llama3-405b", 8192),
        tokens=TODAYS_PRACTICE_TOKENS,
        framework="pytorch",
        days=deadline_days,
        pricing=PRICING_MODELS,
        constraints=Constraints(deadline_days=deadline_days),
    )


def test_a_much_cheaper_plan_just_past_the_deadline_is_named():
    # Llama 3.1 405B on 15T tokens in 80 days: only a TPU commitment meets the date, billed for its whole year, while
    # Meta's own shape of run (16,384 H100s) finishes a couple of days late for a fraction of that bill.
    frame = options.evaluate(_llama3_405b(80))
    r = recommend.recommend(frame, "pytorch")
    line = next(text for text in r.reasons if text.startswith("Just past the deadline"))
    late = frame.filter(
        (pl.col("infeasible_code") == "past_deadline")
        & (pl.col("finish_days") <= 80 * (1 + recommend.NEAR_MISS_DAYS))
        & (pl.col("cost_usd") <= recommend.NEAR_MISS_COST * r.best["cost_usd"])
    ).sort("cost_usd")
    named = late.row(0, named=True)
    assert named["finish_days"] > 80 and named["name"] in line and named["cloud"] in line
    assert f"{1 - named['cost_usd'] / r.best['cost_usd']:.0%} less" in line
    # with the date moved past it, that plan (or a cheaper one) is the pick and no near miss is left to name
    relaxed = recommend.recommend(options.evaluate(_llama3_405b(math.ceil(named["finish_days"]))), "pytorch")
    assert relaxed.best["cost_usd"] <= named["cost_usd"]


def test_no_near_miss_is_named_without_a_deadline_or_when_none_is_cheap_enough():
    assert recommend._near_miss({"deadline_days": None, "cost_usd": 1.0}, pl.DataFrame()) is None
    r = _rec()  # 70B in 30 days on demand: the late plans cost more than half the pick's bill, or are far later
    assert not any(text.startswith("Just past the deadline") for text in r.reasons)


def test_a_capacity_risk_says_why_the_chips_may_not_be_there():
    # 8B on 128 spot TPU v5p (two 64-chip cubes): the risk is that GCP's spot ceiling is assumed, not published; on
    # 64 TPU v5e it read "(largest documented job 50,944, job)", a job size 800 times the plan's and documented.
    # 1,024 reserved B200: a large order, on a chip whose largest single job is a cluster configuration, not a run.
    # 8 H100 (one node, rented as a unit): no capacity risk; it read "Confirm the provider can deliver them at once".
    def risk(accelerator, chips, pricing, params, tokens, **kw):
        s = Scenario(
            model=ModelSpec.from_params(params),
            tokens=tokens,
            chips=chips,
            accelerators=(accelerator,),
            pricing=(pricing,),
            **kw,
        )
        rec = recommend.recommend(options.evaluate(s), s.framework, s.current_platform)
        return next(r for r in rec.reasons if r.startswith("Main risk"))

    tpu = risk("tpu-v5p", 128, "spot", 8e9, 160e9, framework="jax", current_platform="tpu")
    assert tpu.startswith("Main risk: capacity. 128 Google TPU v5p spot on gcp: how many gcp rents at once"), tpu
    assert "not published (assumed: 256)" in tpu and "50,944" not in tpu, tpu
    gpu = risk("b200", 1024, "reserved-contract", 70e9, 2e12)
    assert "a large order; the largest single job assumed on them, 2,048 chips, is a configuration" in gpu, gpu
    h100 = risk("h100-sxm", 16384, "reserved-contract", 405e9, 15.6e12)  # Llama 3.1 405B's: the largest documented
    assert "a large order; as large as the largest single job documented on them (16,384 chips)" in h100, h100
    node = risk("h100-sxm", 8, "spot", 125e6, 2.5e9)
    assert not node.startswith("Main risk: capacity") and "deliver them" not in node, node


def test_a_pipeline_fed_fewer_micro_batches_than_stages_is_charged_and_told_the_batch_it_needs():
    # Llama 3 70B on Meta's 16,384 H100 at a 4M-token batch: 512 sequences of 8k leave at most DP512, so a pipeline,
    # and 2 micro-batches for 4 stages, which Megatron will not interleave: the plan charges the plain bubble and
    # says the batch that would let it interleave. A default batch is raised to feed the pipeline instead, and said.
    def plan(model, tokens, batch=None):
        s = Scenario(
            model=ModelSpec.preset(model),
            tokens=tokens,
            chips=16_384,
            accelerators=("h100-sxm",),
            framework="pytorch",
            assumptions=Assumptions(global_batch_tokens=batch),
        )
        return recommend.recommend(options.evaluate(s), "pytorch")

    def batch_line(rec):
        return next(r for r in rec.reasons if r.startswith("Batch:"))

    given = plan("llama3-70b", 15e12, batch=4 * 2**20)
    best = given.best
    assert best["pipeline_parallel"] > best["micro_batches"] and best["planned_batch_tokens"] == 4 * 2**20
    needed = best["planned_batch_tokens"] * best["pipeline_parallel"] / best["micro_batches"]
    line = batch_line(given)
    assert f"at least {needed / 1e6:.1f}M tokens" in line and "counted in the times above" in line
    assert f"adds {(best['pipeline_parallel'] - 1) / best['micro_batches']:.0%}" in line
    raised = plan("llama3-70b", 15e12)
    best = raised.best
    assert best["micro_batches"] >= best["pipeline_parallel"] > 1
    assert best["global_batch_tokens"] < best["planned_batch_tokens"] <= best["max_global_batch_tokens"]
    assert "not the default" in batch_line(raised)
    assert raised.best["train_days"] < given.best["train_days"]
    fed = plan("llama3-405b", 15.6e12)
    assert fed.best["micro_batches"] >= fed.best["pipeline_parallel"] > 1
    assert not any(r.startswith("Batch:") for r in fed.reasons)


def test_overlapping_ranges_are_said_once():
    # The comparison with the runner-up and the close-call line would otherwise both say the ranges overlap.
    r = _rec()
    close = [line for line in r.reasons if line.startswith("Too close to call")]
    assert len(close) == 1 and "(the cost ranges overlap)" in close[0]
    other = close[0].split("against ")[1].split(" on ")[0]
    versus = next(line for line in r.reasons if f"than {other}" in line)
    assert "ranges overlap" not in versus


def test_a_commitment_shorter_than_its_term_says_why_it_wins():
    # Llama 3 70B on 15T tokens, 1,024 TPU v5p: every pricing model is compared, and on-demand and spot are ruled
    # out by capacity; the card said it won "because only commitment prices were compared".
    from workbook.training.scenario import TODAYS_PRACTICE_TOKENS

    def commitment(pricing):
        s = Scenario(
            model=ModelSpec.preset("llama3-70b"),
            tokens=TODAYS_PRACTICE_TOKENS,
            chips=1024,
            accelerators=("tpu-v5p",),
            pricing=pricing,
        )
        frame = options.evaluate(s)
        rec = recommend.recommend(frame, "pytorch")
        assert rec.best["term_months"] and rec.best["train_days"] < rec.best["term_months"] * 365 / 12
        return frame, next(r for r in rec.reasons if r.startswith("Commitment"))

    frame, every = commitment(("on-demand", "spot", "commit-1y", "commit-3y"))
    assert "only commitment prices" not in every and "takes only" not in every, every
    ruled_out = frame.filter(pl.col("term_months").is_null())
    assert ruled_out.height and not ruled_out["feasible"].any()
    for row in ruled_out.iter_rows(named=True):
        assert f"{row['pricing_model']}: {row['infeasible_reason']}" in every, every
    _, committed = commitment(("commit-1y",))
    assert "only commitment prices were compared" in committed


def test_a_run_longer_than_its_commitment_term_is_billed_and_told_in_whole_terms():
    # 2T parameters on 30T tokens on 9,216 TPU7x: 473 days of training on a 1-year commitment. It read "$879.6M
    # whole-term bill; $879.6M of it for this job's hours if the rest of the 12-month term is used".
    s = Scenario(
        model=ModelSpec.from_params(2e12),
        tokens=30e12,
        chips=9216,
        accelerators=("tpu-v7",),
        pricing=("commit-1y",),
    )
    r = recommend.recommend(options.evaluate(s), "pytorch")
    best = r.best
    terms = math.ceil(best["train_days"] / 365)
    assert terms > 1 and recommend.terms_billed(best) == terms
    assert best["cost_usd"] > best["amortised_cost_usd"]
    line = recommend.describe(best)
    assert f"bill for {terms} whole 12-month terms" in line and "the rest of the last 12-month term" in line, line
    assert "whole-term bill" not in line
    commitment = next(text for text in r.reasons if text.startswith("Commitment"))
    assert f"{terms} whole 12-month terms are billed" in commitment, commitment


def test_a_spot_pick_says_what_it_assumes_for_interruptions():
    s = Scenario(model=ModelSpec.preset("llama3-70b"), tokens=1.4e12, days=90, pricing=("spot",))
    r = recommend.recommend(options.evaluate(s), "pytorch")
    assert r.best["pricing_model"] == "spot" and r.best["preemption_overhead"] > 0
    line = next(text for text in r.reasons if text.startswith("Spot:"))
    assert f"add {r.best['preemption_overhead']:.0%} to the training time" in line and "Checkpoint often" in line
    on_demand = recommend.recommend(options.evaluate(dataclasses.replace(s, pricing=("on-demand",))))
    assert not any(text.startswith("Spot:") for text in on_demand.reasons)


def test_the_batch_line_tells_a_raise_for_the_pipeline_from_whole_micro_batches():
    seq, asked = 8192, 512 * 8192  # 512 sequences of 8k

    def line(d, p, m):
        plan = {"pipeline_parallel": p, "micro_batches": float(m), "data_parallel": d, "global_batch_tokens": asked}
        return recommend._batch_line({**plan, "planned_batch_tokens": float(m * d * seq)})

    # DP256 x PP4: 2 micro-batches asked, raised to 4 to feed the stages
    assert "not the default 4.2M: a micro-batch for each of the layout's 4 pipeline stages" in line(256, 4, 4)
    # DP191 x PP2: 2.68 micro-batches asked, 3 whole ones run (the pipeline was fed already)
    assert line(191, 2, 3) == (
        "Batch: planned at 4.7M tokens, not 4.2M: each of the 191 data-parallel ranks runs 3 whole micro-batches "
        "a step."
    )
    assert line(256, 1, 2) is None  # exactly the batch asked for


def _llama70_on_h100(tokens: float, chips: int, pricing: tuple[str, ...]):
    """Llama 3.1 70B on ``chips`` H100s under ``pricing``: the scenario, its options and its recommendation."""
    s = Scenario(
        model=ModelSpec.preset("llama3-70b"), tokens=tokens, chips=chips, accelerators=("h100-sxm",), pricing=pricing
    )
    frame = options.evaluate(s)
    return s, frame, recommend.recommend(frame, "pytorch")


def test_a_reserved_contract_says_its_term_is_unstated_and_names_the_option_without_one():
    # A reserved-contract rate is a 'from' price with no stated term, billed for the run's hours: on 256 H100s it
    # won a 2T-token 70B run with no word that a minimum term could bill more.
    s, frame, rec = _llama70_on_h100(2e12, 256, ("on-demand", "reserved-contract"))
    assert rec.best["pricing_model"] == "reserved-contract"
    line = next(r for r in rec.reasons if r.startswith("Contract:"))
    assert "term its rate card does not state" in line and "confirm" in line
    hourly = (
        frame.filter(pl.col("feasible") & (pl.col("pricing_model") == "on-demand")).sort("cost_usd").row(0, named=True)
    )
    assert f"The cheapest option without one: {recommend.describe(hourly)}; this plan is" in line, line
    on_demand = recommend.recommend(options.evaluate(dataclasses.replace(s, pricing=("on-demand",))), "pytorch")
    assert not any(r.startswith("Contract:") for r in on_demand.reasons)


def test_the_fastest_plan_after_a_missed_deadline_is_no_slower_than_the_plans_that_missed_it():
    # 70B on 2T tokens on Trainium2 by 45 days (a team on NVIDIA: 28 days of porting first): 4,096 chips miss by 1.3
    # days, yet the card called a 1,632-chip plan finishing in 72.8 days the fastest and asked for 73 days.
    s = Scenario(
        model=ModelSpec.preset("llama3-70b"),
        tokens=2e12,
        accelerators=("trainium2",),
        current_platform="nvidia",
        days=45,
        constraints=Constraints(deadline_days=45),
    )
    frame = options.evaluate(s)
    missed = frame.filter(pl.col("infeasible_code") == "past_deadline")["finish_days"].min()
    lines = recommend.shortest_plan(s)
    fastest = next(line for line in lines if line.startswith("Nothing finishes within 45 days"))
    assert f"finishes in {days(missed)}" in fastest, (fastest, missed)
    assert any(line.startswith(f"Relax the deadline to about {math.ceil(missed)} days") for line in lines), lines


def test_an_instance_rented_whole_bills_all_its_chips():
    # 12 H100s on AWS run on two p5.48xlarge of 8: 16 are rented and billed, not 12.
    s = Scenario(
        model=ModelSpec.from_params(7e9),
        tokens=100e9,
        chips=12,
        accelerators=("h100-sxm",),
        pricing=("on-demand",),
        constraints=Constraints(clouds=("aws",)),
    )
    rec = recommend.recommend(options.evaluate(s), "pytorch")
    best = rec.best
    assert best["instance_type"] == "p5.48xlarge" and best["rented_chips"] == 16
    hours = best["train_days"] * 24
    assert best["compute_cost_usd"] == pytest.approx(16 * hours * best["usd_per_chip_hour"], rel=1e-6)
    price = next(r for r in rec.reasons if r.startswith("Price:"))
    assert "12 chips take 2 instances, and all 16 chips are billed" in price
    # a job that fills its instances is billed for its own chips
    full = recommend.recommend(options.evaluate(dataclasses.replace(s, chips=16)), "pytorch").best
    assert full["rented_chips"] == 16 and full["compute_cost_usd"] == pytest.approx(
        16 * full["train_days"] * 24 * full["usd_per_chip_hour"], rel=1e-6
    )


def test_a_capacity_block_run_is_billed_its_whole_block_and_says_so():
    # 70B on 1.4T tokens on 512 H100s: 37.6 days of training buy a 42-day block (1-day steps to 14 days, then weeks).
    _, _, rec = _llama70_on_h100(1.4e12, 512, ("capacity-block",))
    best = rec.best
    block_days = math.ceil(best["train_days"] / 7) * 7
    assert best["chip_hours"] == pytest.approx(512 * block_days * 24)
    assert f"take a {block_days}-day block" in next(r for r in rec.reasons if r.startswith("Capacity block:"))


def test_gb200_capacity_blocks_rent_whole_ultraservers():
    # AWS sells GB200 capacity blocks as u-p6e-gb200x72 UltraServers (72 GPUs): 1,000 chips rent 14 of them
    s = Scenario(
        model=ModelSpec.from_params(70e9), tokens=2e12, chips=1000, accelerators=("gb200",), pricing=("capacity-block",)
    )
    rec = recommend.recommend(options.evaluate(s), "pytorch")
    best = rec.best
    assert best["rented_chips"] == 1008 and best["chip_hours"] == pytest.approx(1008 * 10 * 24)
    assert "1,000 chips take 14 instances, and all 1,008 chips are billed" in next(
        r for r in rec.reasons if r.startswith("Price:")
    )


def test_a_deadline_plan_takes_every_chip_of_the_instances_it_rents():
    # 70B on 15T tokens in 60 days on AWS GB200 capacity blocks: sized for the deadline at 1,244 chips, it rents 18
    # UltraServers of 72 anyway, so it runs on all 1,296, sooner, for a bill no larger
    s = Scenario(
        model=ModelSpec.from_params(70e9),
        tokens=15e12,
        days=60,
        accelerators=("gb200",),
        pricing=("capacity-block",),
    )
    best = recommend.recommend(options.evaluate(s), "pytorch").best
    assert best["chips"] % 72 == 0 and best["rented_chips"] == best["chips"], best["chips"]
    assert best["train_days"] < 60


def test_the_main_risk_says_no_run_calibrates_a_chip_only_where_none_does():
    # FP8 on H100 is its measured BF16 base x the family's paired FP8 speed-up: calibrated, not a proxy; H800's base
    # is a proxy of H100's (judgement), so its card says so.
    assert not recommend._uncalibrated(
        "FP8 1.48x the BF16 rate (median of 2 paired run(s) on this family); BF16 base: median of 6 run(s): a, b"
    )
    assert not recommend._uncalibrated("no paired INT8 training runs: BF16 rate; BF16 base: median of 2 run(s): a")
    assert recommend._uncalibrated("FP8 1.48x the BF16 rate (...); BF16 base: proxy: h100-sxm x 0.95 (judgement)")
    assert recommend._uncalibrated("no published runs and no proxy: median of all calibrated chips")
    s = Scenario(
        model=ModelSpec.preset("llama3-70b"), tokens=2e12, chips=1024, accelerators=("h100-sxm",), precision="fp8"
    )
    rec = recommend.recommend(options.evaluate(s), "pytorch")
    assert not any(r.startswith("Main risk: speed") for r in rec.reasons), rec.reasons


def test_an_accelerator_ruled_out_shows_its_nearest_miss():
    # 70B on 15T tokens in 60 days: an A100 read "finishes in 2,675 days on 256 chips" (its spot option) while its
    # committed thousands of chips finish in months.
    from workbook.training.scenario import TODAYS_PRACTICE_TOKENS

    s = Scenario(
        model=ModelSpec.preset("llama3-70b"),
        tokens=TODAYS_PRACTICE_TOKENS,
        days=60,
        accelerators=("a100-80gb", "b200"),
        constraints=Constraints(deadline_days=60),
    )
    frame = options.evaluate(s)
    _, blocked = recommend.rank_per_accelerator(frame, "cost_usd")
    reason = blocked.filter(pl.col("accelerator_id") == "a100-80gb")["reason"].item()
    a100 = frame.filter((pl.col("accelerator_id") == "a100-80gb") & (pl.col("infeasible_code") == "past_deadline"))
    assert f"finishes in {a100['finish_days'].min():.1f} days" in reason, reason


def test_a_chip_without_a_price_still_says_how_long_it_would_train():
    # DeepSeek-V3 on 2,048 H800s: no H800 price in the data, but the estimate (close to DeepSeek's reported run) is
    # computed; the card showed only the missing price.
    s = Scenario(
        model=ModelSpec.preset("deepseek-v3"), tokens=14.8e12, chips=2048, accelerators=("h800",), precision="fp8"
    )
    frame = options.evaluate(s)
    row = frame.row(0, named=True)
    assert row["infeasible_code"] == "no_price"
    card = recommend.recommend(frame, "pytorch").reasons[0]
    assert f"(it would train in {row['train_days']:.1f} days on 2,048 chips: give your own price" in card, card
