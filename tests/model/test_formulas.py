"""Formulas against hand-worked and published numbers, plus property tests."""

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workbook.model import flops, memory
from workbook.training import options
from workbook.training.scenario import ModelSpec, Scenario


@pytest.mark.parametrize("stage, expected_gb", [(0, 120.0), (1, 31.4), (2, 16.6), (3, 1.9)])
def test_zero_paper_7_5b_on_64_gpus(stage, expected_gb):
    parts = memory.model_state_bytes(7.5e9, 64, stage)
    assert sum(parts.values()) / 1e9 == pytest.approx(expected_gb, abs=0.05)


def test_palm_540b_training_flops():
    # PaLM App. B: 6N + 12*L*H*Q*T per token, non-causal; 780B tokens -> 2.56e24 FLOPs.
    total = flops.training_flops(540.35e9, 780e9, 118, 48 * 256, 2048, causal=False)
    assert total == pytest.approx(2.56e24, rel=0.01)


def test_causal_halves_only_attention():
    full = flops.flops_per_token(1e9, 10, 1024, 2048, causal=False)
    causal = flops.flops_per_token(1e9, 10, 1024, 2048, causal=True)
    assert full - causal == pytest.approx(12 * 10 * 1024 * 2048 / 2)


def test_selective_activations_match_korthikanti():
    # 34*s*b*h/t per layer (Korthikanti 2022, Table 2).
    assert memory.activation_bytes(2048, 1, 12288, 12288, 96, 8, "selective") == 96 * 34 * 2048 * 12288 / 8


def _scenario(**kw):
    base = dict(
        model=ModelSpec.from_params(7e9), tokens=1.4e11, accelerators=("h100-sxm", "tpu-v5p"), pricing=("on-demand",)
    )
    base.update(kw)
    return Scenario(**base)


@settings(max_examples=15, deadline=None)
@given(st.sampled_from([8, 16, 64]), st.sampled_from([2, 4]))
def test_more_chips_fewer_days(chips, factor):
    few = options.evaluate(_scenario(chips=chips)).sort("accelerator_id", "cloud")
    many = options.evaluate(_scenario(chips=chips * factor)).sort("accelerator_id", "cloud")
    assert (many["train_days"] < few["train_days"]).all()


@settings(max_examples=15, deadline=None)
@given(st.floats(1e9, 1e11), st.floats(1.1, 4))
def test_bigger_model_more_memory(params, factor):
    small = options.evaluate(_scenario(model=ModelSpec.from_params(params), chips=64))
    big = options.evaluate(_scenario(model=ModelSpec.from_params(params * factor), chips=64))
    key = ["accelerator_id", "cloud", "pricing_model"]
    joined = small.join(big, on=key, suffix="_big").filter(pl.col("memory_per_chip_gb").is_not_null())
    assert joined.height > 0, "no option in both frames: nothing compared"
    # A bigger model needs more memory per chip on the same layout, or a layout that holds less per chip:
    # more model-parallel sharding, more recompute or a higher ZeRO stage.
    layout = ("tensor_parallel", "pipeline_parallel", "context_parallel", "data_parallel", "recompute", "zero_stage")
    same = pl.all_horizontal([pl.col(c) == pl.col(f"{c}_big") for c in layout])
    shard = pl.col("tensor_parallel") * pl.col("pipeline_parallel") * pl.col("context_parallel")
    shard_big = pl.col("tensor_parallel_big") * pl.col("pipeline_parallel_big") * pl.col("context_parallel_big")
    order = {"none": 0, "selective": 1, "full": 2}
    recompute = pl.col("recompute").replace_strict(order)
    recompute_big = pl.col("recompute_big").replace_strict(order)
    ok = (
        (same & (pl.col("memory_per_chip_gb_big") > pl.col("memory_per_chip_gb")))
        | (shard_big > shard)
        | (recompute_big > recompute)
        | (pl.col("zero_stage_big") > pl.col("zero_stage"))
    )
    assert joined.select(ok.all()).item()


def test_cost_is_chip_hours_times_price_plus_migration():
    frame = options.evaluate(_scenario(days=20)).filter(pl.col("feasible"))
    assert frame.height > 0
    expected = frame["chip_hours"] * frame["usd_per_chip_hour"] + frame["migration_cost_usd"]
    assert ((frame["cost_usd"] - expected).abs() < 1e-6 * expected).all()


def test_memory_breakdown_sums_to_total():
    frame = options.evaluate(_scenario(chips=64)).unique("accelerator_id")
    parts = options.memory_breakdown(frame)
    totals = parts.group_by("accelerator_id").agg(pl.col("gb").sum()).join(frame, on="accelerator_id")
    assert ((totals["gb"] - totals["memory_per_chip_gb"]).abs() < 1e-9).all()
    assert set(parts["component"]) == set(memory.COMPONENTS)


def test_sweep_over_model_size_and_days():
    s = _scenario(days=30)
    picks = options.evaluate(s).filter(pl.col("feasible")).unique("accelerator_id", keep="first")
    sizes = options.sweep(s, picks, params=[1e9, 1e10, 1e11])
    assert sizes.height == 3 * picks.height
    by_size = sizes.filter(pl.col("accelerator_id") == "h100-sxm").sort("params")
    assert by_size["cost_usd"].is_sorted() and by_size["train_flops"].is_sorted()
    durations = (
        options.sweep(s, picks, days=[10, 40]).filter(pl.col("accelerator_id") == "h100-sxm").sort("target_days")
    )
    assert durations["chips"][0] > durations["chips"][1]


def test_days_target_is_met_and_bands_bracket():
    frame = options.evaluate(_scenario(days=10)).filter(pl.col("feasible"))
    assert (frame["train_days"] <= 10 * 1.001).all()
    assert ((frame["train_days_low"] <= frame["train_days"]) & (frame["train_days"] <= frame["train_days_high"])).all()


def test_no_fp8_on_a100_is_reported_not_clamped():
    frame = options.evaluate(_scenario(accelerators=("a100-80gb",), precision="fp8", chips=8))
    assert frame["infeasible_reason"].str.contains("no FP8").all()


def test_a_commitment_bills_whole_terms_even_for_a_run_that_outlasts_one():
    from workbook.model import cost
    from workbook.model.units import HOURS_PER_YEAR

    hours = [0.5 * HOURS_PER_YEAR, HOURS_PER_YEAR, 1.3 * HOURS_PER_YEAR, 0.5 * HOURS_PER_YEAR]
    frame = pl.DataFrame({"wall": hours, "pricing": ["commit-1y", "commit-1y", "commit-1y", "on-demand"]})
    billed = frame.select(cost.billed_chip_hours(pl.lit(2.0), pl.col("wall"), pl.col("pricing")))[:, 0].to_list()
    # half a year and a full year: one term; 1.3 years: two whole terms; on demand: the run's own hours
    assert billed == pytest.approx([2 * HOURS_PER_YEAR, 2 * HOURS_PER_YEAR, 4 * HOURS_PER_YEAR, HOURS_PER_YEAR])


@pytest.mark.parametrize(
    ("run_days", "block_days"), [(0.2, 1), (1.0, 1), (3.4, 4), (14.0, 14), (14.1, 21), (37.6, 42), (180.0, 182)]
)
def test_a_capacity_block_bills_the_block_that_covers_the_run(run_days, block_days):
    # AWS sells capacity blocks in whole days up to 14 and whole weeks beyond, up to 182 days (182 = 26 weeks).
    from workbook.model import cost

    frame = pl.DataFrame({"wall": [run_days * 24], "pricing": ["capacity-block"]})
    billed = frame.select(cost.billed_chip_hours(pl.lit(8.0), pl.col("wall"), pl.col("pricing"))).item()
    assert billed == pytest.approx(8 * block_days * 24)
