"""Fit the MFU and goodput defaults on the published runs in ``data/reference_runs.csv``.

Method (simple on purpose, no per-run knobs):

1. **Base MFU per (accelerator, precision)** from throughput benchmarks (short, steady-state runs)
   and from full runs that report a measured MFU: MFU is recomputed from tokens/s per chip with
   this package's FLOPs convention where tokens/s is published, otherwise the reported MFU is used;
   each point is divided by the scale efficiency at its chip count and by its framework's efficiency,
   giving single-domain, native-stack MFU. Base = median; range = min..max of the points (+-15%
   around a single point).
2. **Accelerators without runs** take a documented proxy (``data/mfu_proxies.csv``): another chip's
   base x a factor with a range and a reason.
3. **FP8 / INT8**: where a chip has no low-precision points, its BF16 base x the median ratio of
   paired runs (same chip, model and chip count in both precisions; MFU against each precision's peak).
4. **Mixture of experts**: base MFU is fitted on dense models only; an MoE run reaches a fraction of it
   (all-to-all traffic, expert imbalance) = median over MoE benchmark points of their MFU / the dense
   base of the same chip. MFU counts active parameters.
5. **Chips with neither runs nor a proxy** (e.g. a chip a user adds) get the median base of all
   calibrated chips, with the min..max of those bases as its range.
6. **Goodput** (end-to-end efficiency of a real run vs the benchmark rate: restarts, evaluation,
   checkpoints, stragglers, less tuned production configs) = median over full runs of
   predicted chip-hours at base MFU / reported chip-hours; range = interquartile.
"""

from __future__ import annotations

import dataclasses

import polars as pl

from workbook.catalog import Catalog
from workbook.catalog.schemas import PRECISIONS
from workbook.model.flops import flops_per_token
from workbook.model.spec import ModelSpec
from workbook.model.throughput import scale_efficiency
from workbook.model.units import PEAK_COLUMN

SINGLE_POINT_SPREAD = 0.15
# Where a base MFU comes from: published runs of the chip, a documented proxy chip, the median of all chips, or
# the chip's BF16 base x the paired-run low-precision ratio. Column ``basis_kind`` of ``Calibration.mfu``.
BASIS_KIND = pl.Enum(["measured", "proxy", "fallback", "derived"])


@dataclasses.dataclass(frozen=True, eq=False)
class Calibration:
    """Fitted defaults: ``mfu`` has one row per (accelerator_id, precision) with low/high and basis."""

    mfu: pl.DataFrame
    moe_efficiency: float
    goodput: float
    goodput_low: float
    goodput_high: float
    low_precision_ratio: float | None
    points: pl.DataFrame  # the benchmark points used, for display
    full_runs: pl.DataFrame  # the full runs used for goodput, with their ratios


def _shape(row: dict) -> ModelSpec:
    spec = ModelSpec.from_params(row["params"], row["active_params"], seq_len=row["seq_len"] or 2048)
    if row["n_layers"] and row["attention_dim"]:
        return dataclasses.replace(spec, n_layers=row["n_layers"], attention_dim=row["attention_dim"])
    return spec


def _with_flops_per_token(runs: pl.DataFrame) -> pl.DataFrame:
    values = []
    for row in runs.iter_rows(named=True):
        spec = _shape(row)
        values.append(flops_per_token(spec.active_params, spec.n_layers, spec.attention_dim, spec.seq_len))
    return runs.with_columns(pl.Series("flops_per_token", values, dtype=pl.Float64))


def _peak() -> pl.Expr:
    """Dense peak of each run's precision."""
    peak = pl.lit(None, pl.Float64)
    for precision, column in PEAK_COLUMN.items():
        peak = pl.when(pl.col("precision") == precision).then(pl.col(column)).otherwise(peak)
    return peak


def _scale() -> pl.Expr:
    """Scale efficiency at each run's chip count: the same law the prediction uses (model/throughput.py)."""
    chips = pl.col("chips").fill_null(pl.col("scaleup_domain_chips")).cast(pl.Float64)
    return scale_efficiency(chips, pl.col("scaleup_domain_chips"), pl.col("scale_loss_per_doubling"))


def _runs(catalog: Catalog) -> pl.DataFrame:
    native = catalog.frameworks.select("framework", "kind", pl.col("efficiency").alias("framework_efficiency"))
    return (
        _with_flops_per_token(catalog.reference_runs)
        .join(catalog.accelerators, on="accelerator_id", how="left")
        .join(catalog.kinds.select("kind", "scale_loss_per_doubling"), on="kind", how="left")
        .join(native, on=["framework", "kind"], how="left")
        .with_columns(_peak().alias("peak_flops_per_s"))
        .with_columns(_scale().alias("scale_efficiency"))
    )


def benchmark_points(catalog: Catalog) -> pl.DataFrame:
    """Measured MFU points, normalised to one fast domain and the native framework."""
    return (
        _runs(catalog)
        .filter(pl.col("reported_mfu").is_not_null() | pl.col("reported_tokens_per_s_per_chip").is_not_null())
        .filter(pl.col("kind_of_run") != "mlperf")
        .with_columns(
            pl.coalesce(
                pl.col("reported_tokens_per_s_per_chip") * pl.col("flops_per_token") / pl.col("peak_flops_per_s"),
                pl.col("reported_mfu"),
            ).alias("mfu")
        )
        .with_columns((pl.col("mfu") / pl.col("scale_efficiency") / pl.col("framework_efficiency")).alias("base_mfu"))
        .with_columns(moe=pl.col("active_params") < pl.col("params"))
        .select(
            "run_id",
            "accelerator_id",
            "precision",
            "chips",
            "framework",
            "params",
            "moe",
            "mfu",
            "scale_efficiency",
            "base_mfu",
        )
    )


def _moe_efficiency(points: pl.DataFrame, dense: pl.DataFrame) -> float:
    dense = dense.select("accelerator_id", "precision", pl.col("mfu").alias("dense_mfu"))
    moe = points.filter(pl.col("moe")).join(dense, on=["accelerator_id", "precision"], how="inner")
    return float(moe.select((pl.col("base_mfu") / pl.col("dense_mfu")).median()).item()) if moe.height else 1.0


def _pairs_ratio(points: pl.DataFrame) -> float | None:
    key = ["accelerator_id", "params", "chips"]
    bf16 = points.filter(pl.col("precision") == "bf16").group_by(key).agg(pl.col("base_mfu").median().alias("bf16"))
    low = points.filter(pl.col("precision") != "bf16").group_by(key).agg(pl.col("base_mfu").median().alias("low"))
    ratio = bf16.join(low, on=key).select((pl.col("low") / pl.col("bf16")).median()).item()
    return None if ratio is None else float(ratio)  # None: no paired runs, low precision stays uncalibrated


def _direct(points: pl.DataFrame) -> pl.DataFrame:
    return points.group_by("accelerator_id", "precision").agg(
        pl.col("base_mfu").median().alias("mfu"),
        pl.when(pl.len() > 1)
        .then(pl.col("base_mfu").min())
        .otherwise(pl.col("base_mfu").median() * (1 - SINGLE_POINT_SPREAD))
        .alias("mfu_low"),
        pl.when(pl.len() > 1)
        .then(pl.col("base_mfu").max())
        .otherwise(pl.col("base_mfu").median() * (1 + SINGLE_POINT_SPREAD))
        .alias("mfu_high"),
        pl.concat_str(
            pl.lit("median of "), pl.len().cast(pl.String), pl.lit(" run(s): "), pl.col("run_id").str.join(", ")
        ).alias("basis"),
        pl.lit("measured", BASIS_KIND).alias("basis_kind"),
    )


def _with_proxies(direct: pl.DataFrame, proxies: pl.DataFrame) -> pl.DataFrame:
    table = direct.filter(pl.col("precision") == "bf16")
    pending = proxies.join(table, on="accelerator_id", how="anti")  # measured chips keep their own runs
    while pending.height:  # proxies may chain (gb200 -> b200 -> h100-sxm)
        ready = pending.join(table, left_on="proxy_of", right_on="accelerator_id", how="inner")
        if ready.height == 0:  # proxies of chips with no runs left (a leave-one-out check): generic fallback
            break
        table = pl.concat(
            [
                table,
                ready.select(
                    "accelerator_id",
                    "precision",
                    (pl.col("mfu") * pl.col("factor")).alias("mfu"),
                    (pl.col("mfu_low") * pl.col("factor_low")).alias("mfu_low"),
                    (pl.col("mfu_high") * pl.col("factor_high")).alias("mfu_high"),
                    pl.concat_str(
                        pl.lit("proxy: "),
                        pl.col("proxy_of"),
                        pl.lit(" x "),
                        pl.col("factor").round(2).cast(pl.String),
                        pl.lit(" ("),
                        pl.col("reason"),
                        pl.lit(")"),
                    ).alias("basis"),
                    pl.lit("proxy", BASIS_KIND).alias("basis_kind"),
                ),
            ]
        )
        pending = pending.join(ready.select("accelerator_id"), on="accelerator_id", how="anti")
    return table


def _with_fallback(table: pl.DataFrame, ids: list[str]) -> pl.DataFrame:
    """Chips with neither runs nor a proxy: the median of all calibrated bases, their min..max as range."""
    missing = sorted(set(ids) - set(table["accelerator_id"]))
    if not missing:
        return table
    measured = table.filter(pl.col("basis_kind") == "measured")
    generic = pl.DataFrame(
        {
            "accelerator_id": missing,
            "precision": "bf16",
            "mfu": measured["mfu"].median(),
            "mfu_low": measured["mfu"].min(),
            "mfu_high": measured["mfu"].max(),
            "basis": "no published runs and no proxy: median of all calibrated chips (add a row to mfu_proxies.csv)",
        }
    ).with_columns(pl.lit("fallback", BASIS_KIND).alias("basis_kind"))
    return pl.concat([table, generic.select(table.columns)])


def _low_precision(bf16: pl.DataFrame, direct: pl.DataFrame, ratio: float | None) -> pl.DataFrame:
    rows = [direct.filter(pl.col("precision") != "bf16")]
    if ratio is None:
        return rows[0]
    for precision in PRECISIONS[1:]:
        derived = bf16.with_columns(
            pl.lit(precision).alias("precision"),
            *(pl.col(c) * ratio for c in ("mfu", "mfu_low", "mfu_high")),
            pl.concat_str(
                pl.lit(f"BF16 base x {ratio:.2f} (median low-precision/BF16 ratio of paired runs); "), pl.col("basis")
            ).alias("basis"),
            pl.lit("derived", BASIS_KIND).alias("basis_kind"),
        )
        rows.append(derived.join(rows[0], on=["accelerator_id", "precision"], how="anti"))
    return pl.concat(rows)


def moe_factor(moe_efficiency: float) -> pl.Expr:
    """1 for dense models, the calibrated MoE efficiency when fewer parameters are active than stored."""
    return pl.when(pl.col("active_params") < pl.col("params")).then(moe_efficiency).otherwise(1.0)


def _goodput(catalog: Catalog, mfu: pl.DataFrame, moe_efficiency: float) -> pl.DataFrame:
    return (
        _runs(catalog)
        .filter(
            (pl.col("kind_of_run") == "full_run")
            & pl.col("reported_chip_hours").is_not_null()
            & pl.col("tokens").is_not_null()
        )
        .join(mfu, on=["accelerator_id", "precision"], how="inner")
        .with_columns(
            (
                pl.col("flops_per_token")
                * pl.col("tokens")
                / (
                    pl.col("peak_flops_per_s")
                    * pl.col("mfu")
                    * moe_factor(moe_efficiency)
                    * pl.col("scale_efficiency")
                    * pl.col("framework_efficiency")
                )
                / 3600
            ).alias("predicted_chip_hours_at_benchmark_rate")
        )
        .with_columns(
            (pl.col("predicted_chip_hours_at_benchmark_rate") / pl.col("reported_chip_hours")).alias("goodput")
        )
        .select(
            "run_id",
            "accelerator_id",
            "params",
            "tokens",
            "chips",
            "reported_chip_hours",
            "predicted_chip_hours_at_benchmark_rate",
            "goodput",
        )
    )


def fit(catalog: Catalog) -> Calibration:
    """Fit every default from ``catalog.reference_runs``; see the module docstring for the method."""
    proxies = catalog.mfu_proxies
    points = benchmark_points(catalog)
    direct = _direct(points.filter(~pl.col("moe")))
    ratio = _pairs_ratio(points.filter(~pl.col("moe")))
    moe = _moe_efficiency(points, direct)
    bf16 = _with_fallback(_with_proxies(direct, proxies), catalog.accelerator_ids)
    mfu = pl.concat([bf16, _low_precision(bf16, direct, ratio)]).sort("accelerator_id", "precision")
    runs = _goodput(catalog, mfu, moe)
    quantiles = [runs["goodput"].quantile(q, "linear") for q in (0.5, 0.25, 0.75)]
    return Calibration(
        mfu=mfu,
        moe_efficiency=moe,
        goodput=quantiles[0],
        goodput_low=quantiles[1],
        goodput_high=quantiles[2],
        low_precision_ratio=ratio,
        points=points,
        full_runs=runs,
    )
