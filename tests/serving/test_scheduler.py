"""The serving engine's scheduler (workbook.serving.replica.Scheduler): what a published setting does to the time
to first token under load, and the settings recorded for every MLPerf server latency result."""

import dataclasses
import math

import polars as pl
import pytest

from workbook.model import serving as sv
from workbook.serving import published, replica

LLAMA70_SERVER = "mlperf41-h100x8-llama2-70b-server-ttft"  # the run of the llama70_replica fixture (conftest)


def _at(llama70_replica, rho, sched):
    reps, s = llama70_replica
    return replica.at_load(reps, s, pl.lit(rho), sched).row(0, named=True)


def test_a_budget_queue_binds_once_decode_tokens_fill_the_steps(llama70_replica):
    free = replica.Scheduler()
    tight = replica.Scheduler(max_tokens_per_step=1200)  # ~1000 decoding sequences leave ~200 prompt tokens/step
    for rho in (0.5, 0.8):
        a, b = _at(llama70_replica, rho, free), _at(llama70_replica, rho, tight)
        assert b["tpot_mean_ms"] == pytest.approx(a["tpot_mean_ms"])  # the budget moves prompts, not decode work
        assert b["ttft_mean_ms"] >= a["ttft_mean_ms"] and b["ttft_ms"] >= a["ttft_ms"]
    # Half loaded, the prompts ahead hold a prompt back by their prefill work, budget or not; at 80% the decode
    # tokens leave so little of the budget that its queue is the longer one.
    half, busy = ((_at(llama70_replica, rho, tight), _at(llama70_replica, rho, free)) for rho in (0.5, 0.8))
    assert half[0]["ttft_mean_ms"] == pytest.approx(half[1]["ttft_mean_ms"])
    assert busy[0]["ttft_mean_ms"] > busy[1]["ttft_mean_ms"] * 1.1 and busy[0]["ttft_ms"] > busy[1]["ttft_ms"]


def test_the_prompts_ahead_queue_by_their_prefill_work_and_long_prompts_wait_longer(llama70_replica):
    # An unlimited engine still queues a prompt behind the prefill of those that arrived first (M/G/1 of prefill
    # work); the wait grows with load, and with the prompts' second moment at the same mean.
    reps, s = llama70_replica
    waits = []
    for rho in (0.2, 0.8):
        row = _at(llama70_replica, rho, replica.Scheduler())
        rps, prefill_s, step_s = row["requests_per_s_per_replica"], row["prefill_s"], row["tpot_mean_ms"] / 1000
        load = rps * prefill_s
        expected = sv.prefill_wait_seconds(
            prefill_s / s.prompt_tokens, s.prompt_tokens, replica.prompt_second_moment(s), load
        )
        no_wait = sv.ttft_seconds(prefill_s, step_s, 0.0, load)
        assert row["ttft_mean_ms"] / 1000 - no_wait == pytest.approx(expected, rel=1e-3)  # free slots: no slot wait
        waits.append(expected)
    assert waits[1] > 4 * waits[0] > 0
    # one request/s of 5,000-token prompts at 0.1 ms a token: half the replica's time
    assert sv.prefill_wait_seconds(1e-4, 5000.0, 5000.0**2, 0.5) == pytest.approx(1.0 * 1e-8 * 25e6 / (2 * 0.5))
    assert sv.prefill_wait_seconds(1e-4, 5000.0, 2 * 5000.0**2, 0.5) == pytest.approx(
        2 * sv.prefill_wait_seconds(1e-4, 5000.0, 5000.0**2, 0.5)
    )
    assert math.isinf(sv.prefill_wait_seconds(1e-4, 5000.0, 5000.0**2, 1.0))


def test_a_budget_the_decode_tokens_fill_never_starts_a_prompt(llama70_replica):
    # 100 tokens per step, fewer than the sequences in flight: the prompt queue is unstable, the wait infinite,
    # and the first-token target fails (nothing silently clamped).
    row = _at(llama70_replica, 0.8, replica.Scheduler(max_tokens_per_step=100))
    assert math.isinf(row["ttft_mean_ms"]) and math.isinf(row["ttft_ms"])
    reps, s = llama70_replica
    assert not replica.at_load(reps, s, pl.lit(0.8), replica.Scheduler(max_tokens_per_step=100))["meets_ttft"][0]


def test_chunking_splits_a_long_prompt_over_steps_and_without_it_one_step_carries_it(llama70_replica):
    chunked = replica.Scheduler(max_tokens_per_step=1200, chunked_prefill=True)
    whole = replica.Scheduler(max_tokens_per_step=1200, chunked_prefill=False)
    sequences = pl.lit(1000.0)
    steps = pl.select(replica.prompt_steps(chunked, 791, sequences)).item()
    assert steps == math.ceil(791 / 200)
    assert pl.select(replica.prompt_steps(whole, 791, sequences)).item() == 1


def test_a_dispatch_window_adds_half_the_window_and_the_prefill_of_the_batched_prompts(llama70_replica):
    free = _at(llama70_replica, 0.5, replica.Scheduler())
    window = _at(llama70_replica, 0.5, replica.Scheduler(dispatch_window_s=0.3, replicas_per_dispatcher=4))
    added_ms = window["ttft_mean_ms"] - free["ttft_mean_ms"]
    assert added_ms > 150  # half the window, plus the batch's prefill
    assert window["ttft_ms"] - free["ttft_ms"] > 0.99 * 300


def test_multi_step_scheduling_makes_a_prompt_wait_out_the_run_it_arrived_in(llama70_replica):
    # vLLM's num_scheduler_steps n: prompts join only between runs of n steps, (n - 1) / 2 steps more on average,
    # and the step that admits a prompt also prefills the others that arrived during the run, (n - 1) steps of them.
    one = _at(llama70_replica, 0.5, replica.Scheduler())
    nine = _at(llama70_replica, 0.5, replica.Scheduler(steps_per_schedule=9))
    step_ms = one["tpot_mean_ms"]
    run_prefill_ms = nine["prefill_s"] * nine["requests_per_s_per_replica"] * 8 * step_ms
    assert nine["ttft_mean_ms"] - one["ttft_mean_ms"] == pytest.approx(4 * step_ms + run_prefill_ms, rel=1e-6)
    assert nine["ttft_ms"] - one["ttft_ms"] > 4 * one["tpot_mean_ms"]  # the run's tail adds beyond its mean
    assert nine["tpot_ms"] == one["tpot_ms"]  # the steps themselves are unchanged


def test_attention_dp_balancing_holds_a_prompt_until_every_rank_has_one(llama70_replica):
    # TensorRT-LLM's adp_balancing: new prompts wait until each of the replica's ranks (here its two chips) has one,
    # then the wait's steps more, or the timeout's steps at most; a prompt waits out half that cycle on average.
    free = replica.Scheduler()
    held = replica.Scheduler(balance_timeout_steps=9, balance_wait_steps=3)
    for rho, fills in ((0.05, False), (0.7, True)):  # few arrivals a step: the timeout binds; many: the ranks fill
        one, hold = _at(llama70_replica, rho, free), _at(llama70_replica, rho, held)
        step_s = one["tpot_mean_ms"] / 1000
        arrivals = one["requests_per_s_per_replica"] * step_s
        cycle = 2 / arrivals + 3 if fills else 9
        assert (2 / arrivals + 3 < 9) == fills
        assert hold["ttft_mean_ms"] - one["ttft_mean_ms"] == pytest.approx(cycle / 2 * step_s * 1000, rel=1e-6)
        assert hold["ttft_ms"] - one["ttft_ms"] > cycle / 2 * step_s * 1000  # the cycle's tail adds beyond its mean
        assert hold["tpot_ms"] == one["tpot_ms"]


def test_overlap_scheduling_makes_a_new_prompt_wait_one_step_more(llama70_replica):
    # TensorRT-LLM's overlap scheduler (vLLM's async scheduling likewise) makes the next batch while the GPU runs the
    # current one: a prompt arriving now misses the batch already made, one step more to its first token (the
    # documented "one extra decoding step"); the steps themselves are unchanged.
    for rho in (0.3, 0.7):
        one = _at(llama70_replica, rho, replica.Scheduler())
        ahead = _at(llama70_replica, rho, replica.Scheduler(schedule_ahead=True))
        assert ahead["ttft_mean_ms"] - one["ttft_mean_ms"] == pytest.approx(one["tpot_mean_ms"], rel=1e-6)
        assert ahead["ttft_ms"] - one["ttft_ms"] > 0.5 * one["tpot_mean_ms"]
        assert (ahead["tpot_ms"], ahead["tpot_mean_ms"]) == (one["tpot_ms"], one["tpot_mean_ms"])


def test_the_p99_prompt_is_prefilled_with_its_own_quadratic_attention(llama70_replica):
    reps, s = llama70_replica
    long_tail = dataclasses.replace(s, prompt_tokens=8000, prompt_tokens_p99=64000)
    row = replica.replicas(reps, long_tail, replica.Factors(1.0, 1.0, 1.0)).row(0, named=True)
    # The mix's per-token cost scaled to 64k tokens is too low: attention per token grows with the prompt
    # (measured when written: 1.20x; the mix's E[P^2] already carries some of the tail's attention).
    linear = row["prefill_s"] * 64000 / 8000
    assert row["prefill_tail_s"] > 1.1 * linear


def test_pipeline_stages_read_their_weights_in_turn(llama70_replica):
    one = _at(llama70_replica, 0.5, replica.Scheduler())
    two = _at(llama70_replica, 0.5, replica.Scheduler(pipeline_stages=2))
    assert two["tpot_mean_ms"] == pytest.approx(2 * one["tpot_mean_ms"])


def test_prompt_second_moment_from_the_mean_and_p99(llama70_replica):
    _, s = llama70_replica  # OpenOrca: mean 222, p99 791 tokens
    ratio = replica.prompt_second_moment(s) / s.prompt_tokens**2
    assert 1.3 < ratio < 1.7  # lognormal sigma ~0.63: E[P^2] = mean^2 exp(sigma^2)
    constant = published.scenario({**_run(s), "prompt_tokens_p99": None})
    assert replica.prompt_second_moment(constant) == pytest.approx(constant.prompt_tokens**2)


def _run(s):
    return {
        "params": s.model.params,
        "active_params": s.model.active_params,
        "n_layers": s.model.n_layers,
        "hidden_dim": s.model.hidden_dim,
        "weight_precision": s.weight_precision,
        "kv_precision": s.kv_precision,
        "prompt_tokens": s.prompt_tokens,
        "output_tokens": s.output_tokens,
        "ttft_limit_ms": None,
        "tpot_limit_ms": None,
        "n_kv_heads": s.n_kv_heads,
        "accelerator_id": "h100-sxm",
        "scenario": "server",
        "batch": None,
        "max_seqs": None,
    }


def test_every_mlperf_server_latency_has_its_published_scheduler_settings(cat):
    rows = cat.inference_runs.filter((pl.col("scenario") == "server") & pl.col("measure").is_in(["ttft_ms", "tpot_ms"]))
    assert rows.height >= 24
    for column in ("tensor_parallel", "max_tokens_per_step", "max_seqs", "chunked_prefill", "scheduler_source"):
        assert rows[column].is_not_null().all(), column
    assert rows["scheduler_source"].str.contains("inference_results_v").all()
    amd = rows.filter(pl.col("stack") == "vllm-rocm")
    assert amd.height and (amd["dispatch_window_ms"] == 300).all()  # --batcher-threshold 0.3 s


def test_scheduler_from_a_run(cat):
    runs = {r["run_id"]: r for r in cat.inference_runs.to_dicts()}
    amd = published.scheduler(runs["mlperf41-mi300x8-llama2-70b-server-ttft"])
    assert (amd.max_tokens_per_step, amd.chunked_prefill, amd.mixed_steps) == (49152, False, False)
    assert (amd.dispatch_window_s, amd.replicas_per_dispatcher) == (0.3, 8)
    h100 = published.scheduler(runs["mlperf50-h100x8-llama2-70b-server-ttft"])
    assert (h100.max_tokens_per_step, h100.pipeline_stages, h100.mixed_steps) == (1024, 2, True)
    offline = published.scheduler(runs["mlperf50-h100x8-llama2-70b-offline"])  # NVIDIA's Offline config
    assert (offline.max_tokens_per_step, offline.pipeline_stages, offline.replicas_per_dispatcher) == (1024, 2, 4)
    multi_step = published.scheduler(runs["mlperf51-mi300x8-llama2-70b-server-ttft"])  # num_scheduler_steps 9
    assert (multi_step.steps_per_schedule, multi_step.chunked_prefill, multi_step.dispatch_window_s) == (9, False, 0.0)
    balanced = published.scheduler(runs["mlperf60-b200x8-deepseek-r1-server-ttft"])  # adp_balancing 6 / 2 iterations
    assert (balanced.balance_timeout_steps, balanced.balance_wait_steps) == (6, 2)
    assert balanced.schedule_ahead and not h100.schedule_ahead  # trtllm-serve's default; the C++ engine's none
    assert published.scheduler(runs["mlperf61-mi355x8-llama2-70b-server-ttft"]).schedule_ahead  # async_scheduling True
    unpublished = published.scheduler(runs["mlperf41-mi300x8-llama2-70b-offline"])
    assert unpublished == replica.Scheduler(replicas_per_dispatcher=8)  # the unlimited engine
    assert published.scenario(runs["mlperf50-h100x8-llama2-70b-server-ttft"]).max_batch == 2 * 1024


def test_a_token_budget_caps_offline_throughput(llama70_replica):
    # With every query queued (offline: no latency limits), a replica carries at most its token budget per step:
    # the prompt and decode tokens of a step stay under it (u < 1), and the binding limit says so.
    reps, s = llama70_replica
    s = dataclasses.replace(s, ttft_ms=None, tpot_ms=None, max_batch=None)
    budget = 1024
    sched = replica.Scheduler(max_tokens_per_step=budget)
    free, tight = (
        replica.refined_limits(reps, s, engine, replica.limits(replica.load_curve(reps, s, engine))).row(0, named=True)
        for engine in (replica.Scheduler(), sched)
    )
    assert tight["max_load_fraction"] < free["max_load_fraction"]
    assert tight["limit"] == "step token budget"
    row = _at((reps, s), tight["max_load_fraction"], sched)
    step_s = row["tpot_mean_ms"] / 1000
    tokens_per_step = row["requests_per_s_per_replica"] * step_s * s.prompt_tokens + row["sequences"]
    # the most the budget carries, to the refined load's step (near the budget a step's tokens climb steeply with load)
    assert budget * 0.95 < tokens_per_step < budget


def test_the_highest_load_within_the_limits_is_refined_between_grid_loads(llama70_replica, cat):
    # The load grid steps by 1%; near the slots' limit the first token's p99 climbs from well inside its target to
    # past it within one step, so the highest load is refined between the grid's last load within the limits and
    # the next one: every limit holds there, and one refinement step further one breaks.
    reps, s = llama70_replica
    run = cat.inference_runs.filter(pl.col("run_id") == LLAMA70_SERVER).row(0, named=True)
    sched = published.scheduler(run)
    coarse = replica.limits(replica.load_curve(reps, s, sched))
    fine = replica.refined_limits(reps, s, sched, coarse)
    low, high = coarse["max_load_fraction"].item(), fine["max_load_fraction"].item()
    assert fine.height == coarse.height == 1 and fine["limit"].item() == coarse["limit"].item()
    grid = replica.LOAD_GRID[1] - replica.LOAD_GRID[0]
    step = grid / replica.REFINE_STEPS
    assert low <= high < low + grid
    inside, beyond = (_at(llama70_replica, rho, sched) for rho in (high, high + step))
    assert inside["fits_in_memory"] and inside["meets_ttft"] and inside["meets_tpot"]
    assert not (beyond["fits_in_memory"] and beyond["meets_ttft"] and beyond["meets_tpot"])
    # the steep edge the 1% grid steps over: the first token's p99 several-fold within one grid step
    assert beyond["ttft_ms"] > 3 * _at(llama70_replica, low - grid, sched)["ttft_ms"]


def test_prompts_pooled_over_replicas_wait_as_in_an_m_g_c_queue():
    # One replica: Pollaczek-Khinchine. Two at half load with exponential prompts (E[S^2] = 2 E[S]^2): M/M/2, whose
    # chance of waiting is 1/3 and mean wait 1/3 of a service time.
    assert sv.pooled_wait(0.5, 1.0, 1.0) == pytest.approx(0.5 * 1.0 / 0.5)
    assert sv.pooled_waiting(0.5, 2.0) == pytest.approx(1 / 3)
    assert sv.pooled_wait(0.5, 2.0, 1.0) == pytest.approx(1 / 3)
    # the wait falls as the pool grows at the same load, and a saturated pool never empties
    waits = [sv.pooled_wait(0.8, float(c), 1.0) for c in (1, 2, 8, 64, 256)]
    assert all(a > b for a, b in zip(waits, waits[1:], strict=False))
    assert math.isinf(sv.pooled_wait(1.0, 8.0, 1.0))
