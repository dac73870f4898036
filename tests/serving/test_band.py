"""The cost range carries the model's held-out throughput error within latency limits, per software stack."""

import dataclasses
import math

import polars as pl
import pytest

from workbook import serving
from workbook.model.spec import ModelSpec
from workbook.model.units import HOURS_PER_MONTH
from workbook.serving import validation
from workbook.serving.band import throughput_band


@pytest.fixture(scope="module")
def band(cat):
    return throughput_band(cat)


def test_each_stack_range_spans_its_held_out_errors_and_the_models_own_answer(cat, band, eff):
    rows = cat.inference_runs.filter((pl.col("scenario") == "server") & (pl.col("measure") == "tokens_per_s"))
    newest = rows.filter(pl.col("published") == pl.col("published").max().over("stack", "accelerator_id"))
    errors = validation.validate(dataclasses.replace(cat, inference_runs=newest), eff)
    for stack in band.stacks.iter_rows(named=True):
        own = errors.filter(pl.col("stack") == stack["stack"])["error"]
        assert stack["results"] == own.len() > 0
        assert stack["low"] == pytest.approx(min(own.min(), 0.0)) and stack["high"] == pytest.approx(max(own.max(), 0))
        assert stack["low"] <= 0 <= stack["high"]
    # Measured when written: TensorRT-LLM's newest results per chip (H100 v5.0, B200 and H200 v5.1, Server and
    # Interactive) span 0.87x-1.80x published / predicted; vLLM on ROCm's (MI300X, MI325X v5.1) 1.00x-1.48x.
    assert {"trtllm", "vllm-rocm"} <= set(band.stacks["stack"])


def test_a_stack_with_no_result_takes_every_stacks_range_and_says_so(band):
    looked_up = band.for_stacks(pl.Series(["neuron", "trtllm"])).sort("stack")
    neuron, trtllm = looked_up.iter_rows(named=True)
    assert (neuron["model_error_low"], neuron["model_error_high"]) == (band.pooled_low, band.pooled_high)
    assert neuron["model_error_basis"].startswith("no published result of this stack")
    assert neuron["model_error_results"] is None and trtllm["model_error_results"] > 0
    assert band.pooled_low <= trtllm["model_error_low"] and trtllm["model_error_high"] <= band.pooled_high


def test_the_cost_range_widens_the_price_spread_by_the_models_error(cat):
    s = serving.ServeScenario(model=ModelSpec.from_params(70e9), requests_per_s=20)
    frame = serving.evaluate_serving(s, cat).filter(pl.col("feasible"))
    hours = s.output_tokens_per_s * 3600 / 1e6
    for o in frame.head(20).iter_rows(named=True):
        price_only = o["usd_per_month_low"] / math.exp(o["model_error_low"])
        assert price_only <= o["usd_per_month"] + 1e-6  # the cheapest quote is at most the chosen one
        assert o["usd_per_million_tokens_low"] <= o["usd_per_million_tokens"] <= o["usd_per_million_tokens_high"]
        assert o["usd_per_month_low"] / HOURS_PER_MONTH / hours == pytest.approx(
            o["usd_per_million_tokens_low"], rel=1e-3
        )


def test_the_card_states_the_range_and_what_it_rests_on(cat):
    s = serving.ServeScenario(model=ModelSpec.from_params(70e9), requests_per_s=20, accelerators=("h200",))
    rec = serving.recommend_serving(serving.evaluate_serving(s, cat), s)
    line = next(r for r in rec.reasons if r.startswith("Range "))
    assert "published results of TensorRT-LLM within latency limits" in line and "chips may be needed" in line
    s = dataclasses.replace(s, accelerators=("trainium2",))
    rec = serving.recommend_serving(serving.evaluate_serving(s, cat), s)
    line = next(r for r in rec.reasons if r.startswith("Range "))
    assert "has no published result within latency limits; those of every stack" in line
