"""Precision as it really trains: FP8 speed-ups from paired runs, INT8 refused without a stack, FP8 refused without
FP8 matmuls."""

import polars as pl
import pytest

from workbook import catalog
from workbook.training import calibration, options
from workbook.training.scenario import ModelSpec, Scenario


@pytest.fixture(scope="module")
def cal():
    return calibration.fit(catalog.load())


def test_fp8_speedup_matches_each_paired_run_within_10_percent(cal):
    pairs = calibration.fp8_pairs(cal.points.filter(~pl.col("moe")))
    assert pairs.height >= 2
    fitted = pairs.join(cal.fp8_speedup, on="family", suffix="_fitted")
    assert ((fitted["speedup_fitted"] / fitted["speedup"] - 1).abs() <= 0.10).all()


def _one(accelerator, precision):
    s = Scenario(
        model=ModelSpec.from_params(70e9), tokens=1e12, precision=precision, chips=512, accelerators=(accelerator,)
    )
    return options.evaluate(s).row(0, named=True)


def test_int8_training_refused_on_h100():
    row = _one("h100-sxm", "int8")
    assert row["infeasible_code"] == "no_training_stack"


@pytest.mark.parametrize("accelerator", ["tpu-v5p", "tpu-v6e", "a100-80gb"])
def test_fp8_training_refused_where_the_chip_has_no_fp8_matmuls(accelerator):
    # TPU v5p and v6e have no FP8 matrix unit (FP8 acceleration is new with TPU7x); their FP8 plans read as BF16 ones
    row = _one(accelerator, "fp8")
    assert row["infeasible_code"] == "no_precision" and "no FP8 support" in row["infeasible_reason"]
    assert _one("tpu-v7", "fp8")["feasible"]


def test_a_chip_whose_fp8_peak_is_its_bf16_peak_trains_fp8_at_bf16_speed(cal):
    # Trainium's cFP8 runs at its BF16 rate (190 TFLOPS each, AWS Neuron docs)
    bf16, fp8 = _one("trainium1", "bf16"), _one("trainium1", "fp8")
    assert fp8["train_days"] == pytest.approx(bf16["train_days"], rel=1e-6)
    basis = cal.mfu.filter((pl.col("accelerator_id") == "trainium1") & (pl.col("precision") == "fp8"))["basis"][0]
    assert basis.startswith("no FP8 speed-up")


def test_h100_fp8_is_faster_but_less_than_the_peak_ratio():
    bf16, fp8 = _one("h100-sxm", "bf16"), _one("h100-sxm", "fp8")
    assert 1.2 < bf16["train_days"] / fp8["train_days"] < 1.7


def test_int8_training_refused_wherever_no_production_stack_exists(cal):
    cat = catalog.load()
    s = Scenario(model=ModelSpec.from_params(70e9), tokens=1e12, precision="int8", chips=512)
    rows = options.evaluate(s).unique("accelerator_id")
    kinds = rows.join(cat.accelerators.select("accelerator_id", pl.col("kind").alias("_kind")), on="accelerator_id")
    others = kinds.filter(~pl.col("_kind").is_in(calibration.INT8_TRAINING_KINDS))
    assert others.height >= 10 and {"gb300", "b300", "h100-sxm", "mi300x", "trainium2"} <= set(others["accelerator_id"])
    assert (others["infeasible_code"] == "no_training_stack").all()
    assert others["infeasible_reason"].str.contains("INT8 training has no production stack").all()
    # and the calibration gives those chips no INT8 efficiency at all (GB300/B300's low INT8 peak gave MFU > 1)
    int8 = cal.mfu.filter(pl.col("precision") == "int8")
    assert int8.height > 0 and set(int8["accelerator_id"]).isdisjoint(others["accelerator_id"])


def test_no_calibrated_efficiency_exceeds_the_peak(cal):
    assert cal.mfu.height > 0 and (cal.mfu["mfu_high"] <= 1).all()
