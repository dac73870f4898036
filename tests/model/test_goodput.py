"""Goodput by chips and job length: Llama 3's interruption statistics, bounded by the job's own length."""

import polars as pl
import pytest

from workbook.model import throughput
from workbook.training import options
from workbook.training.scenario import ModelSpec, Scenario


def test_llama3_scale_reproduces_its_effective_training_time():
    # 466 interruptions in 54 days on 16,384 H100 with > 90% effective training time (arXiv:2407.21783 Sec. 3.3.4)
    assert throughput.interruption_goodput(16_384, 54) == pytest.approx(1 / 1.1)
    assert throughput.interruption_goodput(16_384, 54) >= throughput.LLAMA3_EFFECTIVE_TIME


def test_more_chips_lose_more_and_a_short_job_loses_almost_nothing():
    days = [2 / 24, 1, 60]
    for chips in (64, 512, 16_384):
        few, many = throughput.interruption_goodput(chips, 60), throughput.interruption_goodput(chips * 4, 60)
        assert many < few
        values = [throughput.interruption_goodput(chips, d) for d in days]
        assert values == sorted(values, reverse=True)  # never more goodput for a longer job
    assert throughput.interruption_goodput(512, 2 / 24) > 0.995  # a 2-hour job on 512 chips
    assert throughput.interruption_goodput(11_616, 3.4 / 1440) > 0.99  # a 3.4-minute MLPerf run on 11,616 H100
    assert throughput.interruption_goodput(16_384, 60) < 0.92  # a 60-day job on 16K chips


def test_goodput_works_on_expressions_and_multiplies_the_accounting():
    frame = pl.DataFrame({"chips": [8.0, 16_384.0], "days": [0.01, 60.0]})
    exprs = frame.select(g=throughput.goodput(pl.col("chips"), pl.col("days"), 0.8))["g"].to_list()
    numbers = [0.8 * throughput.interruption_goodput(c, d) for c, d in frame.iter_rows()]
    assert exprs == pytest.approx(numbers) and exprs[1] < exprs[0] <= 0.8


def test_evaluate_reports_less_goodput_for_a_bigger_longer_job():
    def goodput(chips, tokens):
        s = Scenario(
            model=ModelSpec.from_params(70e9),
            tokens=tokens,
            chips=chips,
            accelerators=("h100-sxm",),
            pricing=("reserved-contract",),
        )
        row = options.evaluate(s).filter(pl.col("goodput").is_not_null())
        assert row.height > 0
        return row["goodput"][0], row["train_days"][0]

    small, small_days = goodput(64, 1e11)
    big, big_days = goodput(8192, 15e12)
    assert big_days > small_days and big < small
