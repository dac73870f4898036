"""Backtest: predict every published full run's chip-hours with the model and compare with what was reported.

* ``backtest`` runs the same pipeline as ``options.evaluate`` (chips given = the run's chip count or, where the
  paper does not say, the chips that finish the run in the median published duration; precision, framework and
  global batch as published; reserved capacity, so no on-demand ceiling; the accounting goodput of the way the run's
  chip-hours were counted, ``chip_hours_basis``) and returns one row per full run with the predicted
  chip-hours, its low/high band, the error ln(predicted / reported), and the two plain rules': 6·N·D, and the
  exact per-layer FLOPs, each at a flat 50% of the BF16 peak.
* ``held_out`` predicts each run with a calibration fitted without any run of its accelerator family;
  ``leave_one_family_out`` summarises it per family, so the accuracy figure is not just a fit.
Errors are |ln(pred/real)|: 0.15 is about 15% off, 0.69 is a factor of 2.
"""

from __future__ import annotations

import dataclasses
import math

import polars as pl

from workbook import cache
from workbook.catalog import Catalog
from workbook.model import flops, throughput
from workbook.present import count
from workbook.training import calibration as calibration_mod
from workbook.training import options
from workbook.training.scenario import ModelSpec, Scenario

NAIVE_MFU = 0.5
TARGET_MEDIAN_ABS_LN_ERROR = 0.15
FACTOR_TWO = math.log(2)


def _chips(r: dict) -> int | None:
    """The run's chip count: published, else the stated assumption (``chips_assumed``), else None."""
    return r["chips"] or r["chips_assumed"]


def _jobs(planned: pl.DataFrame, typical_days: float) -> pl.DataFrame:
    """One job per run: its shape, tokens and chip count (published, or assumed with a stated basis); where
    neither is known, the chips that finish the run in ``typical_days`` (the median duration of the published
    runs that state one)."""
    rows = [
        {
            "sweep": r["run_id"],
            **calibration_mod.shape(r).columns(),
            "global_batch_tokens": r["global_batch_tokens"],
            "max_global_batch_tokens": r["max_global_batch_tokens"],
            "tokens": r["tokens"],
            "target_days": None if _chips(r) else typical_days,
            "chips_given": _chips(r),
            "deadline_days": None,
            "budget_usd": None,
        }
        for r in planned.iter_rows(named=True)
    ]
    return pl.DataFrame(rows, schema_overrides=options.JOB_SCHEMA).with_row_index("job")


def full_runs(catalog: Catalog) -> pl.DataFrame:
    """Published full runs with the inputs a prediction needs, joined to their accelerator (runs with a stated
    ``backtest_exclusion`` left out: see :func:`excluded_runs`)."""
    return catalog.reference_runs.filter(
        calibration_mod.timed_full_run() & pl.col("backtest_exclusion").is_null()
    ).join(
        catalog.accelerators.select("accelerator_id", "family", "kind", "scaleup_domain_chips", "bf16_flops_per_s"),
        on="accelerator_id",
    )


def excluded_runs(catalog: Catalog) -> pl.DataFrame:
    """Full runs left out of the time backtest (and of the goodput fit), each with its stated reason."""
    return catalog.reference_runs.filter(
        calibration_mod.timed_full_run() & pl.col("backtest_exclusion").is_not_null()
    ).select("run_id", "model", "accelerator_id", "reported_chip_hours", "backtest_exclusion")


def _exact_flops(runs: pl.DataFrame) -> pl.Series:
    """Model FLOPs per token with the exact attention term, per run (the second plain rule)."""
    values = []
    for r in runs.iter_rows(named=True):
        spec = calibration_mod.shape(r)
        values.append(flops.flops_per_token(spec.active_params, spec.n_layers, spec.attention_dim, spec.seq_len))
    return pl.Series(values, dtype=pl.Float64)


def _predict(catalog: Catalog, cal: calibration_mod.Calibration, runs: pl.DataFrame, typical_days: float):
    """Each run of ``runs`` through ``options.evaluate_full`` at its published (or assumed) chip count: run_id,
    chips_modelled, layout, predicted_days and predicted chip-hours with their band."""
    parts = []
    planned = calibration_mod.runs_frame(catalog, catalog.reference_runs.join(runs.select("run_id"), on="run_id"))
    planned = planned.select("run_id", "chips_planned", "global_batch_tokens", "max_global_batch_tokens").join(
        catalog.reference_runs, on="run_id"
    )
    for (precision, framework), group in planned.group_by("precision", "framework", maintain_order=True):
        jobs = _jobs(group, typical_days)
        scenario = Scenario(
            model=ModelSpec.from_params(1e9),
            tokens=1e9,
            framework=framework,
            precision=precision,
            chips=8,
            # Owned or contracted clusters: no on-demand capacity ceiling (the chips are the published ones).
            pricing=("reserved-contract",),
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
    return pl.concat(parts).select(
        pl.col("sweep").alias("run_id"),
        pl.col("chips").alias("chips_modelled"),
        "layout",
        pl.col("train_days").alias("predicted_days"),
        *(
            pl.col(f"train_days{b}").mul(pl.col("chips")).mul(24).alias(f"predicted_chip_hours{b}")
            for b in options.BAND
        ),
    )


def on_basis(cal: calibration_mod.Calibration, basis: str) -> calibration_mod.Calibration:
    """``cal`` with the accounting goodput of chip-hours counted as ``basis`` (like for like: a run published as
    chips x a calendar span is compared with the model's calendar span); ``cal`` itself where no run of that basis
    calibrated it."""
    fitted = cal.goodput_by_basis.filter(pl.col("chip_hours_basis") == basis)
    if fitted.height == 0:
        return cal
    row = fitted.row(0, named=True)
    return dataclasses.replace(
        cal, goodput=row["goodput"], goodput_low=row["goodput_low"], goodput_high=row["goodput_high"]
    )


def backtest(catalog: Catalog, calibration: calibration_mod.Calibration | None = None) -> pl.DataFrame:
    """One row per full run: reported vs predicted chip-hours, band, error, and the naive baseline."""
    cal = calibration or calibration_mod.fit(catalog)
    runs = full_runs(catalog)
    typical_days = float(runs["reported_days"].median())
    predicted = pl.concat(
        _predict(catalog, on_basis(cal, basis), group, typical_days)
        for (basis,), group in runs.group_by("chip_hours_basis", maintain_order=True)
    )
    naive = (
        flops.FMA_FLOPS
        * flops.MATMUL_PASSES
        * pl.col("active_params")
        * pl.col("tokens")
        / (NAIVE_MFU * pl.col("bf16_flops_per_s"))
        / 3600
    )
    exact = pl.col("exact_flops_per_token") * pl.col("tokens") / (NAIVE_MFU * pl.col("bf16_flops_per_s")) / 3600
    return (
        runs.with_columns(exact_flops_per_token=_exact_flops(runs))
        .join(predicted, on="run_id")
        .with_columns(
            naive_chip_hours=naive,
            exact_flops_chip_hours=exact,
            chips_basis=pl.when(pl.col("chips").is_not_null())
            .then(pl.lit("published"))
            .when(pl.col("chips_assumed").is_not_null())
            .then(pl.concat_str(pl.lit("assumed: "), pl.col("chips_assumed_basis")))
            .otherwise(
                pl.lit(f"not published: sized to finish in the median published duration ({typical_days:g} days)")
            ),
        )
        .with_columns(
            error=(pl.col("predicted_chip_hours") / pl.col("reported_chip_hours")).log(),
            naive_error=(pl.col("naive_chip_hours") / pl.col("reported_chip_hours")).log(),
            exact_flops_error=(pl.col("exact_flops_chip_hours") / pl.col("reported_chip_hours")).log(),
        )
        .with_columns(
            abs_error=pl.col("error").abs(),
            naive_abs_error=pl.col("naive_error").abs(),
            exact_flops_abs_error=pl.col("exact_flops_error").abs(),
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
            "chips_modelled",
            "chips_basis",
            "layout",
            "chip_hours_basis",
            "reported_chip_hours",
            "predicted_chip_hours",
            "predicted_chip_hours_low",
            "predicted_chip_hours_high",
            "naive_chip_hours",
            "error",
            "abs_error",
            "naive_error",
            "naive_abs_error",
            "exact_flops_chip_hours",
            "exact_flops_abs_error",
            "within_band",
            "source",
        )
        .sort("abs_error")
    )


def benchmark_runs(catalog: Catalog) -> pl.DataFrame:
    """MLPerf Training rows with a chip count and a time to train, joined to their accelerator's family."""
    return catalog.reference_runs.filter(
        (pl.col("kind_of_run") == "mlperf") & pl.col("chips").is_not_null() & pl.col("reported_days").is_not_null()
    ).join(catalog.accelerators.select("accelerator_id", "family"), on="accelerator_id")


def benchmark_backtest(catalog: Catalog, calibration: calibration_mod.Calibration | None = None) -> pl.DataFrame:
    """One row per MLPerf row: measured vs predicted minutes to train, through the same pipeline as a full run but
    with benchmark timing (``run_start`` to ``run_stop``: no accounting overhead, only the run's own interruptions).
    In-sample: these rows also calibrate the kernel efficiency (see :func:`benchmark_held_out`)."""
    cal = calibration or calibration_mod.fit(catalog)
    benchmark = throughput.BENCHMARK_ACCOUNTING
    timing = dataclasses.replace(cal, goodput=benchmark, goodput_low=benchmark, goodput_high=benchmark)
    runs = benchmark_runs(catalog)
    predicted = _predict(catalog, timing, runs, float(runs["reported_days"].median()))
    minutes = 24 * 60
    return (
        runs.join(predicted, on="run_id")
        .select(
            "run_id",
            "accelerator_id",
            "family",
            "precision",
            "chips",
            "layout",
            (pl.col("reported_days") * minutes).alias("measured_minutes"),
            (pl.col("predicted_days") * minutes).alias("predicted_minutes"),
        )
        .with_columns(error=(pl.col("predicted_minutes") / pl.col("measured_minutes")).log())
        .with_columns(abs_error=pl.col("error").abs())
        .sort("run_id")
    )


def benchmark_held_out(catalog: Catalog) -> pl.DataFrame:
    """:func:`benchmark_backtest` rows, each predicted by a calibration fitted without any run of its family."""
    families = benchmark_runs(catalog)["family"].unique().sort().to_list()
    parts = [
        benchmark_backtest(catalog, calibration_mod.fit(without_family(catalog, f))).filter(pl.col("family") == f)
        for f in families
    ]
    return pl.concat(parts).sort("run_id")


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
    exact_flops_median_abs_error: float

    def lines(self) -> list[str]:
        return [
            f"{self.runs} published full runs",
            f"median |ln(pred/real)| = {self.median_abs_error:.3f} (naive 6ND at 50% MFU: "
            f"{self.naive_median_abs_error:.3f}; exact FLOPs at 50% of peak: {self.exact_flops_median_abs_error:.3f})",
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
        exact_flops_median_abs_error=frame["exact_flops_abs_error"].median(),
    )


def without_family(catalog: Catalog, family: str) -> Catalog:
    """The catalog with every reference run on ``family``'s accelerators removed."""
    ids = catalog.accelerators.filter(pl.col("family") == family)["accelerator_id"].implode()
    return dataclasses.replace(
        catalog, reference_runs=catalog.reference_runs.filter(~pl.col("accelerator_id").is_in(ids))
    )


@dataclasses.dataclass(frozen=True)
class HeldOut:
    rows: pl.DataFrame


@cache.per_catalog("training-held-out", HeldOut)  # one calibration per family: computed once per table content
def _held_out(catalog: Catalog) -> HeldOut:
    parts = []
    for family in full_runs(catalog)["family"].unique().sort().to_list():
        cal = calibration_mod.fit(without_family(catalog, family))
        result = backtest(catalog, cal).filter(pl.col("family") == family)
        parts.append(result.with_columns(goodput_without_family=pl.lit(cal.goodput)))
    return HeldOut(pl.concat(parts).sort("abs_error"))


def held_out(catalog: Catalog) -> pl.DataFrame:
    """:func:`backtest` rows where each run is predicted by a calibration fitted without any run (benchmarks and
    full runs) of its own accelerator family; ``goodput_without_family`` is that calibration's goodput."""
    return _held_out(catalog).rows


def leave_one_family_out(catalog: Catalog, rows: pl.DataFrame | None = None) -> pl.DataFrame:
    """Per family with full runs: its runs' errors when the family is held out (``rows``: :func:`held_out`)."""
    rows = held_out(catalog) if rows is None else rows
    return (
        rows.group_by("family")
        .agg(
            pl.len().alias("runs"),
            pl.col("abs_error").median().alias("median_abs_error"),
            pl.col("abs_error").max().alias("worst_abs_error"),
            pl.col("naive_abs_error").median().alias("naive_median_abs_error"),
            pl.col("exact_flops_abs_error").median().alias("exact_flops_median_abs_error"),
            pl.col("goodput_without_family").first(),
        )
        .sort("family")
    )
