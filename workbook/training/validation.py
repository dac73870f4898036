"""Backtest: predict every published full run's chip-hours with the model and compare with what was reported.

* ``backtest`` runs the same pipeline as ``options.evaluate`` (chips given = the run's chip count, or one
  fast domain when the paper does not say; precision and framework as published) and returns one row per
  full run with the predicted chip-hours, its low/high band, the error ln(predicted / reported), and the
  naive baseline's (6·N·D at a flat 50% of the BF16 peak).
* ``leave_one_family_out`` recalibrates without every run (benchmarks and full runs) of one accelerator
  family and predicts that family's full runs, so the accuracy figure is not just a fit.
Errors are |ln(pred/real)|: 0.15 is about 15% off, 0.69 is a factor of 2.
"""

from __future__ import annotations

import dataclasses
import math

import polars as pl

from workbook.catalog import Catalog
from workbook.model import flops
from workbook.present import count
from workbook.training import calibration as calibration_mod
from workbook.training import options
from workbook.training.scenario import ModelSpec, Scenario

NAIVE_MFU = 0.5
TARGET_MEDIAN_ABS_LN_ERROR = 0.15
FACTOR_TWO = math.log(2)


def _job(row: dict, domain: int) -> dict:
    spec = ModelSpec.from_params(row["params"], row["active_params"], seq_len=row["seq_len"] or 2048)
    return {
        "sweep": row["run_id"],
        "params": spec.params,
        "active_params": spec.active_params,
        "n_layers": row["n_layers"] or spec.n_layers,
        "hidden_dim": spec.hidden_dim,
        "attention_dim": row["attention_dim"] or spec.attention_dim,
        "seq_len": spec.seq_len,
        "tokens": row["tokens"],
        "target_days": None,
        "chips_given": row["chips"] or domain,
        "deadline_days": None,
        "budget_usd": None,
    }


def full_runs(catalog: Catalog) -> pl.DataFrame:
    """Published full runs with the inputs a prediction needs, joined to their accelerator."""
    return catalog.reference_runs.filter(
        (pl.col("kind_of_run") == "full_run")
        & pl.col("reported_chip_hours").is_not_null()
        & pl.col("tokens").is_not_null()
    ).join(
        catalog.accelerators.select("accelerator_id", "family", "kind", "scaleup_domain_chips", "bf16_flops_per_s"),
        on="accelerator_id",
    )


def backtest(catalog: Catalog, calibration: calibration_mod.Calibration | None = None) -> pl.DataFrame:
    """One row per full run: reported vs predicted chip-hours, band, error, and the naive baseline."""
    cal = calibration or calibration_mod.fit(catalog)
    runs = full_runs(catalog)
    parts = []
    for (precision, framework), group in runs.group_by("precision", "framework", maintain_order=True):
        jobs = pl.DataFrame(
            [_job(r, r["scaleup_domain_chips"]) for r in group.iter_rows(named=True)],
            schema_overrides={"target_days": pl.Float64, "deadline_days": pl.Float64, "budget_usd": pl.Float64},
        ).with_row_index("job")
        scenario = Scenario(
            model=ModelSpec.from_params(1e9),
            tokens=1e9,
            framework=framework,
            precision=precision,
            chips=8,
            pricing=("on-demand",),
            accelerators=tuple(group["accelerator_id"].unique()),
        )
        frame = options.evaluate_full(scenario, catalog, cal, jobs)
        parts.append(
            frame.join(
                group.select(pl.col("run_id").alias("sweep"), "accelerator_id"),
                on=["sweep", "accelerator_id"],
                how="semi",
            ).unique("sweep", keep="first", maintain_order=True)
        )
    predicted = pl.concat(parts).select(
        pl.col("sweep").alias("run_id"),
        pl.col("chips").alias("chips_modelled"),
        pl.col("train_days").alias("predicted_days"),
        *(
            pl.col(f"train_days{b}").mul(pl.col("chips")).mul(24).alias(f"predicted_chip_hours{b}")
            for b in options.BAND
        ),
    )
    naive = (
        flops.FMA_FLOPS
        * flops.MATMUL_PASSES
        * pl.col("active_params")
        * pl.col("tokens")
        / (NAIVE_MFU * pl.col("bf16_flops_per_s"))
        / 3600
    )
    return (
        runs.join(predicted, on="run_id")
        .with_columns(naive_chip_hours=naive)
        .with_columns(
            error=(pl.col("predicted_chip_hours") / pl.col("reported_chip_hours")).log(),
            naive_error=(pl.col("naive_chip_hours") / pl.col("reported_chip_hours")).log(),
        )
        .with_columns(
            abs_error=pl.col("error").abs(),
            naive_abs_error=pl.col("naive_error").abs(),
            within_band=(pl.col("predicted_chip_hours_low") <= pl.col("reported_chip_hours"))
            & (pl.col("reported_chip_hours") <= pl.col("predicted_chip_hours_high")),
        )
        .select(
            "run_id",
            "model",
            "accelerator_id",
            "family",
            "kind",
            "params",
            "active_params",
            "tokens",
            "chips",
            "reported_chip_hours",
            "predicted_chip_hours",
            "predicted_chip_hours_low",
            "predicted_chip_hours_high",
            "naive_chip_hours",
            "error",
            "abs_error",
            "naive_error",
            "naive_abs_error",
            "within_band",
            "source",
        )
        .sort("abs_error")
    )


@dataclasses.dataclass(frozen=True)
class Summary:
    runs: int
    median_abs_error: float
    worst_abs_error: float
    worst_run: str
    within_25_percent: int
    beyond_factor_two: int
    within_band: int
    naive_median_abs_error: float
    naive_worst_abs_error: float

    def lines(self) -> list[str]:
        return [
            f"{self.runs} published full runs",
            f"median |ln(pred/real)| = {self.median_abs_error:.3f} (naive 6ND at 50% MFU: "
            f"{self.naive_median_abs_error:.3f})",
            f"worst = {self.worst_abs_error:.3f} ({self.worst_run}, x{math.exp(self.worst_abs_error):.1f}); "
            f"naive worst = {self.naive_worst_abs_error:.3f}",
            f"within 25%: {self.within_25_percent}; off by more than 2x: {self.beyond_factor_two}; "
            f"reported value inside the predicted band: {self.within_band}",
        ]

    def words(self) -> list[str]:
        """The same figures for a manager: "within 20% on median" (a |ln| error e read as e^e - 1, so 0.180 is
        "within 20%"), counts of runs, the worst in plain factors."""
        return [
            f"Predicted the chip-hours of {self.runs} published training runs within "
            f"{math.expm1(self.median_abs_error):.0%} on median (the rule of thumb 6 x parameters x tokens at 50% "
            f"of peak: within {math.expm1(self.naive_median_abs_error):.0%}).",
            f"{self.within_25_percent} of {self.runs} within 25%, {self.beyond_factor_two} off by more than a factor "
            f"of 2 (the worst, {self.worst_run}, by a factor of {math.exp(self.worst_abs_error):.1f}); the published "
            f"figure lies inside the predicted range for {self.within_band}.",
        ]


def held_out_words(per_family: pl.DataFrame) -> str:
    """``leave_one_family_out`` in plain words: the honest accuracy, since the runs above also calibrated it."""
    if per_family.height == 0:
        return "No chip family has published runs to hold out."
    parts = [
        f"{r['family']} within {math.expm1(r['median_abs_error']):.0%} ({count(r['runs'], 'run')})"
        for r in per_family.sort("runs", descending=True).iter_rows(named=True)
    ]
    return (
        "Those runs also calibrated the model, so the figures above flatter it. Held out (each chip family "
        "predicted by a model calibrated without its runs), on median: " + "; ".join(parts) + "."
    )


def summarize(frame: pl.DataFrame) -> Summary:
    worst = frame.sort("abs_error").row(-1, named=True)
    return Summary(
        runs=frame.height,
        median_abs_error=frame["abs_error"].median(),
        worst_abs_error=worst["abs_error"],
        worst_run=worst["run_id"],
        within_25_percent=int((frame["abs_error"] <= math.log(1.25)).sum()),
        beyond_factor_two=int((frame["abs_error"] > FACTOR_TWO).sum()),
        within_band=int(frame["within_band"].sum()),
        naive_median_abs_error=frame["naive_abs_error"].median(),
        naive_worst_abs_error=frame["naive_abs_error"].max(),
    )


def without_family(catalog: Catalog, family: str) -> Catalog:
    """The catalog with every reference run on ``family``'s accelerators removed."""
    ids = catalog.accelerators.filter(pl.col("family") == family)["accelerator_id"].implode()
    return dataclasses.replace(
        catalog, reference_runs=catalog.reference_runs.filter(~pl.col("accelerator_id").is_in(ids))
    )


def leave_one_family_out(catalog: Catalog) -> pl.DataFrame:
    """Per family with full runs: recalibrate without the family, predict its full runs."""
    rows = []
    for family in full_runs(catalog)["family"].unique().sort().to_list():
        held_out = without_family(catalog, family)
        cal = calibration_mod.fit(held_out)
        result = backtest(catalog, cal).filter(pl.col("family") == family)
        rows.append(
            {
                "family": family,
                "runs": result.height,
                "median_abs_error": result["abs_error"].median(),
                "worst_abs_error": result["abs_error"].max(),
                "naive_median_abs_error": result["naive_abs_error"].median(),
                "goodput_without_family": cal.goodput,
            }
        )
    return pl.DataFrame(rows)
