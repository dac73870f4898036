"""Schema checks on every shipped table and on bad user files."""

import shutil

import polars as pl
import pytest

from workbook import catalog
from workbook.catalog import pricebuild, schemas
from workbook.errors import DataError

REQUIRED_IDS = {
    "v100",
    "a100-40gb",
    "a100-80gb",
    "h100-sxm",
    "h100-pcie",
    "h800",
    "h200",
    "b200",
    "gb200",
    "gb300",
    "l4",
    "l40s",
    "a10g",
    "mi300x",
    "tpu-v3",
    "tpu-v4",
    "tpu-v5e",
    "tpu-v5p",
    "tpu-v6e",
    "tpu-v7",
    "trainium1",
    "trainium2",
}


def test_shipped_tables_load_and_cover_required_chips():
    cat = catalog.load()
    assert REQUIRED_IDS <= set(cat.accelerator_ids)
    assert cat.frameworks.height == 9
    assert not cat.accelerators.filter(cat.accelerators["accelerator_id"] == "v100")["offered"].item()


def test_seed_claims_are_not_prices():
    prices = catalog.load().prices
    assert "seed" not in " ".join(prices["source"].to_list()).lower()


def test_prices_rebuild_from_shared_sources_matches_shipped(tmp_path):
    src = catalog.DATA_DIR.parent.parent / "shared" / "data-sources" / "prices"
    if not src.is_dir():
        pytest.skip("../shared not present")
    out = tmp_path / "prices.csv"
    pricebuild.write(pricebuild.build(src, catalog.DATA_DIR / "price-sources"), out)
    assert out.read_text() == (catalog.DATA_DIR / "prices.csv").read_text()


def test_tpu_slice_names_count_cores_for_v4_v5p():
    assert pricebuild.tpu_slice_chips("tpu-v5p-8") == 4
    assert pricebuild.tpu_slice_chips("tpu-v4-8") == 4
    assert pricebuild.tpu_slice_chips("tpu-v6e-8") == 8
    assert pricebuild.tpu_slice_chips("tpu-v5litepod-16") == 16


def _override(tmp_path, body):
    path = tmp_path / "mine.csv"
    path.write_bytes(body if isinstance(body, bytes) else body.encode())
    return path


GOOD_HEADER = "accelerator_id,cloud,pricing_model,usd_per_chip_hour,as_of,source\n"


def test_override_replaces_and_leaves_shipped_file_alone(tmp_path):
    shipped = (catalog.DATA_DIR / "prices.csv").read_bytes()
    path = _override(tmp_path, GOOD_HEADER + "h100-sxm,mycloud,on-demand,1.5,2026-11-01,negotiated contract\n")
    cat = catalog.load(price_overrides=path)
    assert cat.usable_prices().filter(cat.usable_prices()["cloud"] == "mycloud")["usd_per_chip_hour"].item() == 1.5
    assert (catalog.DATA_DIR / "prices.csv").read_bytes() == shipped


def test_negotiated_price_replaces_list_prices_of_that_accelerator_cloud_and_pricing(tmp_path):
    shipped = catalog.load().usable_prices()
    nebius = shipped.filter((pl.col("accelerator_id") == "h100-sxm") & (pl.col("cloud") == "nebius"))
    assert nebius.filter(pl.col("pricing_model") == "on-demand").height >= 1, "needs a shipped row to replace"
    path = _override(tmp_path, GOOD_HEADER + "h100-sxm,nebius,on-demand,1.20,2026-11-01,our contract\n")
    cat = catalog.load(price_overrides=path)
    summary = cat.price_summary(("on-demand",), ("nebius",)).filter(pl.col("accelerator_id") == "h100-sxm")
    assert summary["usd_per_chip_hour"].item() == 1.20 and summary["user_price"].item()  # not a median with $2.95
    assert summary["price_rows"].item() == 1
    others = cat.price_summary(("on-demand",)).filter(pl.col("accelerator_id") != "h100-sxm")
    assert others.height > 0 and not others["user_price"].any()
    # Other pricing models of that cloud keep their list prices.
    kept = cat.usable_prices().filter(
        (pl.col("accelerator_id") == "h100-sxm")
        & (pl.col("cloud") == "nebius")
        & (pl.col("pricing_model") != "on-demand")
    )
    assert kept.height == nebius.filter(pl.col("pricing_model") != "on-demand").height


def test_negotiated_price_for_one_region_leaves_the_other_regions(tmp_path):
    shipped = catalog.load().usable_prices()
    aws = shipped.filter(
        (pl.col("accelerator_id") == "h100-sxm") & (pl.col("cloud") == "aws") & (pl.col("pricing_model") == "on-demand")
    )
    region = aws["region"][0]
    assert aws["region"].n_unique() > 1, "needs a second region to keep"
    header = GOOD_HEADER.rstrip("\n") + ",region\n"
    cat = catalog.load(
        price_overrides=_override(tmp_path, header + f"h100-sxm,aws,on-demand,1.5,2026-11-01,ours,{region}\n")
    )
    rows = cat.usable_prices().filter(
        (pl.col("accelerator_id") == "h100-sxm") & (pl.col("cloud") == "aws") & (pl.col("pricing_model") == "on-demand")
    )
    assert rows.filter(pl.col("region") == region)["usd_per_chip_hour"].to_list() == [1.5]
    assert rows.filter(pl.col("region") != region).height == aws.filter(pl.col("region") != region).height


@pytest.mark.parametrize(
    "body, expected",
    [
        (GOOD_HEADER + "h100-sxm,mycloud,on-demand,-1,2026-11-01,x y z\n", "line 2, column usd_per_chip_hour"),
        (GOOD_HEADER + "h100-sxm,mycloud,on-demand,abc,2026-11-01,x y z\n", "line 2, column usd_per_chip_hour"),
        (GOOD_HEADER + "h999,mycloud,on-demand,1,2026-11-01,x y z\n", "line 2, column accelerator_id"),
        (GOOD_HEADER + "h100-sxm,mycloud,on-demand,1,2026-13-01,x y z\n", "line 2, column as_of"),
        ("accelerator_id,cloud\nh100-sxm,x\n", "missing column"),
        (GOOD_HEADER, "no rows"),
        (b"accelerator_id\n\xff\xfe\x00bad\n", "not UTF-8"),
    ],
)
def test_bad_override_names_file_row_and_column(tmp_path, body, expected):
    path = _override(tmp_path, body)
    with pytest.raises(DataError, match=expected) as err:
        catalog.load(price_overrides=path)
    assert str(path) in str(err.value)


@pytest.mark.parametrize(
    "table, line, old, new, message",
    [
        ("frameworks.csv", 3, "supported", "sorta", "column support"),
        ("accelerators.csv", 2, ",1.25e+14,", ",0,", "column bf16_flops_per_s"),
        # low <= central <= high, checked across columns
        (
            "frameworks.csv",
            3,
            ",0.90,0.60,0.99,",
            ",0.90,0.95,0.99,",
            ": fails efficiency_low <= efficiency <= efficiency_high",
        ),
        ("frameworks.csv", 3, ",6,3,12,", ",6,3,5,", ": fails port_weeks_low <= port_weeks <= port_weeks_high"),
        ("mfu_proxies.csv", 2, ",1.05,1.0,1.14,", ",1.05,1.1,1.14,", ": fails factor_low <= factor <= factor_high"),
        ("platform_ports.csv", 2, "amd,gpu,3,1,8,", "amd,gpu,3,4,8,", ": fails weeks_low <= weeks <= weeks_high"),
        ("serving_engine_defaults.csv", 4, "vllm-cuda,h100-sxm,", "vllm-cuda,h100-sxn,", ", column accelerator_id"),
        ("serving_engine_defaults.csv", 2, "trtllm,any,8192,", "trtllm,any,0,", "column max_tokens_per_step"),
        ("sustained_compute.csv", 2, "mi300x,fp16,", "mi300y,fp16,", ", column accelerator_id"),
        ("sustained_compute.csv", 3, "mi300x,bf16,", "mi300x,fp32,", "column precision"),
        # a sibling is measured against a chip's own row of the same precision
        ("sustained_compute.csv", 9, ",h100-sxm", ",h200", ", column relative_to: 'h200' has no bf16 row"),
        ("reference_runs.csv", 2, ",4194304,job_total", ",4194304,elapsed", "column chip_hours_basis"),
        ("reference_runs.csv", 2, ",4194304,job_total", ",0,job_total", "column global_batch_tokens"),
        ("reference_runs.csv", 2, ",4194304,job_total", ",4194304,", ": fails a full run with reported_chip_hours"),
        # a named architecture must exist and match the run's parameter counts
        ("reference_runs.csv", 8, ",job_total,llama3-8b", ",job_total,llama9-8b", ", column model_shape"),
        ("reference_runs.csv", 8, ",job_total,llama3-8b", ",job_total,llama3-70b", ", column params: .* model_shape"),
    ],
)
def test_bad_shipped_table_is_reported(tmp_path, table, line, old, new, message):
    data = tmp_path / "data"
    shutil.copytree(catalog.DATA_DIR, data)
    lines = (data / table).read_text().splitlines()
    assert old in lines[line - 1], "the edit must change the file, or the test proves nothing"
    lines[line - 1] = lines[line - 1].replace(old, new, 1)
    (data / table).write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=rf"{table} line {line},? ?{message}"):
        catalog.load(data)


def test_secondary_source_is_a_column_not_a_phrase(tmp_path):
    cat = catalog.load()
    summary = cat.price_summary(("on-demand", "commit-1y", "commit-3y", "capacity-block", "reserved-contract"))
    flagged = summary.filter(pl.col("price_secondary_source"))
    assert flagged.height > 0 and summary.filter(~pl.col("price_secondary_source")).height > 0
    # A user's row marked secondary, with no wording about it, is flagged; its notes do not matter.
    path = _override(
        tmp_path,
        GOOD_HEADER.rstrip("\n") + ",secondary_source\n" + "h100-sxm,mycloud,on-demand,1.5,2026-11-01,a blog,true\n",
    )
    mine = catalog.load(price_overrides=path).price_summary(("on-demand",), ("mycloud",))
    assert mine.height == 1 and mine["price_secondary_source"].item()


def test_every_price_event_supersedes_and_derives_rows():
    events = catalog.read_table(catalog.DATA_DIR / "price_events.csv", schemas.PriceEvents)
    prices = catalog.load().prices
    assert events.height > 0
    for event in events.iter_rows(named=True):
        rows = prices.filter(
            (pl.col("cloud") == event["cloud"]) & pl.col("instance_type").str.starts_with(event["instance_prefix"])
        )
        derived = rows.filter((pl.col("as_of") == event["effective"]) & ~pl.col("excluded"))
        old = rows.filter(pl.col("as_of") < event["effective"], pl.col("pricing_model") == event["pricing_model"])
        assert derived.height > 0 and old.height > 0 and old["excluded"].all()


def test_serving_engine_defaults_are_sourced_and_one_per_stack_and_accelerator():
    table = catalog.load().serving_engine_defaults
    assert table.height > 0 and table["source"].str.contains("github ").all() and table["as_of"].is_not_null().all()
    assert table.select("stack", "accelerator_id").is_unique().all()
    # every configured GPU stack has a default for any accelerator, and device-specific rows only where it differs
    assert {"trtllm", "vllm-cuda", "vllm-rocm"} <= set(table.filter(pl.col("accelerator_id") == "any")["stack"])


def test_sustained_compute_rates_are_sourced_and_the_same_die_at_more_power_holds_more():
    cat = catalog.load()
    table = cat.sustained_compute
    assert table["source"].str.contains("github ").all() and table["as_of"].is_not_null().all()
    fp8 = dict(
        zip(
            *table.filter(pl.col("precision") == "fp8").select("accelerator_id", "max_achievable_flops_per_s"),
            strict=True,
        )
    )
    peaks = dict(zip(*cat.accelerators.select("accelerator_id", "fp8_flops_per_s"), strict=True))
    # MI300X (750 W) and MI325X (1,000 W): one CDNA3 die, one datasheet peak, 1.19x the sustained matmul rate
    assert peaks["mi300x"] == peaks["mi325x"] and fp8["mi325x"] / fp8["mi300x"] == pytest.approx(1.19, abs=0.01)
    factor = dict(zip(*cat.accelerators.select("accelerator_id", "sustained_compute_factor"), strict=True))
    assert factor["mi325x"] / factor["mi300x"] == pytest.approx(1.19, abs=0.01)
    assert factor["mi355x"] == 1.0  # unmeasured: its vendor's average
    # H100 PCIe (350 W) against H100 SXM (700 W), one benchmark on both: 0.81 of SXM's fraction of peak; SXM, NVIDIA's
    # only measured chip, keeps 1, as every unmeasured NVIDIA chip
    assert factor["h100-pcie"] == pytest.approx(0.81, abs=0.01)
    assert factor["h100-sxm"] == factor["h200"] == factor["b200"] == 1.0
    sibling = table.filter(pl.col("accelerator_id") == "h100-pcie").row(0, named=True)
    reference = table.filter((pl.col("accelerator_id") == sibling["relative_to"]) & pl.col("relative_to").is_null())
    assert reference["source"].to_list() == [sibling["source"]]  # the same benchmark on both
    # H100 NVL, with no GEMM measurement: the rate its MLPerf v4.1 compute-bound 8-bit results imply against H100 SXM's
    # (median 0.847 of SXM's per unit of peak over 18 results), measured, not estimated; below the full-power part
    nvl = table.filter(pl.col("accelerator_id") == "h100-nvl").row(0, named=True)
    assert nvl["basis"] == "measured" and nvl["relative_to"] == "h100-sxm" and "MLPerf Inference v4.1" in nvl["source"]
    assert factor["h100-nvl"] == pytest.approx(0.847, abs=0.002) and factor["h100-nvl"] < 1.0


def test_gpu_memory_is_what_the_device_reports_not_the_datasheet_name():
    """A GPU's "80GB" is 80 GiB less what the driver (or GDDR's ECC) keeps: nvidia-smi prints 81,559 MiB for H100,
    7% more than 80e9 bytes and 14% more cache for a 70B model on two, the room the serving model's engine finds."""
    gpus = catalog.load().accelerators.filter(pl.col("kind") == "gpu")
    named = gpus.with_columns(named_gb=pl.col("name").str.extract(r"(\d+)GB\b").cast(pl.Float64)).drop_nulls("named_gb")
    assert named.height >= 15
    for row in named.iter_rows(named=True):
        assert row["named_gb"] * 1e9 < row["hbm_bytes"] <= row["named_gb"] * 2**30, row["accelerator_id"]
        # within 7% of the name's GiB: HBM parts 0-3% short, GDDR6 cards (L4, L40S, A10G) a sixteenth for ECC and more
        assert row["hbm_bytes"] >= row["named_gb"] * 2**30 * 0.93, row["accelerator_id"]
        assert "smi" in row["hbm_basis"] or "sysfs" in row["hbm_basis"], row["accelerator_id"]
    h100 = gpus.filter(pl.col("accelerator_id") == "h100-sxm")["hbm_bytes"].item()
    assert h100 == 81559 * 2**20
