"""The load curve's queueing formulas against a step-by-step simulation of the same engine."""

import polars as pl
import pytest

from workbook import serving
from workbook.serving import replica, simulation, validation

# MLPerf server runs whose engines differ where the formulas differ: TensorRT-LLM in-flight batching with chunked
# prefill (Llama 2 70B, Llama 3.1 8B), 9,400-token prompts chunked over several steps (Llama 3.1 405B), vLLM
# without chunked prefill and with multi-step scheduling (MI300X), vLLM chunked with multi-step (MI355X).
RUNS = (
    "mlperf51-h200x8-llama2-70b-server",
    "mlperf51-h200x8-llama31-405b-server",
    "mlperf51-h200x8-llama31-8b-server",
    "mlperf60-mi355x8-llama2-70b-interactive",
    "mlperf60-mi300x8-llama2-70b-server",
)
# How close the formulas come to the simulation (formula / simulated, lowest and highest), as the validation notebook
# states: the mean time per output token within 10%; its 99th percentile within 30% (405B's 0.74 the lowest: its
# requests meet a dozen 9,400-token prompts each, a skewed count); the first token's mean within 25% and its 99th
# percentile from 0.6 (where a step's token budget binds, the formulas' queue drains at the average step's pace,
# the simulation's at a full step's) to 1.3.
AGREEMENT = {"tpot_mean_ms": (0.9, 1.1), "tpot_ms": (0.7, 1.3), "ttft_mean_ms": (0.75, 1.25), "ttft_ms": (0.6, 1.3)}


@pytest.fixture(scope="module")
def compared(cat, eff):
    return validation.against_simulation(cat, RUNS, loads=(0.9,), efficiency=eff)


@pytest.mark.parametrize("column", list(AGREEMENT))
def test_formulas_agree_with_the_simulated_engine(compared, column):
    assert compared.height == len(RUNS)
    low, high = AGREEMENT[column]
    ratio = compared[f"formula_{column}"] / compared[f"simulated_{column}"]
    off = compared.filter(((ratio < low) | (ratio > high)).to_list())
    assert off.height == 0, off.select("run_id", f"formula_{column}", f"simulated_{column}")


def test_prefill_only_steps_cost_their_own_fixed_part(compared):
    # vLLM without chunked prefill runs the waiting prompts in steps of their own, each reading the weights again:
    # without that, the formulas' time per output token was 11% under the simulation's.
    row = compared.filter(pl.col("run_id") == "mlperf60-mi300x8-llama2-70b-server")
    assert row["formula_tpot_mean_ms"].item() == pytest.approx(row["simulated_tpot_mean_ms"].item(), rel=0.05)


def test_long_prompts_arriving_while_a_request_decodes_spread_its_time_per_token(compared):
    # 405B: the 99th-percentile time per output token is well above the mean, in the simulation and the formulas.
    row = compared.filter(pl.col("run_id") == "mlperf51-h200x8-llama31-405b-server").row(0, named=True)
    assert row["simulated_tpot_ms"] > 1.8 * row["simulated_tpot_mean_ms"]
    assert row["formula_tpot_ms"] > 1.4 * row["formula_tpot_mean_ms"]


def test_simulated_steps_keep_the_work_they_carry():
    # Every step costs the fixed part plus its work, so over a long run the mean step is fixed / (1 - load): the
    # identity the load curve's step time rests on (workbook.model.serving.step_seconds).
    costs = simulation.Costs(fixed_s=0.02, decode_token_s=1e-4, prompt_token_s=5e-5)
    prompt, output = 500, 200
    work_s = prompt * costs.prompt_token_s + (output - 1) * costs.decode_token_s
    rps = 0.6 / work_s
    sim = simulation.simulate(rps, costs, replica.Scheduler(), 10_000, prompt, 1500, output, horizon_s=4000)
    assert sim.step_mean_s == pytest.approx(costs.fixed_s / (1 - 0.6), rel=0.05)
    assert sim.requests > 0.7 * rps * 3000


def test_a_step_token_budget_queues_prompts():
    # The same load with a budget of 1,024 tokens a step, prompts whole (no chunking): the first token waits longer.
    costs = simulation.Costs(fixed_s=0.02, decode_token_s=1e-4, prompt_token_s=5e-5)
    open_, tight = (
        simulation.simulate(
            40.0, costs, replica.engine("trtllm", budget, chunked_prefill=False), 10_000, 500, 1500, 50, 600
        )
        for budget in (None, 1024)
    )
    assert tight.ttft_p99_s > 1.2 * open_.ttft_p99_s


@pytest.mark.parametrize("timeout_steps", [6, 30])  # the timeout binds; the ranks fill first (then 3 steps more)
def test_attention_dp_balancing_agrees_with_the_simulated_engine(llama70_replica, timeout_steps):
    # The formulas' cycle, min(timeout, ranks / arrivals a step + wait), against TensorRT-LLM's counters run step by
    # step on the replica's two ranks at 30% load (0.2 arrivals a step). Measured when written (seeds 1-3): timeout
    # 0.89-0.93x on the mean, 0.84-0.87x at p99; ranks filling first 1.21-1.23x and 0.75-0.76x: there the formulas
    # take a prompt's wait as uniform over the cycle, but the prompt that completes the ranks waits only the extra
    # steps, and the cycle varies with the arrivals (a wider tail).
    reps, s = llama70_replica
    sched = replica.Scheduler(balance_timeout_steps=timeout_steps, balance_wait_steps=3)
    row = replica.at_load(reps, s, pl.lit(0.3), sched).row(0, named=True)
    sim = simulation.of_replica(row, s, sched, requests=3000)
    for column, simulated_s in (("ttft_mean_ms", sim.ttft_mean_s), ("ttft_ms", sim.ttft_p99_s)):
        low, high = AGREEMENT[column]
        assert low <= row[column] / (simulated_s * 1000) <= high, column


@pytest.mark.parametrize("rho", [0.3, 0.7])
def test_overlap_scheduling_agrees_with_the_simulated_engine(llama70_replica, rho):
    # The engine making each batch when the step before it starts: the first token's extra wait, formula (one step)
    # against the simulation. Measured when written (seeds 1-2): 0.99-1.00x of it at 30% load, 0.95-0.97x at 70%;
    # the formulas' p99 takes one step's p99 where the simulated tail adds 1.2-1.4x that.
    reps, s = llama70_replica
    rows, sims = [], []
    for sched in (replica.Scheduler(), replica.Scheduler(schedule_ahead=True)):
        rows.append(replica.at_load(reps, s, pl.lit(rho), sched).row(0, named=True))
        sims.append(simulation.of_replica(rows[-1], s, sched, requests=3000))
    extra_ms = (sims[1].ttft_mean_s - sims[0].ttft_mean_s) * 1000
    assert 0.9 <= (rows[1]["ttft_mean_ms"] - rows[0]["ttft_mean_ms"]) / extra_ms <= 1.1
    assert sims[1].tpot_mean_s == pytest.approx(sims[0].tpot_mean_s, rel=0.02)  # the steps are the same
    for column, simulated_s in (("ttft_mean_ms", sims[1].ttft_mean_s), ("ttft_ms", sims[1].ttft_p99_s)):
        low, high = AGREEMENT[column]
        assert low <= rows[1][column] / (simulated_s * 1000) <= high, column


def test_a_request_meeting_sparse_long_prompts_spreads_its_time_per_token_as_simulated(cat, eff):
    # 70B on 4 H200 (TensorRT-LLM, whole prompts), 32,000-token prompts at 30% load: a request meets a third of a
    # prompt on average, and each one it meets stalls its steps for 1.5 s and stretches its life, so it meets more.
    # The p99 time per token was 0.60x the simulated (28 ms against 47) with a normal tail divided by 1 - u; with
    # the count's self-consistent Poisson percentile, 0.92x when written.
    from workbook.serving import options
    from workbook.training.scenario import ModelSpec

    s = serving.ServeScenario(
        model=ModelSpec.preset("llama3-70b"), prompt_tokens=32_000, requests_per_s=2, accelerators=("h200",)
    )
    reps = options._replicas(cat, s, eff, 0).filter(pl.col("tensor_parallel") == 4)
    assert reps["stack"].unique().to_list() == ["trtllm"]
    ratios = []

    def check(part, sched):
        row = replica.at_load(part, s, pl.lit(0.3), sched).row(0, named=True)
        sim = simulation.of_replica(row, s, sched, requests=3000)
        ratios.append(row["tpot_ms"] / (sim.tpot_p99_s * 1000))
        return part

    replica.per_engine(reps, check)
    assert len(ratios) == 1 and 0.8 <= ratios[0] <= 1.2, ratios
