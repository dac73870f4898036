"""Rebuild ``data/prices.csv`` from source rows: ``python -m workbook data build-prices SOURCE_DIR``.

SOURCE_DIR may hold any mix of:

* extracted rows, one ``<cloud>.csv`` per cloud (the format of the project's extracts, docs/data-sources.md),
  plus ``commitments.csv`` (committed-use, reserved, capacity-block and newer list prices);
* a SkyPilot catalog folder (``<cloud>/vms.csv``, github.com/skypilot-org/skypilot-catalog),
  the public format the extracted rows came from, so a fresh pull refreshes prices in one step.

Rules (each row keeps its source and as-of date; nothing is silently dropped, rows that
should not be used are kept with ``excluded=true`` and a ``flag`` saying why):

* price per chip-hour = instance (or slice) price / chips in it;
* GCP GPUs = GPU SKU + host VM of the same region (the catalog lists them apart); a GPU with
  no host row is kept but excluded (``gpu_only``: it understates the cost);
* TPU slices are converted to chips: v2/v3/v4/v5p names count TensorCores (2 per chip),
  v5e (v5litepod) and v6e names count chips; 700.0 placeholder rows (region not offered) are dropped;
* on-demand rows below 0.6x the highest price of the same instance elsewhere are ``suspect_low``
  (the catalog picked a discounted SKU such as DWS/flex-start, see docs/data-sources.md);
* spot above on-demand for the same instance means swapped columns or a discounted SKU:
  both rows are excluded (``spot_above_on_demand``);
* known list-price events (``data/price_events.csv``: AWS cut P4/P5 on-demand prices on 2025-06-01) turn older
  rows into ``superseded`` ones and add a derived post-event row, unless a directly quoted newer row exists;
* when the same key (accelerator, cloud, region, instance, pricing model) appears more than once,
  the newest row is used and the older ones are ``superseded``.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import polars as pl

from workbook.catalog.loading import DATA_DIR, read_table
from workbook.catalog.schemas import PriceEvents
from workbook.errors import InputError

# Accelerator names used by SkyPilot and by the extracted rows -> our ids. Variant text decides
# between SXM and PCIe parts; names absent here (H100-NVL, A100 80GB PCIe ...) are skipped.
NAME_TO_ID = {
    "a100": "a100-40gb",
    "a100-40gb": "a100-40gb",
    "a100-80gb": "a100-80gb",
    "h100": "h100-sxm",
    "h100-mega": "h100-sxm",
    "h100-sxm": "h100-sxm",
    "h200": "h200",
    "b200": "b200",
    "gb200": "gb200",
    "b300": "b300",
    "gb300": "gb300",
    "l4": "l4",
    "l40s": "l40s",
    "a10g": "a10g",
    "a10": "a10",
    "v100": "v100",
    "mi300x": "mi300x",
    "mi325x": "mi325x",
    "gh200": "gh200",
    "tpu-v3": "tpu-v3",
    "tpu-v4": "tpu-v4",
    "tpu-v5e": "tpu-v5e",
    "tpu-v5p": "tpu-v5p",
    "tpu-v6e": "tpu-v6e",
    "tpu-v7": "tpu-v7",
    "trainium": "trainium1",
    "trainium1": "trainium1",
    "trainium2": "trainium2",
}
# GCP host VM that carries n GPUs of each kind (SkyPilot's own pairing).
GCP_HOST = {
    "a100": "a2-highgpu-{n}g",
    "a100-80gb": "a2-ultragpu-{n}g",
    "h100": "a3-highgpu-{n}g",
    "h100-mega": "a3-megagpu-{n}g",
    "h200": "a3-ultragpu-{n}g",
    "b200": "a4-highgpu-{n}g",
    "l4": {1: "g2-standard-4", 2: "g2-standard-24", 4: "g2-standard-48", 8: "g2-standard-96"},
}
EXTRACT_AS_OF = dt.date(2025, 5, 1)
EXTRACT_AS_OF_NOTE = (
    "catalog commit date unknown; content dates the snapshot to Dec 2024 - May 2025 "
    "(has TPU v6e GA Dec 2024 and the pre-cut AWS p5 price, lacks p6-b200 of 2025-05-15)"
)
SUSPECT_RATIO = 0.6
PLACEHOLDER_USD = 700.0
COLUMNS = [
    "accelerator_id",
    "cloud",
    "region",
    "instance_type",
    "pricing_model",
    "usd_per_chip_hour",
    "chips_per_instance",
    "price_basis",
    "excluded",
    "flag",
    "as_of",
    "as_of_approx",
    "secondary_source",
    "source",
    "notes",
]


def _accelerator_id(name: str, variant: str = "") -> str | None:
    key = name.strip().lower()
    key = re.sub(r"^tpu-(v\d+[a-z]*).*$", r"tpu-\1", key).replace("tpu-v5litepod", "tpu-v5e")
    variant = variant.lower()
    if key in ("a100-80gb", "h100") and ("pcie" in variant or "nvl" in variant):
        return "h100-pcie" if key == "h100" and "nvl" not in variant else None
    return NAME_TO_ID.get(key)


def tpu_slice_chips(slice_name: str) -> int:
    """Chips in a TPU slice name: v2/v3/v4/v5p suffixes count TensorCores (2 per chip)."""
    match = re.match(r"^tpu-(v\d+[a-z]*)-(\d+)$", slice_name.strip().lower())
    if not match:
        raise ValueError(f"not a TPU slice name: {slice_name!r}")
    generation, count = match.group(1), int(match.group(2))
    cores_per_chip = 2 if generation in ("v2", "v3", "v4", "v5p") else 1
    return max(1, count // cores_per_chip)


def _quote(
    cloud,
    region,
    instance,
    accel_id,
    chips,
    usd,
    model,
    as_of,
    approx,
    source,
    basis,
    notes="",
    flag=None,
    secondary=False,
):
    return {
        "accelerator_id": accel_id,
        "cloud": cloud,
        "region": region or "any",
        "instance_type": instance,
        "pricing_model": model,
        "usd_per_chip_hour": float(usd) / chips,
        "chips_per_instance": int(chips),
        "price_basis": basis,
        "excluded": flag is not None,
        "flag": flag,
        "as_of": as_of,
        "as_of_approx": approx,
        "secondary_source": secondary,
        "source": source,
        "notes": notes or None,
    }


def _read(path: Path) -> pl.DataFrame:
    return pl.read_csv(path, infer_schema=False, empty_string_is_null=False)


def _from_extract(path: Path) -> list[dict]:
    rows = []
    for r in _read(path).iter_rows(named=True):
        accel = _accelerator_id(r["accelerator"], r["variant"])
        if accel is None:
            continue
        chips = int(r["accelerator_count"])
        gcp_tpu = r["accelerator"].lower().startswith("tpu")
        basis = (
            "GPU + host VM"
            if r["cloud"] == "gcp" and not gcp_tpu
            else "slice price / chips"
            if gcp_tpu
            else "instance price / chips"
        )
        flag = "gpu_only: host VM price missing, understates cost" if "GPU-ONLY" in r["notes"] else None
        source = f"{r['source_file']} @ {r['source_commit']} (extract in shared/data-sources/prices/{path.name})"
        notes = f"{r['notes']}; as-of approximate: {EXTRACT_AS_OF_NOTE}".lstrip("; ")
        common = (r["cloud"], r["region"], r["instance_type"], accel, chips)
        if r["price_usd_per_hour"]:
            rows.append(
                _quote(*common, r["price_usd_per_hour"], "on-demand", EXTRACT_AS_OF, True, source, basis, notes, flag)
            )
        if r["spot_price_usd_per_hour"]:
            rows.append(
                _quote(*common, r["spot_price_usd_per_hour"], "spot", EXTRACT_AS_OF, True, source, basis, notes, flag)
            )
    return rows


def _from_commitments(path: Path) -> list[dict]:
    rows = []
    for r in _read(path).iter_rows(named=True):
        accel = _accelerator_id(r["accelerator"].replace("-Mega", "-MEGA"))
        if accel is None or "skypilot-catalog" in r["source"]:
            continue  # mixed-GPU market rows; catalog rows already come from the per-cloud extracts
        approx = len(r["as_of"]) != 10  # "unknown" or a month ("2026-10")
        # Undated AWS Capacity Block rows come from a page that announced its next update for 2025-01-01;
        # month-only dates are read as the first of the month.
        as_of = (
            dt.date(2024, 12, 31)
            if r["as_of"] == "unknown"
            else dt.date.fromisoformat(r["as_of"] if not approx else r["as_of"] + "-01")
        )
        flag = "gpu_only: host VM price missing, understates cost" if "host VM excluded" in r["notes"] else None
        secondary = "secondary figure" in r["notes"]  # how the extract marks second-hand quotes
        if secondary:
            r["notes"] += " (secondary source, not the vendor's price list)"
        rows.append(
            _quote(
                r["cloud"],
                r["region"],
                r["instance_or_sku"],
                accel,
                1,
                r["usd_per_chip_hour"],
                r["pricing_model"],
                as_of,
                approx,
                r["source"],
                "per chip-hour as published",
                r["notes"],
                flag,
                secondary,
            )
        )
    return rows


def _skypilot_rows(path: Path, cloud: str, as_of: dt.date) -> list[dict]:
    """One cloud's SkyPilot ``vms.csv``: min spot over zones, GCP GPU + host, TPU slices per chip."""
    frame = _read(path)
    source = f"skypilot-catalog {cloud}/vms.csv (user-supplied folder {path.parent.parent})"
    per_region = (
        frame.with_columns(
            pl.col("Price").cast(pl.Float64, strict=False), pl.col("SpotPrice").cast(pl.Float64, strict=False)
        )
        .group_by("InstanceType", "AcceleratorName", "AcceleratorCount", "Region")
        .agg(pl.col("Price").max(), pl.col("SpotPrice").min())
    )
    hosts = {
        (r["InstanceType"], r["Region"]): r
        for r in per_region.filter(pl.col("AcceleratorName") == "").iter_rows(named=True)
    }
    rows = []
    for r in per_region.filter(pl.col("AcceleratorName") != "").iter_rows(named=True):
        name = r["AcceleratorName"]
        if r["Price"] is None or r["Price"] >= PLACEHOLDER_USD and name.lower().startswith("tpu"):
            continue
        accel = _accelerator_id(name)
        if accel is None:
            continue
        instance, basis, flag, price, spot = (
            r["InstanceType"],
            "instance price / chips",
            None,
            r["Price"],
            r["SpotPrice"],
        )
        if name.lower().startswith("tpu"):
            chips, instance, basis = tpu_slice_chips(name), name, "slice price / chips"
        else:
            chips = int(float(r["AcceleratorCount"]))
            if cloud == "gcp" and not instance:
                pattern = GCP_HOST.get(name.lower(), "")
                instance = pattern.get(chips, "") if isinstance(pattern, dict) else pattern.format(n=chips)
                host = hosts.get((instance, r["Region"]))
                if host is None:
                    flag, instance = "gpu_only: host VM price missing, understates cost", instance or f"{name} x{chips}"
                else:
                    basis = "GPU + host VM"
                    price += host["Price"]
                    spot = None if spot is None or host["SpotPrice"] is None else spot + host["SpotPrice"]
        common = (cloud, r["Region"], instance, accel, chips)
        rows.append(_quote(*common, price, "on-demand", as_of, False, source, basis, None, flag))
        if spot:
            rows.append(_quote(*common, spot, "spot", as_of, False, source, basis, "min spot over zones", flag))
    return rows


def _flag(frame: pl.DataFrame, condition: pl.Expr, flag: str) -> pl.DataFrame:
    """Mark rows matching ``condition`` excluded with ``flag`` (rows already flagged keep their first reason)."""
    hit = condition.fill_null(False) & ~pl.col("excluded")
    return frame.with_columns(
        pl.when(hit).then(pl.lit(flag)).otherwise(pl.col("flag")).alias("flag"),
        (pl.col("excluded") | hit).alias("excluded"),
    )


def _apply_rules(frame: pl.DataFrame) -> pl.DataFrame:
    instance = ["accelerator_id", "cloud", "instance_type", "pricing_model"]
    frame = _flag(
        frame,
        (pl.col("pricing_model") == "on-demand")
        & (
            pl.col("usd_per_chip_hour")
            < SUSPECT_RATIO * pl.col("usd_per_chip_hour").filter(~pl.col("excluded")).max().over(instance)
        ),
        f"suspect_low: below {SUSPECT_RATIO}x the same instance's price elsewhere (discounted SKU "
        "picked by the catalog?)",
    )
    same = ["accelerator_id", "cloud", "region", "instance_type", "as_of"]
    pair = frame.group_by(same).agg(
        pl.col("usd_per_chip_hour").filter(pl.col("pricing_model") == "on-demand").first().alias("_od"),
        pl.col("usd_per_chip_hour").filter(pl.col("pricing_model") == "spot").first().alias("_spot"),
    )
    frame = frame.join(pair, on=same, how="left")
    frame = _flag(
        frame,
        pl.col("pricing_model").is_in(["on-demand", "spot"]) & (pl.col("_spot") > pl.col("_od")),
        "spot_above_on_demand: columns look swapped or a discounted SKU",
    ).drop("_od", "_spot")
    for cloud, prefix, model, day, factor, source, _ in read_table(
        DATA_DIR / "price_events.csv", PriceEvents
    ).iter_rows():
        stale = (
            (pl.col("cloud") == cloud)
            & pl.col("instance_type").str.starts_with(prefix)
            & (pl.col("pricing_model") == model)
            & (pl.col("as_of") < day)
        )
        derived = frame.filter(stale & ~pl.col("excluded")).with_columns(
            pl.col("usd_per_chip_hour") * factor,
            pl.lit(day).alias("as_of"),
            pl.lit(False).alias("as_of_approx"),
            pl.lit("list price x published cut factor").alias("price_basis"),
            pl.lit(f"{source}; applied to: ").add(pl.col("source")).alias("source"),
            pl.lit(f"derived: pre-{day} list price x {factor}").alias("notes"),
        )
        frame = pl.concat([_flag(frame, stale, f"superseded: list price changed on {day}"), derived])
    key = ["accelerator_id", "cloud", "region", "instance_type", "pricing_model"]
    newest = pl.col("as_of") == pl.col("as_of").filter(~pl.col("excluded")).max().over(key)
    frame = _flag(frame, ~newest, "superseded: a newer row has the same key")
    # Identical per-chip quotes for several sizes of one product: keep the largest instance (a training node).
    best = pl.col("chips_per_instance") == pl.col("chips_per_instance").max().over(
        ["accelerator_id", "cloud", "region", "pricing_model", "excluded", "as_of", "usd_per_chip_hour"]
    )
    return frame.filter(best).unique(subset=key + ["as_of"], keep="first", maintain_order=True)


def _rows(root: Path, as_of: dt.date | None) -> list[dict]:
    if not root.is_dir():
        raise InputError("SOURCE_DIR", f"{root} is not a folder")
    rows: list[dict] = []
    for path in sorted(root.glob("*.csv")):
        header = path.open(encoding="utf8").readline()
        if path.name == "commitments.csv":
            rows += _from_commitments(path)
        elif header.startswith("cloud,region,instance_type,accelerator"):
            rows += _from_extract(path)
    for path in sorted(root.glob("*/vms.csv")):
        rows += _skypilot_rows(path, path.parent.name, as_of or dt.date.today())
    if not rows:
        raise InputError(
            "SOURCE_DIR",
            f"no price files found in {root} (expected <cloud>.csv extracts, "
            "commitments.csv, or SkyPilot <cloud>/vms.csv folders)",
        )
    return rows


def build(*source_dirs: Path | str, as_of: dt.date | None = None) -> pl.DataFrame:
    """Read every recognised source file under each of ``source_dirs`` and return the cleaned price table.

    The shipped table is built from ``../shared/data-sources/prices`` plus this repository's
    ``data/price-sources`` (rows sourced after the shared extract, same ``commitments.csv`` format).
    """
    rows = [row for root in source_dirs for row in _rows(Path(root), as_of)]
    frame = pl.DataFrame(rows, schema_overrides={"as_of": pl.Date, "flag": pl.String, "notes": pl.String})
    return (
        _apply_rules(frame)
        .select(COLUMNS)
        .sort(
            "accelerator_id",
            "cloud",
            "pricing_model",
            "region",
            "as_of",
            "instance_type",
            "usd_per_chip_hour",
            "excluded",
        )
    )


def write(frame: pl.DataFrame, out: Path | str) -> None:
    frame.with_columns(pl.col("usd_per_chip_hour").round(5)).write_csv(out)
