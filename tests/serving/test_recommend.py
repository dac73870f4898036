"""The serving recommendation: ranking, reasons, headroom and the warnings it must not hide."""

import dataclasses

import polars as pl
import pytest

from workbook import serving
from workbook.catalog.loading import LARGE_ORDER_CHIPS, capacity_to_confirm
from workbook.errors import InputError
from workbook.model.spec import ModelSpec
from workbook.model.units import HOURS_PER_MONTH
from workbook.present import gigabytes
from workbook.serving import recommend, replica
from workbook.training import options as training_options
from workbook.training.scenario import Constraints, Scenario


@pytest.fixture(scope="module")
def answer():
    s = serving.ServeScenario(
        model=ModelSpec.from_params(70e9), weight_precision="fp8", kv_precision="fp8", requests_per_s=20
    )
    frame = serving.evaluate_serving(s)
    return s, frame, serving.recommend_serving(frame, s)


def test_winner_is_cheapest_feasible_and_runners_up_are_other_chips(answer):
    _, frame, rec = answer
    ids = [rec.best["accelerator_id"]] + [o["accelerator_id"] for o in rec.runners_up]
    assert len(set(ids)) == len(ids) == 3
    costs = [rec.best["usd_per_million_tokens"]] + [o["usd_per_million_tokens"] for o in rec.runners_up]
    assert costs == sorted(costs)
    assert rec.best["usd_per_million_tokens"] == frame.filter(pl.col("feasible"))["usd_per_million_tokens"].min()


def test_reasons_give_headroom_stack_latency_and_monthly_cost(answer):
    _, _, rec = answer
    text = " ".join(rec.reasons)
    assert (
        "sized to at most 75% of it, 25% left for traffic peaks" in text
        and "Software:" in text
        and "a month" in text
        and "interleaved" in text
    )
    assert rec.usd_per_month == pytest.approx(rec.best["usd_per_month"]) and rec.usd_per_month > 0
    assert rec.best["utilisation"] <= rec.headroom + 1e-9 and not any("above the" in w for w in rec.warnings)


def test_latency_line_names_the_statistic_and_target(answer):
    s, _, rec = answer
    line = next(r for r in rec.reasons if r.startswith("At this load"))
    assert f"p99 time per token {rec.best['tpot_ms']:,.1f} ms, target {s.tpot_ms:,.0f} ms" in line
    assert f"p99 time to first token {rec.best['ttft_ms']:,.0f} ms, target {s.ttft_ms:,.0f} ms" in line
    assert rec.best["tpot_ms"] <= s.tpot_ms and rec.best["tpot_mean_ms"] <= rec.best["tpot_ms"]


def test_prompt_tail_below_the_mean_is_refused():
    with pytest.raises(InputError, match="prompt_tokens_p99"):
        serving.ServeScenario(model=ModelSpec.from_params(8e9), prompt_tokens=1000, prompt_tokens_p99=500)


def test_card_never_recommends_more_than_the_headroom_without_saying_so(answer):
    s, frame, _ = answer
    # A frame whose winner runs above its headroom target (e.g. a caller's own sizing) must be flagged.
    hot = frame.with_columns(utilisation=pl.when(pl.col("feasible")).then(0.97).otherwise(pl.col("utilisation")))
    rec = serving.recommend_serving(hot, s)
    assert rec.best["utilisation"] > rec.headroom
    assert any("above the 75% load ceiling" in w for w in rec.warnings)
    from workbook.app import views

    assert "above the 75% load ceiling" in views.serving_card(rec)


def test_latency_at_the_edge_is_said(answer):
    s, frame, _ = answer
    edge = frame.with_columns(tpot_ms=pl.lit(0.95 * s.tpot_ms))
    assert any("At the edge" in w for w in serving.recommend_serving(edge, s).warnings)


def test_memory_at_the_edge_is_said(answer):
    s, frame, rec = answer
    assert not any(w.startswith("Memory at the edge") for w in rec.warnings)  # 70B FP8 leaves every chip room
    # weights that leave a chip 1 GB beside the engine's runtime: less than engines keep beyond it (3.2 GB more)
    full = frame.with_columns(weights_gb=pl.col("hbm_gb") - pl.col("overhead_gb") - 1.0, memory_room_gb=pl.lit(1.0))
    rec = serving.recommend_serving(full, s)
    said = [w for w in rec.warnings if w.startswith("Memory at the edge")]
    kept = f"leaving 1.0 GB beside the {gigabytes(rec.best['overhead_gb'])} kept for the engine's own use"
    assert len(said) == 1 and kept in said[0] and "3.2 GB more" in said[0]


def test_a_replica_with_room_is_picked_over_one_at_the_memory_edge():
    # Two ways to serve on 4 chips: two 2-chip replicas whose weights fill 189 of 192 GB, or one 4-chip replica with
    # room. Without the edge, the smaller replica goes first (it fits more instance sizes).
    rows = pl.DataFrame(
        {
            "accelerator_id": ["b200", "b200"],
            "chips": [4, 4],
            "tensor_parallel": [2, 4],
            "per_chip": [1.0, 1.0],
            "hbm_bytes": [192.3e9, 192.3e9],
            "weights_gb": [189.0, 94.5],
            "overhead_gb": [2.0, 2.0],
        }
    )
    assert replica.fewest_chips_first(rows, "chips", "per_chip")["tensor_parallel"].to_list() == [4, 2]
    roomy = rows.with_columns(weights_gb=pl.lit(50.0))
    assert replica.fewest_chips_first(roomy, "chips", "per_chip")["tensor_parallel"].to_list() == [2, 4]
    fewer = rows.with_columns(chips=pl.Series([2, 4]))  # the edge only breaks ties: fewer chips still win
    assert replica.fewest_chips_first(fewer, "chips", "per_chip")["tensor_parallel"].to_list() == [2, 4]


def test_no_feasible_option_says_why():
    s = serving.ServeScenario(model=ModelSpec.from_params(70e9), tpot_ms=0.5, accelerators=("l4", "h100-sxm"))
    rec = serving.recommend_serving(serving.evaluate_serving(s), s)
    assert rec.best is None and rec.infeasible.height == 2 and "No option" in rec.reasons[0]


@pytest.mark.parametrize("rps, words", [(0.5, "1 independent replica of"), (200, "independent replicas of")])
def test_replicas_are_counted_in_plain_words(rps, words):
    s = serving.ServeScenario(
        model=ModelSpec.from_params(8e9), requests_per_s=rps, accelerators=("h100-sxm",), tpot_ms=100
    )
    rec = serving.recommend_serving(serving.evaluate_serving(s), s)
    assert rec.best is not None and (rec.best["replicas"] == 1) == (rps < 1)
    assert words in rec.reasons[0] and "replica(s)" not in rec.reasons[0]


def test_a_fleet_larger_than_a_cloud_rents_on_demand_is_ruled_out_as_a_training_job_would_be():
    # 70B at 3,000 requests/s: most chips need 1,000+ replicas; on-demand rents at most 512 without a reservation
    # (data/capacity.csv, the same ceiling as training's), a reserved contract has no such ceiling.
    big = serving.ServeScenario(model=ModelSpec.from_params(70e9), requests_per_s=3000)
    on_demand = serving.evaluate_serving(big)
    over = on_demand.filter((pl.col("chips") > 512) & pl.col("usd_per_chip_hour").is_not_null())
    assert over.height > 0 and not over["feasible"].any()
    assert over["infeasible_reason"].str.contains("on-demand rents at most 512 without a reservation").all()
    assert on_demand.filter(pl.col("chips") <= 512)["feasible"].any()
    rec = serving.recommend_serving(on_demand, big)
    assert rec.best is not None and rec.best["chips"] <= 512
    # Above half the ceiling the card asks to confirm the provider can deliver them; a small fleet is not warned.
    near = [w for w in rec.warnings if w.startswith("Capacity:")]
    assert (len(near) == 1) == (rec.best["chips"] > 256), rec.warnings
    small = serving.ServeScenario(model=ModelSpec.from_params(70e9), requests_per_s=10)
    assert not any("Capacity:" in w for w in serving.recommend_serving(serving.evaluate_serving(small), small).warnings)
    contract = dataclasses.replace(big, pricing=("reserved-contract",))
    reserved = serving.evaluate_serving(contract)
    assert reserved.filter((pl.col("chips") > 512) & pl.col("feasible")).height > 0
    # Where the pricing states no ceiling a fleet above 256 chips is still an order to confirm, as a training job's is
    pick = serving.recommend_serving(reserved, contract)
    assert pick.best["chips"] > LARGE_ORDER_CHIPS and pick.best["capacity_max_chips"] is None
    line = f"Capacity: {pick.best['chips']:,} chips on {pick.best['cloud']} reserved-contract is a large order"
    assert any(w.startswith(line) for w in pick.warnings), pick.warnings


@pytest.mark.parametrize(
    ("chips", "ceiling", "confirm"),
    [(256, 512, False), (257, 512, True), (128, 256, False), (129, 256, True), (256, None, False), (257, None, True)],
)
def test_one_rule_says_when_an_order_is_large_enough_to_confirm(chips, ceiling, confirm):
    assert capacity_to_confirm(chips, ceiling) is confirm


def test_a_fleet_on_capacity_blocks_is_told_they_end():
    s = serving.ServeScenario(model=ModelSpec.from_params(8e9), pricing=("capacity-block",), requests_per_s=20)
    rec = serving.recommend_serving(serving.evaluate_serving(s), s)
    assert rec.best is not None and rec.best["pricing_model"] == "capacity-block"
    assert any("Capacity blocks last at most 182 days" in w for w in rec.warnings), rec.warnings


def test_a_fleet_on_a_commitment_is_told_the_whole_term_is_billed():
    s = serving.ServeScenario(model=ModelSpec.from_params(8e9), pricing=("commit-1y",), requests_per_s=20)
    rec = serving.recommend_serving(serving.evaluate_serving(s), s)
    line = next(r for r in rec.reasons if r.startswith("Commitment:"))
    assert "12-month term bills" in line and "fewer months still pays the whole term" in line
    on_demand = serving.ServeScenario(model=ModelSpec.from_params(8e9), requests_per_s=20)
    rec = serving.recommend_serving(serving.evaluate_serving(on_demand), on_demand)
    assert not any(r.startswith("Commitment:") for r in rec.reasons)


def test_spot_is_not_a_serving_default_and_says_why_when_picked():
    assert serving.ServeScenario(model=ModelSpec.from_params(8e9)).pricing == ("on-demand",)
    s = serving.ServeScenario(model=ModelSpec.from_params(8e9), pricing=("spot",), accelerators=("h100-sxm",))
    rec = serving.recommend_serving(serving.evaluate_serving(s), s)
    assert rec.best is not None and rec.best["pricing_model"] == "spot"
    assert any("preempted replica breaks the latency target" in w for w in rec.warnings)


@pytest.mark.parametrize(
    "accelerator, words",
    [
        (
            "h200",
            "Engine defaults: 8,192 tokens per step, at most 2,048 sequences, prompts not chunked, the next batch "
            "scheduled while the current one runs, so a first token waits a step more",
        ),
        ("tpu-v6e", "Engine: no verified default settings"),
    ],
)
def test_the_card_names_the_engine_settings_that_queue_prompts(accelerator, words):
    s = serving.ServeScenario(model=ModelSpec.from_params(70e9), requests_per_s=5, accelerators=(accelerator,))
    rec = serving.recommend_serving(serving.evaluate_serving(s), s)
    assert rec.best is not None and any(words in reason for reason in rec.reasons), rec.reasons


@pytest.mark.parametrize(
    ("accelerator", "params", "words"),
    [
        ("h100-sxm", 405e9, "its all-reduces cost 10 µs each in every step, carry a decode step's tokens at"),
        ("l40s", 70e9, "tensor parallel over PCIe: its all-reduces cost 40 µs each"),
        ("tpu-v6e", 405e9, "its all-reduces are charged at the link's full one-way speed"),
    ],
)
def test_the_card_says_how_a_tensor_parallel_replica_is_charged(accelerator, params, words):
    # The model needs several chips per replica on each of these: the card says what its all-reduces cost.
    s = serving.ServeScenario(model=ModelSpec.from_params(params), requests_per_s=1, accelerators=(accelerator,))
    rec = serving.recommend_serving(serving.evaluate_serving(s), s)
    assert rec.best is not None and rec.best["chips_per_replica"] > 1
    assert any(words in reason for reason in rec.reasons), rec.reasons


@pytest.mark.parametrize(
    ("accelerator", "words"),
    [
        ("b200", "so FP4 weights reach {fp4:.0%} of that efficiency, of the chip's FP4 peak"),
        (
            "h100-sxm",
            "This chip has no FP4 matmuls: its FP4 weights are dequantised to BF16 as they are read and "
            "multiplied at the BF16 rate",
        ),
    ],
)
def test_the_card_says_how_fp4_weights_are_multiplied(accelerator, words):
    s = serving.ServeScenario(
        model=ModelSpec.from_params(70e9),
        weight_precision="fp4",
        kv_precision="fp8",
        requests_per_s=5,
        accelerators=(accelerator,),
    )
    rec = serving.recommend_serving(serving.evaluate_serving(s), s)
    fp4 = rec.best["fp4_factor"] if rec.best is not None and rec.best["fp4_factor"] is not None else 0.0
    words = words.format(fp4=fp4)  # fitted (0.62 on a B200 when written)
    assert rec.best is not None and any(words in reason for reason in rec.reasons), rec.reasons


@pytest.mark.parametrize("accelerator", ["a100-80gb", "a10g", "tpu-v5e"])
def test_the_card_says_a_chip_without_fp8_matmuls_multiplies_fp8_weights_at_the_bf16_rate(accelerator):
    s = serving.ServeScenario(model=ModelSpec.from_params(8e9), requests_per_s=1, accelerators=(accelerator,))
    rec = serving.recommend_serving(serving.evaluate_serving(s), s)
    words = "This chip has no FP8 matmuls: its FP8 weights are dequantised to BF16 as they are read"
    assert rec.best is not None and any(words in reason for reason in rec.reasons), rec.reasons


@pytest.mark.parametrize(("accelerator", "precision"), [("a10g", "fp8"), ("a100-80gb", "fp8"), ("h100-sxm", "fp4")])
def test_tensorrt_llm_is_not_tried_for_weights_it_cannot_run_on_the_chip(accelerator, precision):
    # TensorRT-LLM has no weight-only FP8 or FP4 path: FP8 needs Ada or newer, FP4 Blackwell. vLLM (Marlin) runs them.
    s = serving.ServeScenario(
        model=ModelSpec.from_params(8e9),
        weight_precision=precision,
        kv_precision="fp8",
        requests_per_s=1,
        accelerators=(accelerator,),
    )
    rec = serving.recommend_serving(serving.evaluate_serving(s), s)
    assert rec.best is not None and rec.best["stack"] == "vllm-cuda"
    words = f"TensorRT-LLM was not tried: it runs {precision.upper()} weights only on a chip's own"
    assert any(words in reason for reason in rec.reasons), rec.reasons


def test_tensorrt_llm_stays_a_candidate_where_the_chip_has_the_weights_matmuls():
    s = serving.ServeScenario(model=ModelSpec.from_params(8e9), requests_per_s=1, accelerators=("l4", "b200"))
    frame = serving.evaluate_serving(s)
    assert frame["stack_excluded"].is_null().all()
    fp4 = dataclasses.replace(s, weight_precision="fp4", accelerators=("b200",))
    assert serving.evaluate_serving(fp4)["stack_excluded"].is_null().all()


def test_the_card_says_nothing_of_missing_matmuls_where_the_chip_has_the_weights_precision():
    s = serving.ServeScenario(model=ModelSpec.from_params(8e9), requests_per_s=1, accelerators=("h100-sxm",))
    rec = serving.recommend_serving(serving.evaluate_serving(s), s)
    assert rec.best is not None and not any("This chip has no" in reason for reason in rec.reasons), rec.reasons


@pytest.mark.parametrize(
    ("accelerator", "said"),
    [("mi325x", "measured"), ("mi300x", "measured"), ("h100-nvl", "measured"), ("h100-sxm", None)],
)
def test_the_card_says_where_a_chip_holds_a_clock_of_its_own_under_load(accelerator, said):
    s = serving.ServeScenario(model=ModelSpec.from_params(70e9), requests_per_s=5, accelerators=(accelerator,))
    rec = serving.recommend_serving(serving.evaluate_serving(s), s)
    factor = rec.best["sustained_compute_factor"]
    words = f"Per unit of datasheet peak, this chip sustains {factor:.2f}x the matmul rate"
    line = next((reason for reason in rec.reasons if words in reason), None)
    assert (line is not None) == (said is not None), rec.reasons
    if said is not None:  # a measurement says measured (an estimate would say so, and that it is an upper bound)
        assert ("estimated: no measurement of this chip" in line) == (said == "estimated")
        assert ("an upper bound" in line) == (said == "estimated") and ("as measured:" in line) == (said == "measured")
    if accelerator == "h100-nvl":  # its rate from MLPerf results of it and H100 SXM (workbook.model.sustained)
        assert "the same benchmarks run on this chip and its full-power sibling" in line
    assert (factor > 1.0) == (accelerator == "mi325x")  # MI325X 1.09, MI300X 0.91, H100 NVL 0.85, unmeasured chips 1


def _option(**kw):
    base = {
        "name": "A",
        "cloud": "c",
        "stack": "trtllm",
        "stack_name": "TensorRT-LLM",
        "tpot_ms": 30.0,
        "price_secondary_source": False,
        "usd_per_million_tokens_low": 0.5,
        "usd_per_million_tokens_high": 1.0,
    }
    return base | kw


def test_overlapping_ranges_are_too_close_to_call_and_name_what_differs():
    best = _option()
    apart = _option(name="B", usd_per_million_tokens_low=1.01, usd_per_million_tokens_high=2.0)
    assert recommend.close_call(best, apart) is None
    same = recommend.close_call(best, _option(name="B", usd_per_million_tokens_low=0.9))
    assert same.startswith("Too close to call against B on c") and "capacity you can actually get" in same
    differ = recommend.close_call(
        best,
        _option(name="B", stack="vllm-rocm", stack_name="vLLM on ROCm", tpot_ms=45.0, price_secondary_source=True),
    )
    assert "p99 per token 30 ms here, 45 ms on B" in differ and "A's price is from the provider" in differ
    assert "TensorRT-LLM or vLLM on ROCm" in differ and "capacity" not in differ


@pytest.fixture(scope="module")
def long_prompts():
    """70B with 100,000-token prompts at 2 requests/s on B200 behind a round-robin load balancer: the 99th-percentile
    prompt alone takes most of a 4 s first-token target to prefill, so a replica may carry little traffic (another
    such prompt queued ahead of it would break the target)."""
    return serving.ServeScenario(
        model=ModelSpec.preset("llama3-70b"),
        prompt_tokens=100_000,
        output_tokens=1000,
        requests_per_s=2,
        ttft_ms=4000,
        accelerators=("b200",),
        router="round-robin",
    )


def test_a_router_to_the_least_busy_replica_pools_the_prompts_queue(long_prompts):
    # The same long prompts behind a router that sends each to the least busy replica: a prompt waits only when
    # every replica is busy, so each may carry more traffic and the fleet is smaller.
    pooled = dataclasses.replace(long_prompts, router="least-loaded")
    apart = serving.recommend_serving(serving.evaluate_serving(long_prompts), long_prompts)
    shared = serving.recommend_serving(serving.evaluate_serving(pooled), pooled)
    assert shared.best["chips"] < apart.best["chips"] / 2
    assert shared.best["ttft_ms"] <= pooled.ttft_ms
    assert apart.best["limit"] == "first-token target" and "round-robin, so each" in apart.reasons[0]
    # pooled, the first token no longer sizes it; where it does, the card says how requests are routed
    assert shared.best["limit"] != "first-token target" and "least busy" not in shared.reasons[0]
    assert "least busy replica" in recommend._router_words({**shared.best, "limit": "first-token target"}, pooled)


@pytest.mark.parametrize(
    ("model", "accelerator", "prompt", "output", "output_p99", "cause", "words"),
    [
        # reasoning: long answers fill the KV cache; a first token is fast until a request must wait for a slot
        ("llama3-8b", "h100-sxm", 500, 6000, 16000, "slot", "beyond it, new requests wait for a free sequence slot"),
        # 100k-token prompts with no per-token target (each 1.7 s prefill stalls the decoding steps): each prompt's
        # own prefill takes 1.7 s at any load; what grows past 2 s is the queue ahead
        ("llama3-70b", "b200", 100_000, 300, None, "queue", "beyond it, prompts wait too long behind the prompts"),
    ],
)
def test_the_card_says_what_breaks_a_first_token_target_that_sizes_the_fleet(
    model, accelerator, prompt, output, output_p99, cause, words
):
    s = serving.ServeScenario(
        model=ModelSpec.preset(model),
        prompt_tokens=prompt,
        output_tokens=output,
        output_tokens_p99=output_p99,
        requests_per_s=5 if cause == "slot" else 1,
        tpot_ms=50.0 if cause == "slot" else None,
        weight_precision="fp8",
        accelerators=(accelerator,),
    )
    rec = serving.recommend_serving(serving.evaluate_serving(s), s)
    best = rec.best
    assert best["limit"] == "first-token target" and best["limit_cause"] == cause
    assert best["ttft_ms"] < s.ttft_ms and words in rec.reasons[0], rec.reasons[0]
    # a slot is each replica's own: the router, which pools the prompts' queue, is not what sizes this fleet
    assert ("least busy replica" in rec.reasons[0]) == (cause != "slot")


def test_a_fleet_set_by_its_latency_targets_says_what_looser_ones_would_need(long_prompts):
    s = long_prompts
    frame = serving.evaluate_serving(s)
    rec = serving.recommend_serving(frame, s)
    best = rec.best
    assert best is not None and best["load_fraction"] < s.headroom / 2 and best["relaxed_ttft_ms"] > s.ttft_ms
    assert best["chips"] >= 2 * best["relaxed_chips"]
    line = next(r for r in rec.reasons if r.startswith("Your latency targets set the fleet's size"))
    assert (
        f"at most {best['relaxed_chips']:,} chips" in line and f"{best['prefill_tail_ms']:,.0f} ms to prefill" in line
    )
    # The claim holds: at the looser targets the fleet needs no more chips than said.
    looser = dataclasses.replace(s, ttft_ms=best["relaxed_ttft_ms"], tpot_ms=best["relaxed_tpot_ms"] or s.tpot_ms)
    again = serving.recommend_serving(serving.evaluate_serving(looser), looser).best
    assert again is not None and again["chips"] <= best["relaxed_chips"]
    assert not any(r.startswith("Your latency targets") for r in serving.recommend_serving(frame.clear(), s).reasons)


def test_a_fleet_too_large_to_rent_because_of_its_targets_is_told_the_targets_not_only_a_reservation(long_prompts):
    s = dataclasses.replace(long_prompts, ttft_ms=2000.0)
    rec = serving.recommend_serving(serving.evaluate_serving(s), s)
    assert rec.best is None
    reason = rec.infeasible.row(0, named=True)["reason"]
    assert "use a reservation" in reason and "ms to the first token" in reason and "would serve it" in reason


def test_a_fleet_at_its_headroom_gets_no_line_on_looser_targets(answer):
    _, frame, rec = answer
    assert rec.best["relaxed_chips"] is None or rec.best["chips"] < 2 * rec.best["relaxed_chips"]
    assert not any(r.startswith("Your latency targets") for r in rec.reasons)


def test_the_looser_targets_offered_are_the_loosest_the_smaller_fleet_needs():
    # 70B on H100 with a 4 ms per-token target no replica meets (7.8 ms at best): read at the headroom target's load,
    # the advice said 37 ms per token would do with 8 chips, where 8.6 ms does (its lightest load gives 7.8 ms).
    s = serving.ServeScenario(model=ModelSpec.preset("llama3-70b"), tpot_ms=4, accelerators=("h100-sxm",))
    row = serving.evaluate_serving(s).row(0, named=True)
    idle = dataclasses.replace(s, tpot_ms=None, requests_per_s=0.01)
    floor_ms = serving.recommend_serving(serving.evaluate_serving(idle), idle).best["tpot_ms"]
    assert row["relaxed_tpot_ms"] is not None and row["relaxed_tpot_ms"] < 1.25 * floor_ms, (row, floor_ms)
    assert f"allowing {row['relaxed_targets']}" in row["infeasible_reason"]
    looser = dataclasses.replace(s, tpot_ms=row["relaxed_tpot_ms"])
    again = serving.recommend_serving(serving.evaluate_serving(looser), looser).best
    assert again is not None and again["chips"] <= row["relaxed_chips"]


def test_a_commitment_dearer_than_on_demand_says_so():
    # The only 1-year commitment quotes for H100 are GCP's ($8.09 per chip-hour); other clouds list it on demand at
    # about $3: the card billed $425k for the term without a word that on-demand costs less.
    s = serving.ServeScenario(
        model=ModelSpec.preset("llama3-70b"), requests_per_s=10, accelerators=("h100-sxm",), pricing=("commit-1y",)
    )
    rec = serving.recommend_serving(serving.evaluate_serving(s), s)
    best = rec.best
    assert best["on_demand_usd_per_chip_hour"] < best["usd_per_chip_hour"]
    line = next(r for r in rec.reasons if r.startswith("Commitment:"))
    assert f"It is no discount here: on-demand, {best['on_demand_cloud']} lists this chip from" in line, line


def test_a_chip_without_a_price_of_the_pricing_asked_names_the_pricing_it_has(capsys):
    s = serving.ServeScenario(
        model=ModelSpec.preset("llama3-70b"), weight_precision="fp4", requests_per_s=20, accelerators=("gb200",)
    )
    row = serving.evaluate_serving(s).row(0, named=True)
    assert row["chips"] and row["usd_per_chip_hour"] is None
    assert "no on-demand price in the dataset; it has capacity-block prices" in row["infeasible_reason"]
    from workbook import cli

    cli.main(["serve", "--model", "llama3-70b", "--accelerator", "gb200", "--precision", "fp4", "--rps", "20"])
    out = capsys.readouterr().out
    assert f"could serve this on {row['chips']} chips, but has no on-demand price" in out and "cannot serve" not in out


def test_a_fleet_rents_whole_instances_at_the_price_a_training_job_pays(aws_h100_small_fleet):
    # 70B at 3 requests/s on AWS H100s: 2 chips would do, on a p5.48xlarge of 8, all 8 billed, so the fleet runs on all
    # 8 (more replicas, less load each: its latencies are lower than on 2); its price per chip-hour is the cheapest
    # quote that holds a replica, the one an 8-chip training job on AWS pays
    s = aws_h100_small_fleet
    rec = serving.recommend_serving(serving.evaluate_serving(s), s)
    best = rec.best
    assert best["chips_needed"] == 2 and best["chips"] == best["rented_chips"] == 8
    assert best["replicas"] * best["chips_per_replica"] == 8 and best["instance_type"] == "p5.48xlarge"
    assert best["usd_per_month"] == pytest.approx(8 * best["usd_per_chip_hour"] * HOURS_PER_MONTH)
    words = " ".join(rec.reasons)
    assert (
        "2 chips would carry this traffic; p5.48xlarge is rented whole, 8 chips each, so the fleet runs on all 8"
        in words
    )
    assert "rented)" not in rec.headline
    on_two = serving.evaluate_serving(dataclasses.replace(s, clouds=("lambda",))).row(0, named=True)
    assert on_two["chips"] == on_two["chips_needed"] == 2  # per-GPU instances: no more than the traffic needs
    assert best["utilisation"] < on_two["utilisation"] and best["tpot_ms"] <= on_two["tpot_ms"]
    train = Scenario(
        model=ModelSpec.from_params(8e9),
        tokens=1e11,
        chips=8,
        accelerators=("h100-sxm",),
        pricing=("on-demand",),
        constraints=Constraints(clouds=("aws",)),
    )
    job = training_options.evaluate(train).row(0, named=True)
    assert job["usd_per_chip_hour"] == pytest.approx(best["usd_per_chip_hour"])
    assert best["usd_per_chip_hour"] <= best["usd_per_chip_hour_typical"]


def test_tied_fleets_take_the_smallest_replica_which_fits_small_instances():
    # 8B FP8 at 2 requests/s on AWS A10Gs: two 1-chip replicas or one 2-chip replica serve it; only the first fits
    # AWS's 1-GPU g5 instances (the 2-chip one rents an 8-GPU g5.48xlarge, all of it billed)
    s = serving.ServeScenario(
        model=ModelSpec.from_params(8e9),
        weight_precision="fp8",
        requests_per_s=2,
        accelerators=("a10g",),
        clouds=("aws",),
        pricing=("on-demand",),
    )
    best = serving.recommend_serving(serving.evaluate_serving(s), s).best
    assert best["chips"] == 2 and best["tensor_parallel"] == 1 and best["rented_chips"] == 2
    assert best["chips_per_instance"] == 1


def test_a_split_fleet_rents_instances_that_hold_its_larger_pool():
    # 8B, 30,000-token prompts on AWS L40S with prefill apart: 2-chip prefill replicas cannot run on 1-GPU g6e
    # instances, so the fleet packs into 8-GPU ones; the price at the load ceiling counts the chips billed too
    s = serving.ServeScenario(
        model=ModelSpec.from_params(8e9),
        requests_per_s=2,
        prompt_tokens=30000,
        output_tokens=200,
        ttft_ms=1500,
        accelerators=("l40s",),
        clouds=("aws",),
        disaggregation=True,
    )
    best = serving.evaluate_serving(s).row(0, named=True)
    assert best["disaggregated"] and best["prefill_chips_per_replica"] > 1
    assert best["chips_per_instance"] >= best["prefill_chips_per_replica"] and best["rented_chips"] >= best["chips"]
    at_ceiling = best["usd_per_million_tokens_at_ceiling"] * best["chips"] / best["rented_chips"]
    assert at_ceiling < best["usd_per_million_tokens"] <= best["usd_per_million_tokens_at_ceiling"] / s.headroom * 1.01


def test_train_then_serve_bills_the_serving_fleets_rented_chips():
    s = serving.ServeScenario(
        model=ModelSpec.from_params(70e9), requests_per_s=3, accelerators=("h100-sxm",), clouds=("aws",)
    )
    serve = serving.evaluate_serving(s)
    train = training_options.evaluate_full(
        Scenario(model=ModelSpec.from_params(8e9), tokens=1e10, chips=8, accelerators=("h100-sxm",))
    )
    both = serving.train_then_serve(train, serve, 12)
    fleet = serve.filter(pl.col("feasible")).row(0, named=True)
    assert fleet["rented_chips"] == fleet["chips"] > fleet["chips_needed"]
    assert both["serve_usd"].min() == pytest.approx(fleet["usd_per_month"] * 12, rel=1e-6)
