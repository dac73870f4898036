"""``evaluate_full`` keeps its latest results in memory: a repeated scenario is not computed again, anything that
changes the answer (scenario, catalog content, calibration, jobs) is, and no caller can change another's frame."""

import dataclasses
from unittest import mock

import polars as pl
import pytest

from workbook import cache, catalog
from workbook.training import options
from workbook.training.scenario import ModelSpec, Scenario

SCENARIO = Scenario(model=ModelSpec.from_params(7e9), tokens=1.4e11, days=30, accelerators=("h100-sxm", "tpu-v5p"))


@pytest.fixture
def computed(monkeypatch):
    """An empty memo and a spy counting the real computations."""
    monkeypatch.setattr(options, "_EVALUATIONS", cache.Memo(options.EVALUATIONS_KEPT_BYTES))
    spy = mock.Mock(wraps=options._evaluate_full)
    monkeypatch.setattr(options, "_evaluate_full", spy)
    return spy


def test_a_repeated_scenario_is_computed_once_and_equal(computed):
    cat = catalog.load()
    first = options.evaluate_full(SCENARIO, cat)
    assert first.height > 0
    again = options.evaluate_full(dataclasses.replace(SCENARIO), catalog.load())  # equal scenario, reloaded tables
    assert computed.call_count == 1 and again.equals(first)
    assert options.evaluate(SCENARIO, cat).equals(first.select(options.OUTPUT_COLUMNS))
    assert computed.call_count == 1


def test_what_changes_the_answer_computes_again(computed):
    cat = catalog.load()
    base = options.evaluate_full(SCENARIO, cat)
    options.evaluate_full(dataclasses.replace(SCENARIO, days=31), cat)
    dearer = dataclasses.replace(cat, prices=cat.prices.with_columns(pl.col("usd_per_chip_hour") * 2))
    doubled = options.evaluate_full(SCENARIO, dearer)
    options.evaluate_full(SCENARIO, cat, options._default_calibration(cat))
    options.evaluate_full(SCENARIO, cat, jobs_frame=options.job_frame(SCENARIO, days=[10, 20]))
    assert computed.call_count == 5
    key = ["accelerator_id", "cloud", "pricing_model"]
    both = base.filter(pl.col("feasible")).join(doubled, on=key, suffix="_dearer")
    assert both.height > 0 and (both["compute_cost_usd_dearer"] > both["compute_cost_usd"]).all()


def test_a_callers_change_in_place_does_not_reach_the_next_caller(computed):
    frame = options.evaluate_full(SCENARIO)
    frame.insert_column(0, pl.Series("mine", [1] * frame.height))
    frame.drop_in_place("cost_usd")
    again = options.evaluate_full(SCENARIO)
    assert computed.call_count == 1 and "mine" not in again.columns and "cost_usd" in again.columns


def test_the_memo_keeps_the_latest_within_its_bytes():
    memo = cache.Memo(max_bytes=3 * 8_000)
    frames = {k: pl.DataFrame({"x": [float(k)] * 1_000}) for k in range(5)}  # 8 kB each
    for k, frame in frames.items():
        assert memo.get(k, lambda f=frame: f).equals(frame)
    assert len(memo) == 3 and memo.estimated_bytes() <= memo.max_bytes
    recomputed = []
    memo.get(0, lambda: recomputed.append(0) or frames[0])  # the oldest was dropped
    memo.get(4, lambda: recomputed.append(4) or frames[4])  # the newest was kept
    assert recomputed == [0]
