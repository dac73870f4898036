"""Prefill/decode disaggregation: considered on request, chosen only where it needs fewer chips, and said so."""

import json

import polars as pl
import pytest

from workbook import report, serving
from workbook.cli import run
from workbook.errors import InputError
from workbook.serving import disaggregated, options
from workbook.training.scenario import ModelSpec

GPUS = ("h100-sxm", "h200", "mi300x", "b200")


def _busy(**kw):
    # 70B at 100 requests/s: enough traffic for two pools of whole replicas
    return serving.ServeScenario(model=ModelSpec.from_params(70e9), requests_per_s=100, accelerators=GPUS, **kw)


@pytest.fixture(scope="module")
def both(cat, eff):
    shared = serving.evaluate_serving(_busy(), cat, eff)
    split = serving.evaluate_serving(_busy(disaggregation=True), cat, eff)
    return shared, split


def test_off_by_default_every_answer_uses_replicas_that_do_both(both):
    shared, _ = both
    assert not shared["disaggregated"].any()
    assert shared.select(disaggregated.PREFILL_COLUMNS).null_count().row(0) == (shared.height,) * len(
        disaggregated.PREFILL_COLUMNS
    )


def test_chosen_only_where_it_needs_fewer_chips(both):
    shared, split = both
    first = ["accelerator_id", "chips_needed"]  # a fleet runs on all the chips it rents: compare what each needs
    before = shared.unique("accelerator_id").select(first).rename({"chips_needed": "before"})
    after = split.unique("accelerator_id").join(before, on="accelerator_id")
    assert after["disaggregated"].any(), after.select("accelerator_id", "chips", "before")
    won = after.filter(pl.col("disaggregated"))
    assert (won["chips"] < won["before"]).all() and (won["chips_without_disaggregation"] == won["before"]).all()
    kept = after.filter(~pl.col("disaggregated"))
    assert (kept["chips_needed"] == kept["before"]).all()


def test_split_pools_meet_both_targets_within_the_headroom(both):
    _, split = both
    s = _busy()
    won = split.filter(pl.col("disaggregated") & pl.col("feasible"))
    assert won.height > 0
    assert (won["tpot_ms"] <= s.tpot_ms).all() and (won["ttft_ms"] <= s.ttft_ms).all()
    assert (won["utilisation"] <= s.headroom + 1e-9).all() and (won["prefill_utilisation"] <= s.headroom + 1e-9).all()
    # chips = both pools
    assert (
        won["chips"]
        == won["replicas"] * won["chips_per_replica"] + won["prefill_replicas"] * won["prefill_chips_per_replica"]
    ).all()
    # the first token includes the KV cache's transfer over the network: a 1,000-token 70B prompt is a few MB
    assert ((won["kv_transfer_ms"] > 0.1) & (won["kv_transfer_ms"] < won["ttft_ms"])).all()


def test_decode_replicas_without_prompts_sustain_more_requests(cat, eff):
    s = _busy()
    reps = options._replicas(cat, s, eff).filter(pl.col("accelerator_id") == "h100-sxm")
    decode = disaggregated._decode_pool(reps, s, 100.0)
    assert decode.height == 1
    shared = reps.filter(pl.col("tensor_parallel") == decode["tensor_parallel"][0])
    assert decode["capacity_rps"][0] > shared["capacity_rps"][0] * 1.5  # prefill is most of a 1,000-token request


def test_the_prefill_pool_makes_the_first_token_without_scheduling_ahead(cat, eff):
    # TensorRT-LLM's defaults schedule a step ahead; a prefill pool, as NVIDIA configures its context workers, does
    # not: its first token is the same whichever the engine default says.
    s = _busy()
    reps = disaggregated.prefill_replicas(
        options._replicas(cat, s, eff).filter(pl.col("accelerator_id") == "h100-sxm"), s
    )
    assert reps["schedule_ahead"].all()  # the stack's engine default
    ahead, plain = (
        disaggregated._prefill_at(reps.with_columns(schedule_ahead=pl.lit(flag)), s, pl.lit(0.6))
        for flag in (True, False)
    )
    assert ahead["prefill_ttft_mean_ms"].to_list() == plain["prefill_ttft_mean_ms"].to_list()
    assert ahead["prefill_ttft_ms"].to_list() == plain["prefill_ttft_ms"].to_list()


def test_a_split_answers_card_does_not_add_the_step_ahead_to_its_first_token(both):
    _, split = both
    s = _busy(disaggregation=True)
    rec = serving.recommend_serving(split, s)
    assert rec.best is not None and rec.best["disaggregated"] and rec.best["schedule_ahead"]
    engine = next(r for r in rec.reasons if "Engine defaults" in r)
    assert "prefill replicas do not" in engine and "a first token waits a step more" not in engine


def test_a_trickle_of_traffic_keeps_one_pool(cat, eff):
    # one request a second on an 8B model: one replica does it all; a second pool could only add chips
    s = serving.ServeScenario(
        model=ModelSpec.from_params(8e9), requests_per_s=1, accelerators=GPUS, disaggregation=True
    )
    frame = serving.evaluate_serving(s, cat, eff)
    assert not frame["disaggregated"].any()


def test_the_card_says_why_it_splits_and_what_it_saves(both):
    _, split = both
    s = _busy(disaggregation=True)
    rec = serving.recommend_serving(split, s)
    assert rec.best is not None and rec.best["disaggregated"]
    text = " ".join(rec.reasons)
    assert f"instead of {rec.best['chips_without_disaggregation']:,} for replicas that do both" in text
    assert "prefill replica" in rec.reasons[0] and "decode replica" in rec.reasons[0]
    assert "KV cache's transfer" in text
    brief = report.serving_lines(rec)  # the one-page brief says it too
    assert any("prefill replica" in line and "instead of" in line for line in brief), brief
    shared = serving.recommend_serving(both[0], _busy())
    assert not any("separate replicas" in r for r in shared.reasons)


def test_the_card_says_split_pools_were_weighed_where_replicas_that_do_both_need_no_more_chips(both, cat, eff):
    # Llama 3.1 70B, 500-token prompts and 1,000-token answers at 20 requests/s on H200 behind a round-robin
    # balancer: replicas that do both need no more chips. (With 8,000-token prompts the split pools win: each whole
    # prompt stalls a shared replica's decode steps, and the p99 time per token, as simulated, says so.)
    s = serving.ServeScenario(
        model=ModelSpec.preset("llama3-70b"),
        prompt_tokens=500,
        output_tokens=1000,
        requests_per_s=20,
        accelerators=("h200",),
        disaggregation=True,
        router="round-robin",
    )
    rec = serving.recommend_serving(serving.evaluate_serving(s, cat, eff), s)
    assert rec.best is not None and not rec.best["disaggregated"]
    text = " ".join(rec.reasons)
    assert "Separate prefill and decode replicas (disaggregated serving) were weighed" in text, text
    pools = rec.best["disaggregated_chips"]
    if pools is not None:  # what the pools would need, never fewer than the answer's chips
        assert pools >= rec.best["chips"] and f"they would need {pools:,} chips" in text, text
    shared, split = both
    won = serving.recommend_serving(split, _busy(disaggregation=True))  # a split answer says why it splits instead
    assert won.best["disaggregated"] and not any("were weighed" in r for r in won.reasons)
    unasked = serving.recommend_serving(shared, _busy())  # not asked for: not weighed, not said
    assert not any("were weighed" in r for r in unasked.reasons)


def test_cli_flag_reaches_the_answer(capsys):
    code = run(
        [
            "serve",
            "--params",
            "70e9",
            "--accelerator",
            "h100-sxm",
            "--rps",
            "100",
            "--disaggregation",
            "--json",
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["disaggregated"] is True and out["prefill_replicas"] >= 1


def test_disaggregation_must_be_a_boolean():
    with pytest.raises(InputError, match="disaggregation"):
        serving.ServeScenario(model=ModelSpec.from_params(8e9), disaggregation="yes")


def test_the_tradeoff_curve_of_a_split_option_counts_its_prefill_chips(both, cat, eff):
    _, split = both
    pick = split.filter(pl.col("disaggregated")).row(0, named=True)
    curve = serving.batch_curve(_busy(disaggregation=True), split.filter(pl.col("disaggregated")).head(1), cat, eff)
    assert set(curve["layout"]) == {f"decode {pick['layout']}, prefill apart"}
    at = curve.filter((pl.col("load_fraction") - pick["load_fraction"]).abs() < 0.006).row(0, named=True)
    actual = _busy().output_tokens_per_s / pick["chips"]  # what the option delivers per chip it rents
    # more than that (its prefill pool counted at its limit, not at the headroom), less than the decode replica's own
    assert actual < at["tokens_per_s_per_chip"] < pick["tokens_per_s_per_chip"]
    assert curve["ttft_ms"].is_null().all()  # the first token is the prefill pool's
