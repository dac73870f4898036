"""Load ``data/*.csv`` into polars frames, check each against its schema, layer user price overrides.

Usage::

    from workbook import catalog
    cat = catalog.load()                                   # shipped data
    cat = catalog.load(price_overrides="my_prices.csv")    # your negotiated prices replace list prices
    cat = catalog.load(data_dir="our_tables/")             # your own copy of every table

Which tables ``load()`` reads, first match wins: the ``data_dir`` argument; the directory in the
``WORKBOOK_DATA_DIR`` environment variable; the tables shipped inside the installed package (the wheel copies
the repository's ``data/`` into ``workbook/data``); the repository's ``data/`` in a source checkout.

A bad file raises :class:`workbook.errors.DataError` whose message names the file,
the CSV line (header = line 1) and the column. Loading overrides never writes to
the shipped files.

Each file is checked once per content: a validated table is kept in memory and on disk (Arrow IPC under
:func:`workbook.cache.directory`), keyed by the file's SHA-256, the table's schema and the versions of the
schema and loader code, the package and polars. A changed file (or schema) has a new key and is checked again;
unchanged shipped tables are read back in milliseconds by every new app kernel, without running pandera.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import hashlib
import os
from pathlib import Path

import pandera.polars as pa
import polars as pl

import workbook
from workbook import cache, shipped
from workbook.catalog import schemas
from workbook.errors import DataError, InputError
from workbook.model.spec import PRESETS
from workbook.model.sustained import sustained_compute_factors
from workbook.model.units import DAYS_PER_YEAR
from workbook.present import grouped

DATA_DIR_ENV = "WORKBOOK_DATA_DIR"
DATA_DIR = shipped.path("data", "data")  # the tables in the installed package, else the checkout's data/
PRICE_KEY = ["accelerator_id", "cloud", "region", "instance_type", "pricing_model"]
OVERRIDE_KEY = ["accelerator_id", "cloud", "pricing_model"]
ANY_REGION = "any"
WHOLE_INSTANCE_BASIS = "per chip-hour of an instance rented whole"  # AWS's per-GPU rates (pricebuild)
WHOLE_NODE_BASES = (  # see pricebuild: an instance price / chips in each (after a published cut, for the third)
    "instance price / chips",
    "GPU + host VM",
    "list price x published cut factor",
    WHOLE_INSTANCE_BASIS,
)
# A TPU slice of more than one chip is whole VM hosts of 4 chips (v4 to TPU7x: Google Cloud's TPU configuration
# tables, "4-chip VM"; v5p's smallest slice 2x2x1, one full host).
TPU_HOST_CHIPS = 4


@dataclasses.dataclass(frozen=True, eq=False)  # hashed by identity (memoised defaults)
class Catalog:
    """All tables the model reads, as polars frames (already validated)."""

    kinds: pl.DataFrame
    accelerators: pl.DataFrame
    prices: pl.DataFrame
    frameworks: pl.DataFrame
    framework_switches: pl.DataFrame
    platform_ports: pl.DataFrame
    reference_runs: pl.DataFrame
    inference_runs: pl.DataFrame
    serving_engine_defaults: pl.DataFrame
    sustained_compute: pl.DataFrame  # vendor-measured sustained GEMM rates (accelerators' sustained_compute_factor)
    mfu_proxies: pl.DataFrame
    capacity: pl.DataFrame  # chips rentable without a reservation, per cloud and pricing model

    @property
    def accelerator_ids(self) -> list[str]:
        return self.accelerators["accelerator_id"].to_list()

    @property
    def prices_as_of(self) -> dt.date:
        """Newest as-of date among the prices in use."""
        return self.prices.filter(~pl.col("excluded"))["as_of"].max()

    def usable_prices(self) -> pl.DataFrame:
        """Price rows in use: flagged rows (suspect, superseded, incomplete) stay in the file, marked excluded."""
        return self.prices.filter(~pl.col("excluded"))

    def price_quotes(self, pricing: tuple[str, ...], clouds: tuple[str, ...] = ()) -> pl.DataFrame:
        """Every usable quote for these pricing models (and clouds), one row per region and instance.

        A negotiated price file has already replaced the shipped quotes it covers (:func:`layer_prices`; its rows
        have ``user_price``), so the cheapest-region choice runs over the user's prices too. ``whole_node`` tells
        whether the quote is an instance price divided by its chips (so the instance size limits which jobs it can run)
        rather than a rate published per chip-hour (commitments, neoclouds, TPU slices, overrides).
        """
        prices = self.usable_prices().filter(pl.col("pricing_model").is_in(list(pricing)))
        if clouds:
            prices = prices.filter(pl.col("cloud").is_in(list(clouds)))
        return prices.with_columns(pl.col("price_basis").is_in(WHOLE_NODE_BASES).alias("whole_node"))

    def price_summary(self, pricing: tuple[str, ...], clouds: tuple[str, ...] = ()) -> pl.DataFrame:
        """Per (accelerator, cloud, pricing model): the typical (median) USD per chip-hour, min..max over regions
        and instances, how many quotes, the newest as-of date, whether any quote is approximate or second-hand, and
        whether the price is the user's own (``user_price``: their negotiated file replaced the list prices).
        """
        return (
            self.price_quotes(pricing, clouds)
            .group_by("accelerator_id", "cloud", "pricing_model")
            .agg(
                pl.col("usd_per_chip_hour").median().alias("usd_per_chip_hour"),
                pl.col("usd_per_chip_hour").min().alias("usd_per_chip_hour_low"),
                pl.col("usd_per_chip_hour").max().alias("usd_per_chip_hour_high"),
                pl.len().alias("price_rows"),
                pl.col("as_of").max().alias("price_as_of"),
                pl.col("as_of_approx").any().alias("price_as_of_approx"),
                pl.col("secondary_source").any().alias("price_secondary_source"),
                pl.col("user_price").any().alias("user_price"),
            )
            .with_columns(pl.col("usd_per_chip_hour").alias("usd_per_chip_hour_typical"))
        )

    def cheapest_quotes(self, jobs: pl.DataFrame, pricing: tuple[str, ...], clouds: tuple[str, ...] = ()):
        """For each row of ``jobs`` (row, accelerator_id, cloud, pricing_model, chips, block_chips, kind): the
        cheapest quote of an instance that can run the job, with its region, instance and ``user_price``.

        Training runs on whole nodes: an instance priced as a whole (``whole_node``) qualifies when it holds at
        least min(job chips, the accelerator's node or slice block) chips, and is rented whole: ``rented_chips``, the
        job's chips rounded up to whole instances (12 H100s on p5.48xlarge rent 16), all billed, so the cheapest
        quote is the cheapest per chip the job uses. TPU slices are priced linearly per chip and per-chip rates
        name the full node, so they always qualify; a TPU job rents whole slices: one chip where single-chip slices
        exist (v5e, v6e) and it needs one, else whole 4-chip VM hosts (``smallest_slice_chips``,
        data/accelerators.csv). ``quote_rows`` and ``quote_typical_usd_per_chip_hour``: how many quotes can run the
        job, and their median rate.
        """
        fits = (
            ~pl.col("whole_node")
            | (pl.col("kind") == "tpu")
            | (pl.col("chips_per_instance") >= pl.min_horizontal(pl.col("chips"), pl.col("block_chips")))
        )
        quotes = self.price_quotes(pricing, clouds).select(
            "accelerator_id",
            "cloud",
            "pricing_model",
            "region",
            "instance_type",
            "chips_per_instance",
            "whole_node",
            pl.col("usd_per_chip_hour").alias("quote_usd_per_chip_hour"),
            pl.col("as_of").alias("quote_as_of"),
            pl.col("as_of_approx").alias("quote_as_of_approx"),
            pl.col("secondary_source").alias("quote_secondary_source"),
            "user_price",
        )
        tpu = pl.col("kind") == "tpu"
        # A TPU is rented as slices: one chip where a single-chip slice exists and the job needs no more on one
        # slice, else whole 4-chip VM hosts (a 3-chip fleet of one-chip replicas on TPU7x rents one host of 4).
        slice_unit = (
            pl.when(pl.col("smallest_slice_chips") >= pl.min_horizontal(pl.col("chips"), pl.col("block_chips")))
            .then(pl.col("smallest_slice_chips"))
            .otherwise(TPU_HOST_CHIPS)
        )
        unit = pl.when(pl.col("whole_node") & ~tpu).then(pl.col("chips_per_instance")).when(tpu).then(slice_unit)
        slices = self.accelerators.select("accelerator_id", "smallest_slice_chips")
        return (
            jobs.select("row", "accelerator_id", "cloud", "pricing_model", "chips", "block_chips", "kind")
            .join(quotes, on=["accelerator_id", "cloud", "pricing_model"])
            .filter(fits)
            .join(slices, on="accelerator_id", how="left")
            # the chips one rents at a time: an instance rented whole, a TPU slice's unit, else one
            .with_columns(rent_unit=unit.otherwise(1).cast(pl.Int64))
            .with_columns(
                rented_chips=((pl.col("chips") / pl.col("rent_unit")).ceil() * pl.col("rent_unit")).cast(pl.Int64)
            )
            .with_columns(
                _per_used_chip=pl.col("quote_usd_per_chip_hour") * pl.col("rented_chips") / pl.col("chips"),
                # the quotes that can run the job: how many, and their typical (median) rate
                quote_rows=pl.len().over("row"),
                quote_typical_usd_per_chip_hour=pl.col("quote_usd_per_chip_hour").median().over("row"),
            )
            .sort(  # ties (same price, same date) go to the first region and instance by name: the same every run
                "_per_used_chip",
                "quote_as_of",
                "region",
                "instance_type",
                descending=[False, True, False, False],
            )
            .group_by("row", maintain_order=True)
            .first()
            .drop(
                "accelerator_id",
                "cloud",
                "pricing_model",
                "chips",
                "block_chips",
                "kind",
                "whole_node",
                "smallest_slice_chips",
                "_per_used_chip",
            )
        )

    def priced(self, frame: pl.DataFrame, pricing: tuple[str, ...], clouds: tuple[str, ...] = ()) -> pl.DataFrame:
        """``frame`` (per option: accelerator_id, cloud, pricing_model, chips, block_chips, kind and the price
        summary's ``usd_per_chip_hour_typical`` and ``price_rows``) with its price: the cheapest region and instance
        that can run its chips (:meth:`cheapest_quotes`: ``region``, ``instance_type``, ``rented_chips``), and, where
        one can, the typical (median) quote and the count of the quotes that can (a smaller instance's quote is not
        what this option would pay). Band: the cheapest quote .. the typical one (what a buyer pays if the cheapest
        region has no room). ``price_age_years``: how much older the quote is than the newest in the data. Training
        and serving price their options with it, so a chip costs the same on both tabs."""
        frame = frame.with_row_index("row")
        quotes = self.cheapest_quotes(frame, pricing, clouds)
        price = pl.col("quote_usd_per_chip_hour")
        newest = self.usable_prices()["as_of"].max()  # the data's own date: a quote's age is against it
        return (
            frame.join(quotes, on="row", how="left")
            .drop("row")
            .with_columns(
                usd_per_chip_hour_typical=pl.coalesce("quote_typical_usd_per_chip_hour", "usd_per_chip_hour_typical"),
                price_rows=pl.coalesce("quote_rows", "price_rows"),
            )
            .with_columns(
                usd_per_chip_hour=price,
                usd_per_chip_hour_low=price,
                usd_per_chip_hour_high=pl.max_horizontal(price, pl.col("usd_per_chip_hour_typical")),
                price_as_of=pl.col("quote_as_of"),
                price_age_years=(pl.lit(newest) - pl.col("quote_as_of")).dt.total_days() / DAYS_PER_YEAR,
                price_as_of_approx=pl.col("quote_as_of_approx"),
                price_secondary_source=pl.col("quote_secondary_source"),
            )
            .drop(
                "quote_usd_per_chip_hour",
                "quote_as_of",
                "quote_as_of_approx",
                "quote_secondary_source",
                "quote_typical_usd_per_chip_hour",
                "quote_rows",
            )
        )

    def capacity_for(self, options: pl.DataFrame) -> pl.DataFrame:
        """``options`` (cloud, pricing_model, kind, ...) with ``capacity_max_chips`` and ``capacity_basis``: the most
        specific capacity row (this cloud before ``any``, this kind before ``any``); null where none applies."""
        out = options
        for cloud_any, kind_any in ((False, False), (False, True), (True, False), (True, True)):
            rows = self.capacity.filter(
                (pl.col("cloud") == "any") == cloud_any, (pl.col("kind") == "any") == kind_any
            ).select(
                *(() if cloud_any else ("cloud",)),
                "pricing_model",
                *(() if kind_any else ("kind",)),
                pl.col("max_chips").alias("_max"),
                pl.col("basis").alias("_basis"),
            )
            keys = [k for k in ("cloud", "pricing_model", "kind") if k in rows.columns]
            out = out.join(rows, on=keys, how="left")
            if "capacity_max_chips" in out.columns:
                out = out.with_columns(
                    pl.coalesce("capacity_max_chips", "_max").alias("capacity_max_chips"),
                    pl.coalesce("capacity_basis", "_basis").alias("capacity_basis"),
                ).drop("_max", "_basis")
            else:
                out = out.rename({"_max": "capacity_max_chips", "_basis": "capacity_basis"})
        return out


def over_capacity(chips: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """Whether ``chips`` on an option's cloud under its pricing model are more than that cloud rents at once without
    a reservation, and why in plain words (over the columns :meth:`Catalog.capacity_for` adds, and ``cloud`` and
    ``pricing_model``): the same ceiling for a training job and a serving fleet."""
    return chips > pl.col("capacity_max_chips"), pl.format(
        "needs {} chips; {} {} rents at most {} without a reservation ({} ceiling): use a reservation, capacity block "
        "or contract",
        grouped(chips),
        pl.col("cloud"),
        pl.col("pricing_model"),
        grouped(pl.col("capacity_max_chips")),
        pl.col("capacity_basis"),
    )


# An order to confirm with the provider before committing: above half of what its cloud rents at once without a
# reservation, or, where the pricing states no ceiling (commitments, contracts), above the smallest ceiling in
# data/capacity.csv (spot: 256 chips). The same rule for a training job and a serving fleet.
NEAR_CAPACITY = 0.5
LARGE_ORDER_CHIPS = 256


def capacity_to_confirm(chips: int, ceiling: int | None) -> bool:
    """Whether ``chips`` on one cloud under one pricing model (``ceiling``: what it rents at once without a
    reservation, None where the table states none) is an order to confirm the provider can deliver."""
    if ceiling is not None:
        return chips > NEAR_CAPACITY * ceiling
    return chips > LARGE_ORDER_CHIPS


def _line(index: int | None) -> str:
    return "header" if index is None else f"line {index + 2}"


def _cast(raw: pl.DataFrame, model: type[pa.DataFrameModel], label: str) -> pl.DataFrame:
    """Cast string columns to the schema's dtypes, reporting the first bad cell precisely."""
    schema = model.to_schema()
    expected = list(schema.columns)
    missing = [c for c in expected if c not in raw.columns]
    extra = [c for c in raw.columns if c not in expected]
    if missing:
        raise DataError(f"{label}: missing column(s) {', '.join(missing)}")
    if extra:
        raise DataError(f"{label}: unknown column(s) {', '.join(extra)}; expected {', '.join(expected)}")
    casts = []
    for name, column in schema.columns.items():
        dtype = column.dtype.type
        text = pl.col(name).str.strip_chars()
        empty = text.is_null() | (text == "")
        if dtype == pl.Boolean:
            lowered = text.str.to_lowercase()
            value = (
                pl.when(lowered.is_in(["true", "1", "yes"]))
                .then(True)
                .when(lowered.is_in(["false", "0", "no"]))
                .then(False)
                .otherwise(None)
            )
        elif dtype == pl.Date:
            value = text.str.to_date("%Y-%m-%d", strict=False)
        elif dtype == pl.String:
            value = pl.when(empty).then(None).otherwise(text)
        else:
            value = text.cast(pl.Float64, strict=False)
            if dtype.is_integer():
                value = pl.when(value == value.round(0)).then(value).otherwise(None).cast(dtype)
        casts.append(value.alias(name))
        bad = raw.with_row_index("_i").filter(~empty & value.is_null())
        if dtype != pl.String and bad.height:
            row = bad.row(0, named=True)
            raise DataError(f"{label} {_line(row['_i'])}, column {name}: {row[name]!r} is not a valid {dtype}")
    return raw.select(casts)


def _check(frame: pl.DataFrame, model: type[pa.DataFrameModel], label: str) -> pl.DataFrame:
    try:
        return model.validate(frame, lazy=True)
    except pa.errors.SchemaErrors as err:
        cases = err.failure_cases.sort("index", nulls_last=True)
        first = cases.row(0, named=True)
        more = f" (and {cases.height - 1} more problem(s))" if cases.height > 1 else ""
        value = first["failure_case"]
        if first["schema_context"] == "DataFrameSchema":  # a check across columns (e.g. low <= central <= high)
            raise DataError(f"{label} {_line(first['index'])}: fails {first['check']} ({value}){more}") from None
        what = "missing value" if value is None else f"{value!r} fails {first['check']}"
        raise DataError(f"{label} {_line(first['index'])}, column {first['column']}: {what}{more}") from None


@functools.cache
def _code_version() -> str:
    """Changes whenever what a validated table looks like could change: schemas, loader, package, polars."""
    digest = hashlib.sha256(f"{workbook.__version__}|{pl.__version__}".encode())
    for module in (schemas.__file__, __file__):
        digest.update(Path(module).read_bytes())
    return digest.hexdigest()[:16]


_VALIDATED: dict[str, pl.DataFrame] = {}  # cache key -> validated frame, for this process


def _cache_key(content: bytes, model: type[pa.DataFrameModel]) -> str:
    return f"{model.__name__}-{_code_version()}-{hashlib.sha256(content).hexdigest()[:32]}"


def _cached(key: str) -> pl.DataFrame | None:
    if key in _VALIDATED:
        return _VALIDATED[key]
    path = cache.directory() / "tables" / f"{key}.arrow"
    try:
        frame = pl.read_ipc(path.read_bytes())
    except (OSError, pl.exceptions.PolarsError):  # absent, or unreadable: validate again
        return None
    _VALIDATED[key] = frame
    return frame


def _remember(key: str, frame: pl.DataFrame) -> None:
    if len(_VALIDATED) >= 64:  # uploads add one entry each; never let a long-lived kernel grow without bound
        _VALIDATED.clear()
    _VALIDATED[key] = frame
    cache.write_atomic(cache.directory() / "tables" / f"{key}.arrow", frame.write_ipc)


def read_table(path: Path | str, model: type[pa.DataFrameModel]) -> pl.DataFrame:
    """Read one CSV file and return it typed and validated against ``model`` (checked once per file content)."""
    path = Path(path)
    label = str(path)
    if not path.is_file():
        raise DataError(f"{label}: file not found")
    content = path.read_bytes()
    key = _cache_key(content, model)
    hit = _cached(key)
    if hit is not None:
        return hit
    frame = _validate(content, model, label)
    _remember(key, frame)
    return frame


def read_text_csv(content: bytes, label: str, **options) -> pl.DataFrame:
    """CSV bytes as a frame of strings; text that is not UTF-8 or not CSV raises DataError naming the line."""
    try:
        content.decode("utf-8")
    except UnicodeDecodeError as err:
        line = content[: err.start].count(b"\n") + 1
        raise DataError(f"{label} line {line}: not UTF-8 text (byte {err.start})") from None
    try:
        return pl.read_csv(content, infer_schema=False, **options)
    except (pl.exceptions.ComputeError, pl.exceptions.NoDataError) as err:
        raise DataError(f"{label}: not a readable UTF-8 CSV file ({str(err).splitlines()[0]})") from None


def _validate(content: bytes, model: type[pa.DataFrameModel], label: str) -> pl.DataFrame:
    if not content.strip():
        raise DataError(f"{label}: the file is empty (expected a header line and rows)")
    raw = read_text_csv(content, label)
    if raw.height == 0:
        raise DataError(f"{label}: has a header but no rows")
    for name, default in schemas.OPTIONAL_DEFAULTS.get(model, {}).items():
        if name not in raw.columns:
            raw = raw.with_columns(pl.lit(None if default is None else str(default), pl.String).alias(name))
    return _check(_cast(raw, model, label), model, label)


def _unknown_ids(frame: pl.DataFrame, known: list[str], label: str, column: str = "accelerator_id") -> None:
    bad = frame.with_row_index("_i").filter(~pl.col(column).is_in(known))
    if bad.height:
        row = bad.row(0, named=True)
        raise DataError(
            f"{label} {_line(row['_i'])}, column {column}: unknown {column.removesuffix('_id')} {row[column]!r}; "
            f"known: {', '.join(known)}"
        )


def _check_sustained(frame: pl.DataFrame, known: list[str], label: str) -> None:
    """Known chips, and every sibling's ``relative_to`` a chip with a row of its own in the same precision."""
    _unknown_ids(frame, known, label)
    own = frame.filter(pl.col("relative_to").is_null()).select(relative_to="accelerator_id", precision="precision")
    siblings = frame.with_row_index("_i").filter(pl.col("relative_to").is_not_null())
    bad = siblings.join(own, on=["relative_to", "precision"], how="anti").sort("_i")
    if bad.height:
        row = bad.row(0, named=True)
        raise DataError(
            f"{label} {_line(row['_i'])}, column relative_to: {row['relative_to']!r} has no {row['precision']} row "
            f"of its own to be measured against; chips with one: {', '.join(sorted(set(own['relative_to'])))}"
        )


SHAPE_PARAMS_TOLERANCE = 0.05  # a run's parameter count and its named shape's agree within 5%


def _check_model_shapes(runs: pl.DataFrame, label: str) -> None:
    """Every ``model_shape`` names a preset whose total and active parameters match the run's (a wrong name fails)."""
    _unknown_ids(runs, list(PRESETS), label, "model_shape")
    for i, row in enumerate(runs.iter_rows(named=True)):
        preset = PRESETS.get(row["model_shape"])
        if preset is None:
            continue
        for column in ("params", "active_params"):
            if abs(row[column] / getattr(preset, column) - 1) > SHAPE_PARAMS_TOLERANCE:
                raise DataError(
                    f"{label} {_line(i)}, column {column}: {row[column]:g} does not match model_shape "
                    f"{row['model_shape']!r} ({getattr(preset, column):g}, within {SHAPE_PARAMS_TOLERANCE:.0%})"
                )


def _check_frameworks(frameworks: pl.DataFrame, kinds: pl.DataFrame, root: Path) -> None:
    """Every (framework, kind) pair has a row, and each kind's native framework is marked ``native`` there."""
    label = str(root / "frameworks.csv")
    _unknown_ids(frameworks, kinds["kind"].to_list(), label, "kind")
    pairs = pl.DataFrame({"framework": schemas.FRAMEWORKS}).join(kinds.select("kind"), how="cross")
    missing = pairs.join(frameworks, on=["framework", "kind"], how="anti")
    if missing.height:
        row = missing.row(0, named=True)
        raise DataError(f"{label}: no row for framework {row['framework']!r} on kind {row['kind']!r}")
    native = kinds.join(frameworks, left_on=["native_framework", "kind"], right_on=["framework", "kind"])
    wrong = native.filter(pl.col("support") != "native")
    if wrong.height:
        row = wrong.row(0, named=True)
        raise DataError(
            f"{label}: {row['native_framework']} on {row['kind']} must have support 'native' "
            f"(kinds.csv names it the native framework), not {row['support']!r}"
        )


@functools.cache
def shipped_palette() -> pl.DataFrame:
    """Each shipped chart family's (vendor and kind) legend label and colour: ``data/palette.csv``, and for a
    family of the shipped accelerators with no row there, its kind's ``chart_color`` from ``data/kinds.csv``
    (label: vendor and kind, "Intel NPU"), so a chip of a new kind needs no palette row to be drawn in its own
    colour."""
    palette = read_table(DATA_DIR / "palette.csv", schemas.Palette)
    kinds = read_table(DATA_DIR / "kinds.csv", schemas.Kinds)
    families = read_table(DATA_DIR / "accelerators.csv", schemas.Accelerators).select("vendor", "kind").unique()
    vendor = pl.col("vendor")
    missing = (
        families.join(palette, on=["vendor", "kind"], how="anti")
        .join(kinds, on="kind")
        .sort("vendor", "kind")
        .select(
            "vendor",
            "kind",
            label=pl.format(
                "{} {}",
                pl.when(vendor.str.len_chars() <= 3)
                .then(vendor.str.to_uppercase())
                .otherwise(vendor.str.to_titlecase()),
                pl.col("label"),
            ),
            color="chart_color",
            source=pl.lit("data/kinds.csv chart_color: the family has no row in data/palette.csv"),
            as_of="as_of",
        )
    )
    label = str(DATA_DIR / "kinds.csv")
    if missing["color"].null_count():
        kind = missing.filter(pl.col("color").is_null())["kind"][0]
        raise DataError(f"{label}: kind {kind!r} needs a chart_color (its chips have no family in palette.csv)")
    combined = pl.concat([palette, missing])
    if combined["color"].n_unique() < combined.height:
        raise DataError(f"{label}: a chart_color repeats a colour of data/palette.csv; each family needs its own")
    return combined


def layer_prices(shipped: pl.DataFrame, mine: pl.DataFrame) -> pl.DataFrame:
    """Negotiated prices replace list prices: a row of ``mine`` removes every shipped row with its accelerator,
    cloud and pricing model in its region (region ``any``: in every region of that cloud), whatever the
    instance type or date; rows for other clouds or pricing models are added. The result has a ``user_price``
    column (True for the user's rows), so cards and tables can say "your price"."""
    covered = mine.select(*OVERRIDE_KEY, pl.col("region").alias("_region")).unique()
    replaced = (
        shipped.with_row_index("_row")
        .join(covered, on=OVERRIDE_KEY)
        .filter((pl.col("_region") == ANY_REGION) | (pl.col("_region") == pl.col("region")))["_row"]
    )
    kept = shipped.with_row_index("_row").filter(~pl.col("_row").is_in(replaced.implode())).drop("_row")
    return pl.concat(
        [kept.with_columns(user_price=pl.lit(False)), mine.with_columns(user_price=pl.lit(True))], how="vertical"
    )


def data_root(data_dir: Path | str | None = None) -> Path:
    """The directory ``load`` reads: the argument, else ``$WORKBOOK_DATA_DIR``, else the shipped tables."""
    field, chosen = ("data_dir", data_dir) if data_dir is not None else (DATA_DIR_ENV, os.environ.get(DATA_DIR_ENV))
    if not chosen:
        return DATA_DIR
    root = Path(chosen).expanduser()
    if not (root / "accelerators.csv").is_file():
        raise InputError(
            field, f"must be a directory holding the workbook's tables (accelerators.csv, ...), got {root}"
        )
    return root


TABLE_FILES = (
    "kinds",
    "accelerators",
    "prices",
    "reference_runs",
    "inference_runs",
    "serving_engine_defaults",
    "sustained_compute",
    "mfu_proxies",
    "frameworks",
    "framework_switches",
    "platform_ports",
    "capacity",
)
_LOADED: dict[tuple, Catalog] = {}  # the files' paths and content digests -> the catalog, for this process


def _fingerprint(path: Path) -> tuple[str, bytes | None]:
    return str(path), hashlib.sha256(path.read_bytes()).digest() if path.is_file() else None


def load(data_dir: Path | str | None = None, price_overrides: Path | str | None = None) -> Catalog:
    """Load and validate every table; optionally layer a user's price file over the shipped prices.

    Override rows replace the shipped rows for the same accelerator, cloud and pricing model (see
    :func:`layer_prices`); the prices frame has a ``user_price`` column either way. Files with the same content
    as an earlier call give the same (frozen) catalog object, so what is computed per catalog is reused.
    """
    root = data_root(data_dir)
    files = [root / f"{name}.csv" for name in TABLE_FILES]
    key = tuple(map(_fingerprint, files if price_overrides is None else [*files, Path(price_overrides)]))
    if key not in _LOADED:
        if len(_LOADED) >= 16:  # uploads add one entry each: bounded in a long-lived kernel
            _LOADED.clear()
        _LOADED[key] = _load(root, price_overrides)
    return _LOADED[key]


def _load(root: Path, price_overrides: Path | str | None) -> Catalog:
    kinds = read_table(root / "kinds.csv", schemas.Kinds)
    accelerators = read_table(root / "accelerators.csv", schemas.Accelerators)
    _unknown_ids(accelerators, kinds["kind"].to_list(), str(root / "accelerators.csv"), "kind")
    known = accelerators["accelerator_id"].to_list()
    prices = read_table(root / "prices.csv", schemas.Prices)
    _unknown_ids(prices, known, str(root / "prices.csv"))
    if price_overrides is not None:
        extra = read_table(price_overrides, schemas.Prices)
        _unknown_ids(extra, known, str(price_overrides))
        prices = layer_prices(prices, extra)
    else:
        prices = prices.with_columns(user_price=pl.lit(False))
    runs = read_table(root / "reference_runs.csv", schemas.ReferenceRuns)
    _unknown_ids(runs, known, str(root / "reference_runs.csv"))
    _check_model_shapes(runs, str(root / "reference_runs.csv"))
    serving_runs = read_table(root / "inference_runs.csv", schemas.InferenceRuns)
    _unknown_ids(serving_runs, known, str(root / "inference_runs.csv"))
    engine_defaults = read_table(root / "serving_engine_defaults.csv", schemas.ServingEngineDefaults)
    _unknown_ids(engine_defaults, [*known, "any"], str(root / "serving_engine_defaults.csv"))
    sustained = read_table(root / "sustained_compute.csv", schemas.SustainedCompute)
    _check_sustained(sustained, known, str(root / "sustained_compute.csv"))
    accelerators = accelerators.join(sustained_compute_factors(accelerators, sustained), on="accelerator_id")
    proxies = read_table(root / "mfu_proxies.csv", schemas.MfuProxies)
    _unknown_ids(proxies, known, str(root / "mfu_proxies.csv"))
    frameworks = read_table(root / "frameworks.csv", schemas.Frameworks)
    _check_frameworks(frameworks, kinds, root)
    ports = read_table(root / "platform_ports.csv", schemas.PlatformPorts)
    _unknown_ids(ports, kinds["kind"].to_list(), str(root / "platform_ports.csv"), "kind")
    capacity = read_table(root / "capacity.csv", schemas.Capacity)
    _unknown_ids(capacity, [*kinds["kind"].to_list(), "any"], str(root / "capacity.csv"), "kind")
    return Catalog(
        kinds=kinds,
        accelerators=accelerators,
        prices=prices,
        frameworks=frameworks,
        framework_switches=read_table(root / "framework_switches.csv", schemas.FrameworkSwitches),
        platform_ports=ports,
        reference_runs=runs,
        inference_runs=serving_runs,
        serving_engine_defaults=engine_defaults,
        sustained_compute=sustained,
        mfu_proxies=proxies,
        capacity=capacity,
    )
