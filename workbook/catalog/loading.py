"""Load ``data/*.csv`` into polars frames, check each against its schema, layer user price overrides.

Usage::

    from workbook import catalog
    cat = catalog.load()                                   # shipped data
    cat = catalog.load(price_overrides="my_prices.csv")    # plus negotiated prices
    cat = catalog.load(data_dir="our_tables/")             # your own copy of every table

Which tables ``load()`` reads, first match wins: the ``data_dir`` argument; the directory in the
``WORKBOOK_DATA_DIR`` environment variable; the tables shipped inside the installed package (the wheel copies
the repository's ``data/`` into ``workbook/data``); the repository's ``data/`` in a source checkout.

A bad file raises :class:`workbook.errors.DataError` whose message names the file,
the CSV line (header = line 1) and the column. Loading overrides never writes to
the shipped files.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
from pathlib import Path

import pandera.polars as pa
import polars as pl

from workbook import shipped
from workbook.catalog import schemas
from workbook.errors import DataError, InputError

DATA_DIR_ENV = "WORKBOOK_DATA_DIR"
DATA_DIR = shipped.path("data", "data")  # the tables in the installed package, else the checkout's data/
PRICE_KEY = ["accelerator_id", "cloud", "region", "instance_type", "pricing_model"]


@dataclasses.dataclass(frozen=True, eq=False)  # hashed by identity (memoised defaults)
class Catalog:
    """All tables the model reads, as polars frames (already validated)."""

    accelerators: pl.DataFrame
    prices: pl.DataFrame
    frameworks: pl.DataFrame
    framework_switches: pl.DataFrame
    platform_ports: pl.DataFrame
    reference_runs: pl.DataFrame
    inference_runs: pl.DataFrame
    mfu_proxies: pl.DataFrame

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

    def price_summary(self, pricing: tuple[str, ...], clouds: tuple[str, ...] = ()) -> pl.DataFrame:
        """Per (accelerator, cloud, pricing model): median USD per chip-hour, min..max over regions and instances,
        how many quotes, the newest as-of date and whether any quote is approximate or second-hand."""
        prices = self.usable_prices().filter(pl.col("pricing_model").is_in(list(pricing)))
        if clouds:
            prices = prices.filter(pl.col("cloud").is_in(list(clouds)))
        return prices.group_by("accelerator_id", "cloud", "pricing_model").agg(
            pl.col("usd_per_chip_hour").median().alias("usd_per_chip_hour"),
            pl.col("usd_per_chip_hour").min().alias("usd_per_chip_hour_low"),
            pl.col("usd_per_chip_hour").max().alias("usd_per_chip_hour_high"),
            pl.len().alias("price_rows"),
            pl.col("as_of").max().alias("price_as_of"),
            pl.col("as_of_approx").any().alias("price_as_of_approx"),
            pl.col("notes").str.contains("secondary source").any().alias("price_secondary_source"),
        )


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
        what = "missing value" if value is None else f"{value!r} fails {first['check']}"
        raise DataError(f"{label} {_line(first['index'])}, column {first['column']}: {what}{more}") from None


def read_table(path: Path | str, model: type[pa.DataFrameModel]) -> pl.DataFrame:
    """Read one CSV file and return it typed and validated against ``model``."""
    path = Path(path)
    label = str(path)
    if not path.is_file():
        raise DataError(f"{label}: file not found")
    content = path.read_bytes()
    if not content.strip():
        raise DataError(f"{label}: the file is empty (expected a header line and rows)")
    try:
        content.decode("utf-8")
    except UnicodeDecodeError as err:
        line = content[: err.start].count(b"\n") + 1
        raise DataError(f"{label} line {line}: not UTF-8 text (byte {err.start})") from None
    try:
        raw = pl.read_csv(content, infer_schema=False)
    except (pl.exceptions.ComputeError, pl.exceptions.NoDataError) as err:
        raise DataError(f"{label}: not a readable UTF-8 CSV file ({str(err).splitlines()[0]})") from None
    if raw.height == 0:
        raise DataError(f"{label}: has a header but no rows")
    for name, default in schemas.OPTIONAL_DEFAULTS.get(model, {}).items():
        if name not in raw.columns:
            raw = raw.with_columns(pl.lit(None if default is None else str(default), pl.String).alias(name))
    return _check(_cast(raw, model, label), model, label)


def _unknown_ids(frame: pl.DataFrame, known: list[str], label: str) -> None:
    bad = frame.with_row_index("_i").filter(~pl.col("accelerator_id").is_in(known))
    if bad.height:
        row = bad.row(0, named=True)
        raise DataError(
            f"{label} {_line(row['_i'])}, column accelerator_id: unknown accelerator {row['accelerator_id']!r}; "
            f"known ids: {', '.join(known)}"
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


def load(data_dir: Path | str | None = None, price_overrides: Path | str | None = None) -> Catalog:
    """Load and validate every table; optionally layer a user's price file over the shipped prices.

    Override rows replace shipped rows with the same (accelerator, cloud, region, instance,
    pricing model) and add new ones; they are marked ``source`` as the user gave it.
    """
    root = data_root(data_dir)
    accelerators = read_table(root / "accelerators.csv", schemas.Accelerators)
    known = accelerators["accelerator_id"].to_list()
    prices = read_table(root / "prices.csv", schemas.Prices)
    _unknown_ids(prices, known, str(root / "prices.csv"))
    if price_overrides is not None:
        extra = read_table(price_overrides, schemas.Prices)
        _unknown_ids(extra, known, str(price_overrides))
        # An override wins over every shipped row with its key, whatever their dates.
        prices = pl.concat([prices.join(extra.select(PRICE_KEY), on=PRICE_KEY, how="anti"), extra])
    runs = read_table(root / "reference_runs.csv", schemas.ReferenceRuns)
    _unknown_ids(runs, known, str(root / "reference_runs.csv"))
    serving_runs = read_table(root / "inference_runs.csv", schemas.InferenceRuns)
    _unknown_ids(serving_runs, known, str(root / "inference_runs.csv"))
    proxies = read_table(root / "mfu_proxies.csv", schemas.MfuProxies)
    _unknown_ids(proxies, known, str(root / "mfu_proxies.csv"))
    return Catalog(
        accelerators=accelerators,
        prices=prices,
        frameworks=read_table(root / "frameworks.csv", schemas.Frameworks),
        framework_switches=read_table(root / "framework_switches.csv", schemas.FrameworkSwitches),
        platform_ports=read_table(root / "platform_ports.csv", schemas.PlatformPorts),
        reference_runs=runs,
        inference_runs=serving_runs,
        mfu_proxies=proxies,
    )
