"""Where each calibrated MFU comes from is an enum column, not a phrase read back out of the text."""

import dataclasses

import polars as pl
import pytest

from workbook import catalog
from workbook.model import throughput
from workbook.training import calibration
from workbook.training.scenario import default_global_batch_tokens


@pytest.fixture(scope="module")
def cat():
    return catalog.load()


def test_every_chip_and_precision_says_where_its_mfu_comes_from(cat):
    mfu = calibration.fit(cat).mfu
    assert mfu.height > 0 and mfu["basis_kind"].null_count() == 0
    bf16 = mfu.filter(pl.col("precision") == "bf16")
    assert set(bf16["accelerator_id"]) == set(cat.accelerator_ids)
    assert {"measured", "proxy"} <= set(bf16["basis_kind"].cast(pl.String))
    assert set(mfu.filter(pl.col("precision") != "bf16")["basis_kind"].cast(pl.String)) <= {"measured", "derived"}


def test_chips_without_runs_or_proxy_fall_back_to_the_median_of_measured_chips(cat):
    no_proxies = dataclasses.replace(cat, mfu_proxies=cat.mfu_proxies.head(0))
    bf16 = calibration.fit(no_proxies).mfu.filter(pl.col("precision") == "bf16")
    fallback = bf16.filter(pl.col("basis_kind") == "fallback")
    measured = bf16.filter(pl.col("basis_kind") == "measured")
    assert fallback.height > 0 and measured.height > 0
    assert set(fallback["accelerator_id"]) == set(cat.mfu_proxies["accelerator_id"]) - set(measured["accelerator_id"])
    assert fallback["mfu"].unique().to_list() == [pytest.approx(measured["mfu"].median())]


def test_blackwell_efficiency_comes_from_its_own_mlperf_runs(cat):
    cal = calibration.fit(cat)
    own = cal.mfu.filter(pl.col("accelerator_id").is_in(["b200", "gb200"]) & (pl.col("precision") == "bf16"))
    assert own.height == 2 and (own["basis_kind"].cast(pl.String) == "measured").all()
    assert own["basis"].str.contains("mlperf5").all()
    # FP8 on those chips returns their own measured FP8 rate (the speed-up divides out): GB200 at 512 chips
    point = cal.points.filter(pl.col("run_id") == "mlperf50-nv-512gb200-llama31-405b")
    fp8 = cal.mfu.filter((pl.col("accelerator_id") == "gb200") & (pl.col("precision") == "fp8"))
    assert point.height == 1 and fp8["mfu_low"][0] <= point["base_mfu"][0] <= fp8["mfu_high"][0]


def test_mlperf_rows_become_throughput_points_from_tokens_and_time(cat):
    points = calibration.fit(cat).points.filter(pl.col("run_id").str.starts_with("mlperf"))
    row = cat.reference_runs.filter(pl.col("run_id") == "mlperf50-nv-512h100-llama31-405b").row(0, named=True)
    point = points.filter(pl.col("run_id") == row["run_id"]).row(0, named=True)
    tokens_per_s = row["tokens"] / (row["reported_days"] * 86_400 * row["chips"])
    flops = 6 * row["params"] + 6 * row["n_layers"] * row["attention_dim"] * row["seq_len"]
    # benchmark timing: no accounting overhead; the run's own interruptions (0.23 days on 512 chips) only
    training = 1 / (
        1 + throughput.INTERRUPTIONS_PER_CHIP_DAY * row["chips"] * throughput.HOURS_LOST_PER_INTERRUPTION / 24
    )
    assert 0.99 < training < 1
    assert point["mfu"] == pytest.approx(tokens_per_s / training * flops / point["peak_flops_per_s"], rel=1e-6)


def test_blackwell_ultra_uses_its_own_results_else_its_measured_sibling(cat):
    bf16 = calibration.fit(cat).mfu.filter(pl.col("precision") == "bf16")
    by_id = {r["accelerator_id"]: r for r in bf16.iter_rows(named=True)}
    # GB300 has its own published benchmarks (Megatron-Bridge perf tables): measured, not GB200's figure.
    assert by_id["gb300"]["basis_kind"] == "measured" and "mbridge" in by_id["gb300"]["basis"]
    assert by_id["gb300"]["mfu"] > by_id["gb200"]["mfu"]  # 1.2x GB200's tokens/s at the same dense peaks
    # B300 has none: its HGX sibling B200's measured efficiency, factor 1 (same dense peaks).
    assert by_id["b200"]["basis_kind"] == "measured"
    assert by_id["b300"]["basis_kind"] == "proxy" and by_id["b300"]["basis"].startswith("proxy: b200 x")
    assert by_id["b300"]["mfu"] == pytest.approx(by_id["b200"]["mfu"])


def test_goodput_is_fitted_per_way_of_counting_chip_hours(cat):
    cal = calibration.fit(cat)
    by = {r["chip_hours_basis"]: r for r in cal.goodput_by_basis.iter_rows(named=True)}
    assert set(by) == {"job_total", "wall_clock"} and all(r["runs"] >= 5 for r in by.values())
    for basis, row in by.items():
        runs = cal.full_runs.filter(pl.col("chip_hours_basis") == basis)["goodput"]
        assert row["goodput"] == pytest.approx(runs.median())
    # Predictions count the job's own chip time; the slow end of the range reaches a calendar span's accounting.
    assert cal.goodput == by["job_total"]["goodput"] and cal.goodput_high == by["job_total"]["goodput_high"]
    assert cal.goodput_low <= by["wall_clock"]["goodput"] < cal.goodput


def test_a_run_is_planned_at_its_published_global_batch_else_the_default_rule(cat):
    frame = calibration.runs_frame(cat, cat.reference_runs).select("run_id", "params", "global_batch_tokens")
    published = cat.reference_runs.filter(pl.col("global_batch_tokens").is_not_null())
    assert published.height >= 10
    mine = frame.join(published.select("run_id", pl.col("global_batch_tokens").alias("published")), on="run_id")
    assert (mine["global_batch_tokens"] == mine["published"]).all()
    rest = frame.join(published, on="run_id", how="anti")
    assert rest.height > 0
    for row in rest.iter_rows(named=True):
        assert row["global_batch_tokens"] == default_global_batch_tokens(row["params"])


def test_goodput_falls_back_to_the_basis_left_when_no_job_totals_are_published(cat):
    calendar_only = dataclasses.replace(
        cat, reference_runs=cat.reference_runs.filter(pl.col("chip_hours_basis").fill_null("") != "job_total")
    )
    cal = calibration.fit(calendar_only)
    assert cal.goodput_by_basis["chip_hours_basis"].to_list() == ["wall_clock"]
    assert cal.goodput == pytest.approx(cal.full_runs["goodput"].median())
