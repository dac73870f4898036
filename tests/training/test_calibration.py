"""Where each calibrated MFU comes from is an enum column, not a phrase read back out of the text."""

import dataclasses

import polars as pl
import pytest

from workbook import catalog
from workbook.training import calibration


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
