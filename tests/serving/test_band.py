"""The cost range carries the model's held-out throughput error within latency limits, per software stack."""

import dataclasses
import math

import polars as pl
import pytest

from workbook import serving
from workbook.model.spec import ModelSpec
from workbook.model.units import HOURS_PER_MONTH
from workbook.serving import recommend, validation
from workbook.serving.band import throughput_band

PRICES = {
    "usd_per_million_tokens_low": 0.7,
    "usd_per_million_tokens_high": 2.0,
    "usd_per_month_low": 554.0,
    "usd_per_month_high": 1585.0,
}


@pytest.fixture(scope="module")
def band(cat):
    return throughput_band(cat)


def test_each_range_spans_its_held_out_errors_and_the_models_own_answer(cat, band, eff):
    rows = cat.inference_runs.filter(
        (pl.col("scenario") == "server") & (pl.col("measure") == "tokens_per_s") & pl.col("engine").is_null()
    )  # on each stack's current engine
    pools = pl.col("prefill_chips").is_not_null()
    newest = rows.filter(
        pl.col("published") == pl.col("published").max().over("stack", "accelerator_id", "model", pools)
    )
    errors = validation.validate(cat, eff, newest)
    assert band.errors.height == errors.height > 0
    dense = errors.join(newest.filter(pl.col("active_params") == pl.col("params")).select("run_id"), on="run_id")
    options = pl.DataFrame({"stack": ["trtllm", "vllm-rocm"], "accelerator_id": ["h200", "mi300x"]})  # dense models
    for o in band.for_options(options).iter_rows(named=True):
        own = dense.filter((pl.col("stack") == o["stack"]) & (pl.col("accelerator_id") == o["accelerator_id"]))
        assert o["model_error_scope"] == "chip" and o["model_error_results"] == own.height > 0
        assert o["model_error_low"] == pytest.approx(min(own["error"].min(), 0.0))
        assert o["model_error_high"] == pytest.approx(max(own["error"].max(), 0.0))
    # Measured when written: TensorRT-LLM on H200 (MLPerf v5.1's Llama 2 70B and 405B, Server and Interactive; v6.1's
    # one-GPU Llama 3.1 8B) 0.91x-1.46x published / predicted (0.83x-1.56x with v5.1's 8B; 0.83x-3.41x while a long
    # prompt's all-reduces were charged at a decode step's speed), on B200 0.69x-1.05x; vLLM on ROCm on MI300X
    # 0.78x-1.01x, on MI355X 0.98x-1.14x (v6.1).


def test_a_chip_or_stack_with_no_result_takes_the_next_wider_range_and_says_so(band):
    options = pl.DataFrame({"stack": ["trtllm", "trtllm", "neuron"], "accelerator_id": ["h200", "l4", "trainium2"]})
    ranges = {o["accelerator_id"]: o for o in band.for_options(options).iter_rows(named=True)}
    assert ranges["h200"]["model_error_scope"] == "chip"
    # shared replicas' results on dense models
    stack = band.errors.filter((pl.col("stack") == "trtllm") & ~pl.col("disaggregated") & ~pl.col("moe"))
    assert ranges["l4"]["model_error_scope"] == "stack" and ranges["l4"]["model_error_results"] == stack.height
    assert ranges["l4"]["model_error_low"] == pytest.approx(min(stack["error"].min(), 0.0))
    assert ranges["trainium2"]["model_error_scope"] == "all"
    assert ranges["trainium2"]["model_error_results"] == band.errors.height


def test_a_chip_with_results_under_another_stack_carries_them_into_the_range(band):
    # B200 has published results within latency limits with TensorRT-LLM but none with vLLM: vLLM on B200 spans vLLM's
    # errors on other chips and TensorRT-LLM's on B200, not vLLM's alone (measured when written: 0.69x-1.05x
    # published / predicted, 9 results). L40S's one vLLM result within limits (Red Hat, MLPerf v5.1) ran vLLM's V0
    # engine (its FP8 KV cache had no V1 path on Ada in vLLM 0.10), which no answer runs: vLLM on L40S likewise takes
    # TensorRT-LLM's on L40S (Fujitsu, v4.1: 0.89x) beside vLLM's elsewhere, and TensorRT-LLM on L40S keeps its own.
    # A chip with no result under any stack keeps the stack's.
    options = pl.DataFrame(
        {
            "stack": ["vllm-cuda", "trtllm", "vllm-cuda", "trtllm"],
            "accelerator_id": ["b200", "h800", "l40s", "l40s"],
        }
    )
    ranges = {(o["stack"], o["accelerator_id"]): o for o in band.for_options(options).iter_rows(named=True)}
    shared = band.errors.filter(~pl.col("disaggregated") & ~pl.col("moe"))
    chip = shared.filter((pl.col("stack") == "trtllm") & (pl.col("accelerator_id") == "b200"))
    others = shared.filter((pl.col("stack") == "vllm-cuda") & (pl.col("accelerator_id") != "b200"))
    assert chip.height > 0 and others.height > 0
    beside = ranges["vllm-cuda", "b200"]
    assert beside["model_error_scope"] == "stack and chip"
    assert beside["model_error_results"] == chip.height + others.height
    assert beside["model_error_high"] == pytest.approx(max(chip["error"].max(), others["error"].max(), 0.0))
    assert beside["model_error_low"] == pytest.approx(min(chip["error"].min(), others["error"].min(), 0.0))
    assert not band.errors["run_id"].str.starts_with("mlperf51-redhat-l40s").any()  # the V0 engine's
    assert ranges["vllm-cuda", "l40s"]["model_error_scope"] == "stack and chip"
    assert ranges["trtllm", "l40s"]["model_error_scope"] == "chip"
    assert ranges["trtllm", "h800"]["model_error_scope"] == "stack"
    line = recommend.range_line({**beside, "stack_name": "vLLM on CUDA", "chips": 4, **PRICES})
    assert "no published result of vLLM on CUDA within latency limits; vLLM on CUDA's on other chips and other " in line


def test_the_cost_range_widens_the_price_spread_by_the_models_error(cat):
    s = serving.ServeScenario(model=ModelSpec.from_params(70e9), requests_per_s=20)
    frame = serving.evaluate_serving(s, cat).filter(pl.col("feasible"))
    hours = s.output_tokens_per_s * 3600 / 1e6
    for o in frame.head(20).iter_rows(named=True):
        assert o["usd_per_month_low"] <= o["usd_per_month"] <= o["usd_per_month_high"]
        assert o["usd_per_million_tokens_low"] <= o["usd_per_million_tokens"] <= o["usd_per_million_tokens_high"]
        assert o["usd_per_month_low"] / HOURS_PER_MONTH / hours == pytest.approx(
            o["usd_per_million_tokens_low"], rel=1e-3
        )


def test_a_fleet_rented_in_whole_instances_keeps_its_bill_where_the_models_error_fits_in_them(
    cat, aws_h100_small_fleet
):
    # 3 requests/s of a 70B model on AWS's H100s: two chips' worth of traffic on one p5.48xlarge, rented whole (8
    # GPUs). The model's held-out error on the chip (published results 1.00x-1.06x of its throughput, measured when
    # written) moves the chips the traffic needs by a fraction of a chip, all within the 8 rented: the bill's range is
    # the price quotes' spread alone, its low end the chosen (cheapest) quote's bill, not that bill scaled by the error
    # ($38k-$47k a month before, $40k-$47k now).
    s = aws_h100_small_fleet
    o = serving.evaluate_serving(s, cat).filter(pl.col("feasible")).row(0, named=True)
    assert o["rent_unit"] == 8 and o["rented_chips"] == 8 and o["chips_needed"] <= 4
    assert o["model_error_low"] < 0  # its results served more than the model predicts: fewer chips might do
    assert o["usd_per_month_low"] == pytest.approx(o["usd_per_month"])  # but the instance is rented whole either way


def test_the_card_states_the_range_and_what_it_rests_on(cat):
    s = serving.ServeScenario(model=ModelSpec.from_params(70e9), requests_per_s=20, accelerators=("h200",))
    rec = serving.recommend_serving(serving.evaluate_serving(s, cat), s)
    line = next(r for r in rec.reasons if r.startswith("Range "))
    assert "published results of TensorRT-LLM on this chip within latency limits" in line
    assert "chips may be needed" in line
    s = dataclasses.replace(s, accelerators=("trainium2",))
    rec = serving.recommend_serving(serving.evaluate_serving(s, cat), s)
    line = next(r for r in rec.reasons if r.startswith("Range "))
    assert "Neuron NxD Inference has no published result within latency limits; those of every stack" in line


def test_the_range_never_reads_one_to_one():
    # A one-chip answer whose stack's results span 0.69x-1.96x of the model: "about 1 chip either way", not "about 1 to
    # 1 chips"; a wider answer keeps its range.
    o = {
        "model_error_low": -math.log(1.96),
        "model_error_high": -math.log(0.69),
        "model_error_results": 24,
        "model_error_scope": "stack",
        "stack_name": "TensorRT-LLM",
        **PRICES,
    }
    assert recommend.range_line({**o, "chips": 1}).endswith("predicts for them: about 1 chip either way.")
    assert recommend.range_line({**o, "chips": 6}).endswith("predicts for them: about 3 to 9 chips may be needed.")
    # in whole replicas: three of two chips, the traffic carried on two at 1.96x the throughput, on four at 0.69x
    line = recommend.range_line({**o, "chips": 6, "chips_per_replica": 2})
    assert line.endswith("predicts for them: about 4 to 8 chips may be needed.")


def test_shared_replicas_and_separate_pools_take_the_errors_of_their_own_kind(band):
    # MLPerf v6.0's NVL72 Server and Interactive results ran separate prefill and decode pools (their errors test the
    # pools' formulas: Llama 3.1 405B's prefill pool is the known gap, 0.51x on GB300). Measured when written: a shared
    # TensorRT-LLM replica on a chip with no result of its own spanned 0.69x-1.96x published / predicted with every
    # result, 0.69x-1.46x with the 21 shared ones (16 before MLPerf v6.1); a split option takes the 8 pool results
    # (0.91x-1.96x: v6.1's GB200 NVL72 result ran one pool, so v6.0's pools stay the newest of their kind).
    errors = band.errors.filter((pl.col("stack") == "trtllm") & ~pl.col("moe"))
    assert errors["disaggregated"].any() and not errors["disaggregated"].all()
    options = pl.DataFrame(
        {"stack": ["trtllm", "trtllm"], "accelerator_id": ["h800", "h800"], "disaggregated": [False, True]}
    )
    for o in band.for_options(options).iter_rows(named=True):
        kind = errors.filter(pl.col("disaggregated") == o["disaggregated"])
        assert o["model_error_scope"] == "stack" and o["model_error_results"] == kind.height
        assert o["model_error_low"] == pytest.approx(min(kind["error"].min(), 0.0))
        assert o["model_error_high"] == pytest.approx(max(kind["error"].max(), 0.0))
    assert band.for_options(options.drop("disaggregated"))["disaggregated"].to_list() == [False]  # absent: shared
    # The card names the kind: B200 has shared-replica results but none from separate pools (it read "this chip has
    # no published result within latency limits", as if B200 had none at all).
    pools = band.for_options(options.with_columns(accelerator_id=pl.lit("b200"))).filter(pl.col("disaggregated"))
    line = recommend.range_line({**pools.row(0, named=True), "stack_name": "TensorRT-LLM", "chips": 20, **PRICES})
    assert "this chip has no published disaggregated result within latency limits; TensorRT-LLM's on other" in line


def test_a_mixture_of_experts_option_takes_the_results_of_its_own_kind(band):
    # MLPerf's DeepSeek-R1 Server results (TensorRT-LLM, the experts split over each replica's eight GPUs) test a step
    # the dense results do not, and their error moved on its own: v5.1's served 0.47x-0.57x the throughput the model
    # predicts, v6.0's (TensorRT-LLM 1.2, the newest, so the range's) 0.94x-1.09x (measured when written: B200 1.07x,
    # where B200's dense results span 0.69x-1.05x). A dense answer's range keeps the dense results; a mixture-of-experts
    # answer takes the experts' (the card says so).
    options = pl.DataFrame({"stack": ["trtllm"] * 2, "accelerator_id": ["b200"] * 2, "moe": [False, True]})
    ranges = {o["moe"]: o for o in band.for_options(options).iter_rows(named=True)}
    b200 = band.errors.filter((pl.col("stack") == "trtllm") & (pl.col("accelerator_id") == "b200"))
    for moe, o in ranges.items():
        own = b200.filter((pl.col("moe") == moe) & ~pl.col("disaggregated"))
        assert o["model_error_scope"] == "chip" and o["model_error_results"] == own.height > 0
        assert o["model_error_low"] == pytest.approx(min(own["error"].min(), 0.0))
        assert o["model_error_high"] == pytest.approx(max(own["error"].max(), 0.0))
    experts = b200.filter(pl.col("moe"))["run_id"].to_list()
    assert experts == ["mlperf60-b200x8-deepseek-r1-server"]  # the newest round's, not v5.1's
    assert ranges[True]["model_error_high"] != ranges[False]["model_error_high"]
    line = recommend.range_line({**ranges[True], "stack_name": "TensorRT-LLM", "chips": 8, **PRICES})
    assert "published mixture-of-experts results of TensorRT-LLM on this chip within latency limits" in line
    assert band.for_options(options.drop("moe"))["moe"].to_list() == [False]  # absent: a dense model
