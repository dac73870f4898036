"""The price builder on a SkyPilot catalog folder (the public format a user refreshes from)."""

import datetime as dt

import polars as pl
import pytest

from workbook import catalog
from workbook.catalog import pricebuild
from workbook.errors import InputError

FIXTURE = catalog.DATA_DIR.parent / "tests" / "fixtures" / "skypilot"


@pytest.fixture(scope="module")
def built():
    return pricebuild.build(FIXTURE, as_of=dt.date(2026, 11, 1))


def _row(frame, accel, cloud, model):
    return frame.filter(
        (pl.col("accelerator_id") == accel) & (pl.col("cloud") == cloud) & (pl.col("pricing_model") == model)
    ).row(0, named=True)


def test_gcp_gpu_price_adds_host_vm(built):
    row = _row(built, "h100-sxm", "gcp", "on-demand")
    assert row["usd_per_chip_hour"] == pytest.approx((78.37 + 9.46006) / 8)
    assert row["price_basis"] == "GPU + host VM" and not row["excluded"]


def test_gcp_gpu_without_host_is_kept_but_excluded(built):
    row = _row(built, "a100-40gb", "gcp", "on-demand")
    assert row["excluded"] and row["flag"].startswith("gpu_only")


def test_tpu_slices_priced_per_chip_and_placeholders_dropped(built):
    assert _row(built, "tpu-v5p", "gcp", "on-demand")["usd_per_chip_hour"] == pytest.approx(16.8 / 4)
    assert _row(built, "tpu-v6e", "gcp", "on-demand")["usd_per_chip_hour"] == pytest.approx(10.8 / 4)
    assert built.filter(pl.col("region") == "asia-east1").height == 0


def test_aws_spot_is_min_over_zones_and_fresh_rows_are_not_cut_again(built):
    assert _row(built, "h100-sxm", "aws", "spot")["usd_per_chip_hour"] == pytest.approx(14.5 / 8)
    row = _row(built, "h100-sxm", "aws", "on-demand")
    assert row["usd_per_chip_hour"] == pytest.approx(55.04 / 8) and row["as_of"] == dt.date(2026, 11, 1)
    assert "l4" in built["accelerator_id"].to_list()


def test_output_passes_the_prices_schema(built, tmp_path):
    out = tmp_path / "prices.csv"
    pricebuild.write(built, out)
    assert catalog.read_table(out, catalog.schemas.Prices).height == built.height


def test_empty_folder_is_a_clear_error(tmp_path):
    with pytest.raises(InputError, match="SOURCE_DIR"):
        pricebuild.build(tmp_path)
