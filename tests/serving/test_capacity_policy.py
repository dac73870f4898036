"""What an engine does with a full KV cache: preempt the newest sequences and prefill their prompts again, or reserve
each request's whole answer up front (workbook.serving.scenario.CAPACITY_POLICIES)."""

import dataclasses
import math

import polars as pl
import pytest

from workbook import serving
from workbook.errors import InputError
from workbook.model import serving as sv
from workbook.model.spec import ModelSpec
from workbook.serving import published, replica


def test_recomputed_prompt_tokens_by_hand():
    # 100 sequences, 290-token answers, 512 tokens a request: K ~ Poisson(100 / 290) finish a step; only K = 0 leaves a
    # shortfall (one request frees 512 > 100), of 100 tokens: e^-0.345 x 100 a step, over 0.345 requests a step
    finishing = 100 / 290
    expected = math.exp(-finishing) * 100 / finishing
    assert sv.recomputed_prompt_tokens(100.0, 290, 512) == pytest.approx(expected, rel=1e-9)
    # two requests' footprint short of a step's growth: K = 0 and K = 1 both leave one
    finishing = 1200 / 290
    expected = sum(math.exp(-finishing) * finishing**k / math.factorial(k) * (1200 - 512 * k) for k in (0, 1, 2))
    assert sv.recomputed_prompt_tokens(1200.0, 290, 512) == pytest.approx(expected / finishing, rel=1e-9)


def test_the_poisson_sum_is_exact_wherever_a_shortfall_can_be_and_the_polars_form_agrees():
    # 3,500 sequences of 290-token answers: 12 requests finish a step on average, and only K <= 6 leave a shortfall
    sequences, output, footprint = 3500.0, 290, 512
    mean = sequences / output
    direct = sum(math.exp(-mean) * mean**k / math.factorial(k) * max(0.0, sequences - k * footprint) for k in range(60))
    assert sv.recomputed_prompt_tokens(sequences, output, footprint) == pytest.approx(direct / mean, rel=1e-9)
    # past RECOMPUTE_POISSON_TERMS footprints a step, the normal form: continuous across the switch
    edge = sv.RECOMPUTE_POISSON_TERMS * footprint
    below, above = (sv.recomputed_prompt_tokens(edge * f, 450, footprint) for f in (0.999, 1.001))
    assert above == pytest.approx(below, rel=0.1)
    frame = pl.DataFrame({"b": [sequences, edge * 0.999, edge * 1.001]})
    values = frame.select(sv.recomputed_prompt_tokens(pl.col("b"), 450, footprint)).to_series().to_list()
    expected = [sv.recomputed_prompt_tokens(sequences, 450, footprint), below, above]
    assert values == pytest.approx(expected, rel=1e-9)


def test_a_bigger_cache_prefills_fewer_prompts_again():
    values = [sv.recomputed_prompt_tokens(b, 290, 512) for b in (50.0, 200.0, 1000.0, 4000.0)]
    assert values == sorted(values, reverse=True) and values[-1] < 0.1 * values[0]


def _cache_bound(llama70_replica):
    """The H100 TP2 replica of Llama 2 70B with the engine's batch limit lifted and 4,000-token prompts: its cache
    binds."""
    _, s = llama70_replica
    return dataclasses.replace(s, max_batch=None, prompt_tokens=4000, prompt_tokens_p99=None)


def _frame(cat, eff, s):
    stack = eff.stacks.filter(pl.col("stack") == "trtllm").row(0, named=True)
    frame = cat.accelerators.filter(pl.col("accelerator_id") == "h100-sxm").with_columns(
        tensor_parallel=pl.lit(2), pipeline_parallel=pl.lit(1), eta_bw=stack["eta_bw"], eta_c=stack["eta_c"]
    )
    return replica.replicas(frame, s, dataclasses.replace(eff.factors(), moe=1.0))


def _replicas(cat, eff, s):
    return _frame(cat, eff, s).row(0, named=True)


def test_a_full_cache_that_preempts_charges_the_prompts_it_prefills_again(cat, eff, llama70_replica):
    s = _cache_bound(llama70_replica)
    r = _replicas(cat, eff, s)
    assert r["cache_bound"] and r["recompute_s"] > 0
    tokens = sv.recomputed_prompt_tokens(r["max_sequences"], s.output_tokens, s.prompt_tokens + s.output_tokens)
    assert r["recompute_s"] == pytest.approx(tokens * r["prefill_s"] / s.prompt_tokens, rel=1e-9)
    expected = sv.capacity_requests_per_s(r["prefill_s"] + r["recompute_s"], r["decode_s"], r["kv_read_s"])
    assert r["capacity_rps"] == pytest.approx(expected, rel=1e-9)
    assert r["recomputed_prompt_tokens"] == pytest.approx(tokens, rel=1e-9)
    # a replica whose batch limit binds before its cache never preempts
    limited = _replicas(cat, eff, dataclasses.replace(s, max_batch=8))
    assert not limited["cache_bound"] and limited["recompute_s"] == 0


def test_the_prompts_are_prefilled_again_only_while_the_cache_is_full(cat, eff, llama70_replica):
    s = _cache_bound(llama70_replica)
    reps = _frame(cat, eff, s)
    full = reps["recomputed_prompt_tokens"].item()
    light, heavy = (replica.at_load(reps, s, pl.lit(rho)).row(0, named=True) for rho in (0.2, 0.99))
    assert light["recomputed_tokens_per_request"] < 0.01 * full < 0.5 * full < heavy["recomputed_tokens_per_request"]
    # a light load's steps carry none of it: the same traffic on the replica charged nothing takes as long a step
    plain = reps.with_columns(recompute_s=0.0, recomputed_prompt_tokens=0.0).with_columns(
        capacity_rps=sv.capacity_requests_per_s(pl.col("prefill_s"), pl.col("decode_s"), pl.col("kv_read_s"))
    )
    rho = light["requests_per_s_per_replica"] / plain["capacity_rps"].item()
    same = replica.at_load(plain, s, pl.lit(rho)).row(0, named=True)
    assert light["load_fraction"] == 0.2 and light["tpot_mean_ms"] == pytest.approx(same["tpot_mean_ms"], rel=0.01)


def test_reserving_whole_answers_holds_fewer_sequences_and_never_preempts(cat, eff, llama70_replica):
    s = _cache_bound(llama70_replica)
    preempt = _replicas(cat, eff, s)
    reserve = _replicas(cat, eff, dataclasses.replace(s, capacity_policy="reserve"))
    assert reserve["recompute_s"] == 0
    # room for prompt + answer, not prompt + the answer written so far (half, on average, spread by its lengths)
    live = sv.decode_context_tokens(s.prompt_tokens, s.output_tokens, replica.output_second_moment(s))
    ratio = live / (s.prompt_tokens + s.output_tokens)
    assert reserve["max_sequences"] == pytest.approx(preempt["max_sequences"] * ratio, rel=1e-9)
    # a client capping answers at their 99th percentile reserves that
    tail = dataclasses.replace(s, capacity_policy="reserve", output_tokens_p99=3 * s.output_tokens)
    assert replica.reserved_answer_tokens(tail) == 3 * s.output_tokens
    assert _replicas(cat, eff, tail)["max_sequences"] < reserve["max_sequences"]


def test_published_runs_carry_their_engines_policy(cat):
    runs = cat.inference_runs
    bench = runs.filter(pl.col("round").str.contains("perf overview")).row(0, named=True)
    assert published.scenario(bench).capacity_policy == "reserve"  # trtllm-bench: guaranteed_no_evict
    for policy in ("max_utilization", "recompute", None):
        run = runs.filter(pl.col("capacity_policy").eq_missing(policy)).row(0, named=True)
        assert published.scenario(run).capacity_policy == "preempt"


def test_an_unknown_policy_is_refused_naming_the_choices():
    with pytest.raises(InputError, match="capacity_policy.*preempt.*reserve"):
        serving.ServeScenario(model=ModelSpec.from_params(8e9), capacity_policy="evict")


def test_published_runs_give_their_cache_the_memory_share_their_engines_were_set_to(cat, eff, llama70_replica):
    runs = cat.inference_runs
    set_to = runs.filter(pl.col("memory_fraction") == 0.95).row(0, named=True)
    assert published.scenario(set_to).assumptions.hbm_usable_fraction == 0.95
    unset = runs.filter(pl.col("memory_fraction").is_null()).row(0, named=True)
    assert published.scenario(unset).assumptions.hbm_usable_fraction == serving.ServeAssumptions().hbm_usable_fraction
    # a cache-bound replica holds more sequences, and prefills fewer prompts again, with a larger share
    s = _cache_bound(llama70_replica)
    larger = dataclasses.replace(s, assumptions=serving.ServeAssumptions(hbm_usable_fraction=0.95))
    base, more = _replicas(cat, eff, s), _replicas(cat, eff, larger)
    assert more["max_sequences"] > base["max_sequences"] and more["recompute_s"] < base["recompute_s"]
