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

A rebuild is a transaction (:func:`rebuild`): every source cell is checked as it is read (a bad one is
reported with its file, CSV line and column), the built table is checked against the same schema the
loader uses (a failing row is traced back to the source line it came from), written to a temporary
file that is read back with the loader, and only then put in place of the previous file, which is kept
as ``prices.csv.bak``. A rebuild that would drop more than ``MAX_DROP_SHARE`` of the current rows
(a partial or wrong folder) is refused unless forced.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import re
from pathlib import Path

import pandera.polars as pa
import polars as pl

from workbook import files
from workbook.catalog import loading, schemas
from workbook.errors import DataError, InputError

# Accelerator names used by SkyPilot and by the extracted rows -> our ids. Variant text decides
# between SXM, PCIe and NVL parts; names absent here (A100 80GB PCIe ...) are skipped.
NAME_TO_ID = {
    "a100": "a100-40gb",
    "a100-40gb": "a100-40gb",
    "a100-80gb": "a100-80gb",
    "h100": "h100-sxm",
    "h100-mega": "h100-sxm",
    "h100-sxm": "h100-sxm",
    "h100-nvl": "h100-nvl",
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
# A rebuild may replace prices, but one that loses more than this share of the current file's keys (accelerator,
# cloud, region, instance, pricing model) is far more likely a partial or wrong folder than a market change.
MAX_DROP_SHARE = 0.25
# Columns each source format must have (others are ignored).
EXTRACT_COLUMNS = (
    "cloud",
    "region",
    "instance_type",
    "accelerator",
    "variant",
    "accelerator_count",
    "price_usd_per_hour",
    "spot_price_usd_per_hour",
    "notes",
    "source_file",
    "source_commit",
)
COMMITMENT_COLUMNS = (
    "cloud",
    "accelerator",
    "instance_or_sku",
    "region",
    "pricing_model",
    "usd_per_chip_hour",
    "as_of",
    "source",
    "notes",
)
SKYPILOT_COLUMNS = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Region", "Price", "SpotPrice")
# Output column -> the source column it comes from, per format (to trace a failing built row to its cell).
ORIGIN_COLUMNS = {
    "extract": {"accelerator_id": "accelerator", "chips_per_instance": "accelerator_count", "source": "source_file"},
    "commitments": {"accelerator_id": "accelerator", "instance_type": "instance_or_sku"},
    "skypilot": {
        "accelerator_id": "AcceleratorName",
        "chips_per_instance": "AcceleratorCount",
        "region": "Region",
        "instance_type": "InstanceType",
        "cloud": "folder name",
    },
}
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
    if key == "h100" and "nvl" in variant:
        return "h100-nvl"
    if key in ("a100-80gb", "h100") and ("pcie" in variant or "nvl" in variant):
        return "h100-pcie" if key == "h100" else None
    return NAME_TO_ID.get(key)


def tpu_slice_chips(slice_name: str) -> int:
    """Chips in a TPU slice name: v2/v3/v4/v5p suffixes count TensorCores (2 per chip)."""
    match = re.match(r"^tpu-(v\d+[a-z]*)-(\d+)$", slice_name.strip().lower())
    if not match:
        raise ValueError(f"not a TPU slice name: {slice_name!r}")
    generation, count = match.group(1), int(match.group(2))
    cores_per_chip = 2 if generation in ("v2", "v3", "v4", "v5p") else 1
    if count < cores_per_chip or count % cores_per_chip:
        raise ValueError(
            f"not a TPU slice name: {slice_name!r} (a {generation} slice counts {cores_per_chip} per chip)"
        )
    return count // cores_per_chip


@dataclasses.dataclass(frozen=True)
class Origin:
    """Where a built row comes from: its source file and CSV line, the format, and the column holding its price."""

    path: Path
    index: int  # 0-based data row; the CSV line is index + 2 (header = line 1)
    kind: str  # a key of ORIGIN_COLUMNS
    price_column: str

    def cell(self, column: str) -> str:
        return f"{self.path} line {self.index + 2}, column {column}"


def _quote(
    origin,
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
        "_origin": origin,  # replaced by its index in the row list when the frame is built
    }


def _read(path: Path, required: tuple[str, ...] = ()) -> pl.DataFrame:
    """A source CSV as strings (missing cells ""); unreadable files and missing columns raise DataError."""
    if not path.is_file():
        raise DataError(f"{path}: is not a file (a folder or a special file cannot be a price source)")
    try:
        content = path.read_bytes()
    except OSError as err:
        raise DataError(f"{path}: cannot be read ({err.strerror or err})") from None
    frame = loading.read_text_csv(content, str(path), empty_string_is_null=False)
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise DataError(f"{path}: missing column(s) {', '.join(missing)}")
    return frame.with_columns(pl.all().fill_null(""))


def _number(origin: Origin, column: str, text: str, integer: bool = False) -> float:
    """A source cell as a positive finite number (a whole one if ``integer``), else DataError naming the cell."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0 or (integer and value != int(value)):
        kind = "a whole number of at least 1" if integer else "a positive number"
        raise DataError(f"{origin.cell(column)}: {text!r} is not {kind}")
    return value


def _from_extract(path: Path) -> list[dict]:
    rows = []
    for index, r in enumerate(_read(path, EXTRACT_COLUMNS).iter_rows(named=True)):
        accel = _accelerator_id(r["accelerator"], r["variant"])
        if accel is None:
            continue
        chips = int(_number(Origin(path, index, "extract", ""), "accelerator_count", r["accelerator_count"], True))
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
        for column, model in (("price_usd_per_hour", "on-demand"), ("spot_price_usd_per_hour", "spot")):
            if r[column].strip():
                origin = Origin(path, index, "extract", column)
                usd = _number(origin, column, r[column])
                rows.append(_quote(origin, *common, usd, model, EXTRACT_AS_OF, True, source, basis, notes, flag))
    return rows


def _as_of(origin: Origin, text: str) -> tuple[dt.date, bool]:
    """(date, approximate): ``YYYY-MM-DD``; ``YYYY-MM`` read as the first of the month; ``unknown`` for undated AWS
    Capacity Block rows, which come from a page that announced its next update for 2025-01-01."""
    if text == "unknown":
        return dt.date(2024, 12, 31), True
    try:
        return (dt.date.fromisoformat(text), False) if len(text) == 10 else (dt.date.fromisoformat(text + "-01"), True)
    except ValueError:
        raise DataError(f"{origin.cell('as_of')}: {text!r} is not a date (YYYY-MM-DD, YYYY-MM or unknown)") from None


def _from_commitments(path: Path) -> list[dict]:
    rows = []
    for index, r in enumerate(_read(path, COMMITMENT_COLUMNS).iter_rows(named=True)):
        accel = _accelerator_id(r["accelerator"].replace("-Mega", "-MEGA"))
        if accel is None or "skypilot-catalog" in r["source"]:
            continue  # mixed-GPU market rows; catalog rows already come from the per-cloud extracts
        origin = Origin(path, index, "commitments", "usd_per_chip_hour")
        as_of, approx = _as_of(origin, r["as_of"])
        usd = _number(origin, "usd_per_chip_hour", r["usd_per_chip_hour"])
        flag = "gpu_only: host VM price missing, understates cost" if "host VM excluded" in r["notes"] else None
        secondary = "secondary figure" in r["notes"]  # how the extract marks second-hand quotes
        if secondary:
            r["notes"] += " (secondary source, not the vendor's price list)"
        rows.append(
            _quote(
                origin,
                r["cloud"],
                r["region"],
                r["instance_or_sku"],
                accel,
                1,
                usd,
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


def _checked_skypilot(path: Path) -> pl.DataFrame:
    """``vms.csv`` with every price a positive number (or empty) and accelerator counts whole, else DataError."""
    frame = _read(path, SKYPILOT_COLUMNS).with_row_index("_i")
    for r in frame.iter_rows(named=True):
        for column in ("Price", "SpotPrice"):
            if r[column].strip():
                _number(Origin(path, r["_i"], "skypilot", column), column, r[column])
        if r["AcceleratorName"]:
            _number(Origin(path, r["_i"], "skypilot", ""), "AcceleratorCount", r["AcceleratorCount"], True)
    return frame.with_columns(
        pl.col("Price").cast(pl.Float64, strict=False), pl.col("SpotPrice").cast(pl.Float64, strict=False)
    )


def _skypilot_rows(path: Path, cloud: str, as_of: dt.date) -> list[dict]:
    """One cloud's SkyPilot ``vms.csv``: min spot over zones, GCP GPU + host, TPU slices per chip."""
    if not re.match(schemas.SLUG, cloud):
        raise DataError(f"{path}: folder name {cloud!r} is not a cloud id (lowercase letters, digits, '.' and '-')")
    source = f"skypilot-catalog {cloud}/vms.csv (user-supplied folder {path.parent.parent})"
    per_region = (
        _checked_skypilot(path)
        .group_by("InstanceType", "AcceleratorName", "AcceleratorCount", "Region")
        .agg(
            pl.col("Price").max(),
            pl.col("SpotPrice").min(),
            pl.col("_i").filter(pl.col("Price") == pl.col("Price").max()).first().alias("_price_i"),
            pl.col("_i").filter(pl.col("SpotPrice") == pl.col("SpotPrice").min()).first().alias("_spot_i"),
        )
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
        origin = Origin(path, r["_price_i"], "skypilot", "Price")
        instance, basis, flag, price, spot = (
            r["InstanceType"],
            "instance price / chips",
            None,
            r["Price"],
            r["SpotPrice"],
        )
        if name.lower().startswith("tpu"):
            try:
                chips, instance, basis = tpu_slice_chips(name), name, "slice price / chips"
            except ValueError as err:
                raise DataError(f"{origin.cell('AcceleratorName')}: {err}") from None
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
        rows.append(_quote(origin, *common, price, "on-demand", as_of, False, source, basis, None, flag))
        if spot:
            spot_origin = Origin(path, r["_spot_i"], "skypilot", "SpotPrice")
            rows.append(
                _quote(spot_origin, *common, spot, "spot", as_of, False, source, basis, "min spot over zones", flag)
            )
    return rows


def _flag(frame: pl.DataFrame, condition: pl.Expr, flag: str) -> pl.DataFrame:
    """Mark rows matching ``condition`` excluded with ``flag`` (rows already flagged keep their first reason)."""
    hit = condition.fill_null(False) & ~pl.col("excluded")
    return frame.with_columns(
        pl.when(hit).then(pl.lit(flag)).otherwise(pl.col("flag")).alias("flag"),
        (pl.col("excluded") | hit).alias("excluded"),
    )


# How an instance's name states its GPUs: "u-p6e-gb200x72 (72 GPUs)", "NVIDIA HGX H100 (8 GPU)" (CoreWeave), "8x NVIDIA
# H100 SXM" (Lambda), "a3-highgpu-8g" (GCP), "BM.GPU.MI300X.8" (Oracle)
AZURE_ND96 = "Standard_ND96"  # Azure's ND96 sizes carry 8 GPUs (ND96asr_v4: A100, ND96isr_H100_v5, ND96isr_MI300X_v5)
NAMED_CHIPS = (r"\((\d+) (?:GPUs?|chips)\)", r"^(\d+)x ", r"-(\d+)g$", r"^BM\.GPU\..*\.(\d+)$")


def _whole_instances(frame: pl.DataFrame) -> pl.DataFrame:
    """A rate published per GPU-hour for a named multi-GPU instance is a share of an instance rented whole
    (:data:`workbook.catalog.loading.WHOLE_INSTANCE_BASIS`). AWS sells instances whole under every pricing model: a
    Capacity Block reserves instances (up to 64 per block) or whole UltraServers (u-p6e-gb200x72: 72 GPUs joined by
    NVLink), never single GPUs (EC2 User Guide, 'Capacity Blocks for ML'; EC2 API reference, CapacityBlock), and
    savings plans and reserved instances cover instances; so do the other clouds' named nodes (CoreWeave's HGX nodes,
    Lambda's 8x, Azure's ND96, GCP's -8g machine types, Oracle's bare metal). Its chips are those the extracts give the
    same instance, else those its name states (:data:`NAMED_CHIPS`), else, on AWS, the accelerator's node
    (``block_chips``: p6-b200's 8). A rate of no named instance (hyperstack's "NVIDIA H100 SXM", a TPU's "(per chip)")
    stays per chip."""
    known = (
        frame.filter(pl.col("price_basis") != "per chip-hour as published")
        .group_by("cloud", "instance_type")
        .agg(pl.col("chips_per_instance").max().alias("_chips"))
    )
    nodes = loading.read_table(loading.DATA_DIR / "accelerators.csv", schemas.Accelerators).select(
        "accelerator_id", pl.col("block_chips").alias("_node")
    )
    named = pl.coalesce(
        *(pl.col("instance_type").str.extract(pattern).cast(pl.Int64) for pattern in NAMED_CHIPS),
        pl.when(pl.col("instance_type").str.starts_with(AZURE_ND96)).then(8),
    )
    chips = pl.coalesce(pl.col("_chips"), named, pl.when(pl.col("cloud") == "aws").then(pl.col("_node")))
    whole = (pl.col("price_basis") == "per chip-hour as published") & chips.is_not_null()
    return (
        frame.join(known, on=["cloud", "instance_type"], how="left")
        .join(nodes, on="accelerator_id", how="left")
        .with_columns(
            pl.when(whole).then(chips).otherwise(pl.col("chips_per_instance")).alias("chips_per_instance"),
            pl.when(whole)
            .then(pl.lit(loading.WHOLE_INSTANCE_BASIS))
            .otherwise(pl.col("price_basis"))
            .alias("price_basis"),
        )
        .drop("_chips", "_node")
    )


def _apply_rules(frame: pl.DataFrame) -> pl.DataFrame:
    frame = _whole_instances(frame)
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
    events = loading.read_table(loading.DATA_DIR / "price_events.csv", schemas.PriceEvents)
    for cloud, prefix, model, day, factor, source, _ in events.iter_rows():
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


def _sources(root: Path) -> tuple[list[tuple[str, Path]], list[str]]:
    """(format, path) of every price source under ``root``, and the names of CSV files that are not one."""
    found, skipped = [], []
    for path in sorted(root.glob("*.csv")):
        if path.name == "commitments.csv":
            found.append(("commitments", path))
        elif path.is_file() and not {"instance_type", "price_usd_per_hour"} & set(_read(path).columns):
            skipped.append(path.name)  # e.g. summary_per_accelerator.csv: a summary, not price rows
        else:
            found.append(("extract", path))
    found += [("skypilot", path) for path in sorted(root.glob("*/vms.csv"))]
    return found, skipped


def _check_built(frame: pl.DataFrame, origins: list[Origin]) -> None:
    """Validate the built rows with the loader's schema; a failure names the source cell the row came from."""
    try:
        schemas.Prices.validate(frame.select(COLUMNS), lazy=True)
    except pa.errors.SchemaErrors as err:
        cases = err.failure_cases.sort("index", nulls_last=True)
        first = cases.row(0, named=True)
        if first["index"] is None:
            raise DataError(f"built prices: column {first['column']} fails {first['check']}") from None
        row = frame.row(first["index"], named=True)
        origin = origins[row["_origin"]]
        column = first["column"]
        source_column = (
            origin.price_column if column == "usd_per_chip_hour" else ORIGIN_COLUMNS[origin.kind].get(column, column)
        )
        raise DataError(
            f"{origin.cell(source_column)}: gives {column} = {row[column]!r}, which fails the prices schema "
            f"({first['check']})"
        ) from None


def build(*source_dirs: Path | str, as_of: dt.date | None = None) -> pl.DataFrame:
    """Read every recognised source file under each of ``source_dirs`` and return the cleaned, schema-checked
    price table. The shipped table is built from the shared extracts plus this repository's ``data/price-sources``
    (rows sourced after the extract, in the ``commitments.csv`` format).

    A malformed source raises :class:`DataError` naming its file, CSV line and column."""
    return _build([Path(root) for root in source_dirs], as_of)[0]


def _build(roots: list[Path], as_of: dt.date | None) -> tuple[pl.DataFrame, list[str]]:
    rows: list[dict] = []
    skipped: list[str] = []
    for root in roots:
        found, unread = _read_root(root, as_of)
        rows += found
        skipped += unread
    origins = [row["_origin"] for row in rows]
    frame = pl.DataFrame(rows, schema_overrides={"as_of": pl.Date, "flag": pl.String, "notes": pl.String})
    frame = _apply_rules(frame.with_columns(_origin=pl.int_range(pl.len())))
    sort = ["accelerator_id", "cloud", "pricing_model", "region", "as_of", "instance_type", "usd_per_chip_hour"]
    frame = frame.sort(*sort, "excluded")
    _check_built(frame, origins)
    return frame.select(COLUMNS), skipped


def _read_root(root: Path, as_of: dt.date | None) -> tuple[list[dict], list[str]]:
    """The rows of every recognised source file under ``root`` and the names of the files it skipped."""
    if not root.is_dir():
        raise InputError("SOURCE_DIR", f"{root} is not a folder")
    sources, skipped = _sources(root)
    rows: list[dict] = []
    for kind, path in sources:
        if kind == "commitments":
            rows += _from_commitments(path)
        elif kind == "extract":
            rows += _from_extract(path)
        else:
            rows += _skypilot_rows(path, path.parent.name, as_of or dt.date.today())
    if not rows:
        raise InputError(
            "SOURCE_DIR",
            f"no price rows found in {root} (expected <cloud>.csv extracts, "
            "commitments.csv, or SkyPilot <cloud>/vms.csv folders)",
        )
    return rows, skipped


def write(frame: pl.DataFrame, out: Path | str) -> None:
    frame.with_columns(pl.col("usd_per_chip_hour").round(5)).write_csv(out)


@dataclasses.dataclass(frozen=True)
class Rebuild:
    """What :func:`rebuild` did: the new table, the current rows it replaced without a same-key row, the files
    it did not read, and where the previous file was kept."""

    frame: pl.DataFrame
    dropped_rows: int
    previous_rows: int
    skipped: list[str]
    backup: Path | None


def _current(out: Path) -> pl.DataFrame | None:
    """The file about to be replaced, if it is there and loads (a broken one has nothing to lose)."""
    try:
        return loading.read_table(out, schemas.Prices) if out.is_file() else None
    except DataError:
        return None


def rebuild(
    source_dirs: list[Path | str], out: Path | str, as_of: dt.date | None = None, force: bool = False
) -> Rebuild:
    """Build, validate and atomically replace ``out``; the previous file is kept as ``out + ".bak"``.

    Refused (nothing written) when a source is malformed, when the written file does not load with the
    loader's schema, or when more than ``MAX_DROP_SHARE`` of the current rows' keys would disappear and
    ``force`` is false."""
    out = files.check_target(out, "--out")
    frame, skipped = _build([Path(root) for root in source_dirs], as_of)
    current = _current(out)
    existed = out.is_file()
    dropped = 0 if current is None else current.join(frame, on=loading.PRICE_KEY, how="anti").height
    if current is not None and dropped > MAX_DROP_SHARE * current.height and not force:
        raise InputError(
            "--force",
            f"this rebuild would drop {dropped} of the {current.height} rows in {out} (more than "
            f"{MAX_DROP_SHARE:.0%}); check SOURCE_DIR, or pass --force to replace them (a backup is kept)",
        )
    with files.replacing(out, "--out", backup=True) as tmp:
        write(frame, tmp)
        try:
            written = loading.read_table(tmp, schemas.Prices)
            known = loading.read_table(loading.DATA_DIR / "accelerators.csv", schemas.Accelerators)
            loading._unknown_ids(written, known["accelerator_id"].to_list(), str(tmp))
        except DataError as err:
            raise DataError(
                f"{out}: the rebuilt file would not load ({str(err).replace(str(tmp), 'new file')})"
            ) from None
    backup = out.with_name(out.name + files.BACKUP_SUFFIX) if existed else None
    return Rebuild(frame, dropped, 0 if current is None else current.height, skipped, backup)
