"""The price builder on a SkyPilot catalog folder (the public format a user refreshes from)."""

import datetime as dt

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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


# --- Rebuilds are transactions: a malformed or poisoned folder changes nothing and says where it is wrong. ---

EXTRACT = (
    "cloud,region,instance_type,accelerator,variant,accelerator_count,price_usd_per_hour,spot_price_usd_per_hour,"
    "notes,source_file,source_commit\n"
    "lambda,ALL,gpu_8x_h100,H100,SXM5 80GB,8,23.92,,,skypilot-catalog/lambda/vms.csv,abc123\n"
    "nebius,eu-north1,gpu-h100-8,H100,SXM5 80GB,8,23.6,10,,skypilot-catalog/nebius/vms.csv,abc123\n"
)
COMMITMENTS = (
    "cloud,accelerator,instance_or_sku,region,pricing_model,usd_per_chip_hour,as_of,source,notes\n"
    "gcp,TPU-v5p,tpu-v5p (per chip),us-east5,commit-1y,2.94,2025-03-01,cloud.google.com/tpu/pricing,\n"
)


def _source(root):
    """A small valid source folder: a SkyPilot catalog (aws, gcp), one extract and a commitments file."""
    import shutil

    shutil.copytree(FIXTURE, root)
    (root / "lambda.csv").write_text(EXTRACT)
    (root / "commitments.csv").write_text(COMMITMENTS)
    return root


def _rebuild(source, out, *extra):
    import contextlib
    import io

    from workbook import cli

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        sources = [str(s) for s in source] if isinstance(source, list) else [str(source)]
        code = cli.main(["data", "build-prices", *sources, "--out", str(out), "--as-of", "2026-11-01", *extra])
    return code, err.getvalue()


def _replace_cell(path, line, column, value):
    rows = path.read_text().splitlines()
    header = rows[0].split(",")
    cells = rows[line - 1].split(",")
    cells[header.index(column)] = value
    rows[line - 1] = ",".join(cells)
    path.write_text("\n".join(rows) + "\n")


@pytest.mark.parametrize(
    "file, line, column, value, named",
    [
        ("lambda.csv", 2, "price_usd_per_hour", "-23.92", "line 2, column price_usd_per_hour"),
        ("lambda.csv", 3, "spot_price_usd_per_hour", "NaN", "line 3, column spot_price_usd_per_hour"),
        ("lambda.csv", 2, "price_usd_per_hour", "9000", "line 2, column price_usd_per_hour"),  # $1125 per chip
        ("lambda.csv", 2, "accelerator_count", "eight", "line 2, column accelerator_count"),
        ("lambda.csv", 2, "accelerator_count", "0", "line 2, column accelerator_count"),
        ("lambda.csv", 3, "cloud", "Nebius Cloud", "line 3, column cloud"),
        ("commitments.csv", 2, "as_of", "March", "line 2, column as_of"),
        ("commitments.csv", 2, "pricing_model", "weekly", "line 2, column pricing_model"),
        ("gcp/vms.csv", 7, "AcceleratorName", "tpu-v5p-eight", "line 7, column AcceleratorName"),
        ("aws/vms.csv", 2, "AcceleratorCount", "0", "line 2, column AcceleratorCount"),
        ("aws/vms.csv", 3, "SpotPrice", "-1", "line 3, column SpotPrice"),
    ],
)
def test_poisoned_cell_is_refused_naming_file_line_and_column(tmp_path, file, line, column, value, named):
    source = _source(tmp_path / "src")
    out = tmp_path / "prices.csv"
    assert _rebuild(source, out)[0] == 0  # the clean folder builds
    before = out.read_bytes()
    _replace_cell(source / file, line, column, value)
    code, err = _rebuild(source, out, "--force")
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert f"{source / file} {named}" in err, err
    assert out.read_bytes() == before


def test_rebuild_keeps_a_backup_and_refuses_to_drop_most_rows_without_force(tmp_path):
    out = tmp_path / "prices.csv"
    shipped = (catalog.DATA_DIR / "prices.csv").read_bytes()
    out.write_bytes(shipped)
    source = _source(tmp_path / "src")
    code, err = _rebuild(source, out)
    assert code == 2 and "--force" in err and f"more than {pricebuild.MAX_DROP_SHARE:.0%}" in err
    assert out.read_bytes() == shipped and not (tmp_path / "prices.csv.bak").exists()
    code, err = _rebuild(source, out, "--force")
    assert code == 0, err
    assert (tmp_path / "prices.csv.bak").read_bytes() == shipped
    rebuilt = catalog.read_table(out, catalog.schemas.Prices)
    assert rebuilt.height == pricebuild.build(source, as_of=dt.date(2026, 11, 1)).height > 0
    # A second rebuild of the same folder drops nothing, so it needs no --force.
    assert _rebuild(source, out) == (0, "")


def test_shipped_sources_rebuild_the_shipped_file_exactly(tmp_path):
    """The committed data/prices.csv is what the builder makes of the committed sources (if they are here)."""
    sources = catalog.DATA_DIR.parents[1] / "shared" / "data-sources" / "prices"
    if not sources.is_dir():
        pytest.skip("shared/data-sources/prices is not next to this checkout")
    out = tmp_path / "prices.csv"
    out.write_bytes((catalog.DATA_DIR / "prices.csv").read_bytes())
    assert _rebuild([sources, catalog.DATA_DIR / "price-sources"], out)[0] == 0
    assert out.read_bytes() == (catalog.DATA_DIR / "prices.csv").read_bytes()


def _corrupt(root, kind, pick, value):
    """Apply one corruption to a valid source folder (every one of them must be refused)."""
    extract_columns = EXTRACT.splitlines()[0].split(",")
    if kind == "extract_cell":
        column = ["accelerator_count", "price_usd_per_hour", "spot_price_usd_per_hour", "cloud"][pick % 4]
        bad = value if column != "cloud" else value.upper() + " x"
        _replace_cell(root / "lambda.csv", 2 + pick % 2, column, bad or "-")
    elif kind == "missing_column":
        required = [c for c in extract_columns if c not in ("variant",)]
        column = required[pick % len(required)]
        lines = [line.split(",") for line in EXTRACT.splitlines()]
        index = extract_columns.index(column)
        (root / "lambda.csv").write_text("\n".join(",".join(c[:index] + c[index + 1 :]) for c in lines) + "\n")
    elif kind == "binary":
        (root / ["lambda.csv", "commitments.csv", "aws/vms.csv"][pick % 3]).write_bytes(bytes([0xFF, 0xFE, pick % 256]))
    elif kind == "broken_quote":
        (root / "lambda.csv").write_text(EXTRACT + 'lambda,ALL,"gpu_1x_h100,H100,SXM5,1,2.99,,,x,y\n')
    elif kind == "folder_named_csv":
        (root / f"x{pick}.csv").mkdir()
    elif kind == "cloud_folder_name":
        (root / "aws").rename(root / ["AWS", "my cloud", "_aws", "aws!"][pick % 4])
    elif kind == "vms_cell":
        column = ["AcceleratorCount", "Price", "SpotPrice"][pick % 3]
        _replace_cell(root / "aws" / "vms.csv", 2, column, value or "0")
    elif kind == "tpu_slice":
        _replace_cell(root / "gcp" / "vms.csv", 7, "AcceleratorName", f"tpu-v5p-{value or 'x'}")
    elif kind == "as_of":
        _replace_cell(root / "commitments.csv", 2, "as_of", f"20{pick % 100:02d}-{value or 'x'}")


BAD_VALUES = st.sampled_from(["-1", "0", "-0.0", "nan", "NaN", "inf", "-inf", "1e400", "eight", "1,5", "12x", "abc"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    kind=st.sampled_from(
        [
            "extract_cell",
            "missing_column",
            "binary",
            "broken_quote",
            "folder_named_csv",
            "cloud_folder_name",
            "vms_cell",
            "tpu_slice",
            "as_of",
        ]
    ),
    pick=st.integers(0, 1000),
    value=BAD_VALUES,
)
def test_any_malformed_folder_exits_2_with_one_line_and_leaves_prices_unchanged(tmp_path_factory, kind, pick, value):
    root = tmp_path_factory.mktemp("malformed")
    source = _source(root / "src")
    out = root / "prices.csv"
    out.write_bytes((catalog.DATA_DIR / "prices.csv").read_bytes())
    before = out.read_bytes()
    _corrupt(source, kind, pick, value)
    code, err = _rebuild(source, out, "--force")
    assert code == 2, (kind, pick, value)
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err
    assert out.read_bytes() == before
    assert sorted(p.name for p in root.iterdir()) == ["prices.csv", "src"]  # no backup, no temporary file left


def test_h100_parts_are_told_apart_by_their_name_and_variant():
    assert pricebuild._accelerator_id("H100", "SXM5 80GB") == "h100-sxm"
    assert pricebuild._accelerator_id("H100", "PCIe 80GB") == "h100-pcie"
    # Azure's NC H100 v5 carries H100 NVL 94GB cards (the shared extract names them H100-NVL, PCIe NVL 94GB)
    assert pricebuild._accelerator_id("H100-NVL", "PCIe NVL 94GB") == "h100-nvl"
    assert pricebuild._accelerator_id("H100", "NVL 94GB") == "h100-nvl"
    assert pricebuild._accelerator_id("A100-80GB", "PCIe 80GB") is None  # no such row in the catalog


def test_shipped_h100_nvl_prices_are_azures_per_card():
    rows = catalog.load().prices.filter(pl.col("accelerator_id") == "h100-nvl")
    assert set(rows["cloud"]) == {"azure"} and rows.height >= 4
    # Standard_NC80adis_H100_v5: two cards at $13.96 an hour in eastus
    eastus = rows.filter(pl.col("region") == "eastus").row(0, named=True)
    assert eastus["usd_per_chip_hour"] == pytest.approx(13.96 / 2) and eastus["chips_per_instance"] == 2


def test_aws_rates_per_chip_are_of_whole_instances():
    # AWS reserves Capacity Blocks in instances or whole UltraServers, never single GPUs: a rate published per
    # chip-hour for a named instance is billed for all of its chips
    prices = catalog.load().prices.filter((pl.col("cloud") == "aws") & ~pl.col("excluded"))
    chips = dict(prices.select("instance_type", "chips_per_instance").unique().iter_rows())
    assert chips["u-p6e-gb200x72 (72 GPUs)"] == 72 and chips["p6-b200.48xlarge"] == 8  # the name; B200's node
    assert chips["p5.48xlarge"] == 8 and chips["trn2.48xlarge"] == 16  # the extracts' rows of the same instance
    assert (prices["price_basis"] != "per chip-hour as published").all()
    quotes = catalog.load().price_quotes(("capacity-block",), ("aws",))
    assert quotes["whole_node"].all()
    # so are the other clouds' named nodes; a rate of no named instance stays per chip
    rows = catalog.load().prices.filter(~pl.col("excluded"))
    nodes = dict(rows.select(pl.concat_str("cloud", "instance_type", separator="|"), "chips_per_instance").iter_rows())
    for name in (
        "coreweave|NVIDIA HGX H100 (8 GPU)",
        "lambda|8x NVIDIA B200 SXM6",
        "oracle|BM.GPU.MI300X.8",
        "azure|Standard_ND96isr_MI300X_v5",
        "gcp|a3-highgpu-8g",
    ):
        assert nodes[name] == 8, name
    assert nodes["hyperstack|NVIDIA H100 SXM"] == 1 and nodes["gcp|tpu-v6e (per chip)"] == 1
