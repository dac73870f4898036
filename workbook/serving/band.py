"""How far the model's serving throughput has been from published results, per software stack: the range the
answer's cost carries besides the price spread.

The results are those that ask the serving card's question, how much a system serves within latency limits
(MLPerf's Server and Interactive throughput: ``scenario`` server, ``tokens_per_s``), each predicted without any
result of its own system (:func:`workbook.serving.validation.validate`); for each accelerator the newest round
it ran in with the stack (the software a buyer would run on it today). ``low`` / ``high`` are the lowest and
highest ln(predicted / published) of the stack, widened to include 0 so that the model's own answer lies inside;
a stack with no such result takes the range of all of them (``basis`` says which).

A replica count follows the throughput, so the chips, and the cost at the user's traffic, scale as
published / predicted: the cost's range is ``cost x exp(low)`` to ``cost x exp(high)`` (whole replicas aside).
"""

from __future__ import annotations

import dataclasses

import polars as pl

from workbook import cache
from workbook.catalog import Catalog
from workbook.serving.calibration import STACK_NAMES, calibrate
from workbook.serving.validation import validate


@dataclasses.dataclass(frozen=True)
class ThroughputBand:
    """Per stack: ``low`` / ``high`` ln(predicted / published), ``results`` behind them and their ``basis``;
    ``pooled``: the same over every stack's results, for a stack with none."""

    stacks: pl.DataFrame  # stack, low, high, results, basis
    pooled_low: float
    pooled_high: float
    pooled_results: int

    def for_stacks(self, stacks: pl.Series) -> pl.DataFrame:
        """``stack``, ``model_error_low``, ``model_error_high``, ``model_error_results`` (the stack's own results;
        null for a stack with none, which gets the pooled range) and ``model_error_basis`` for each of ``stacks``."""
        pooled = (
            f"no published result of this stack within latency limits: the range of all {self.pooled_results} "
            "results of every stack"
        )
        return (
            pl.DataFrame({"stack": stacks.unique()})
            .join(self.stacks, on="stack", how="left")
            .select(
                "stack",
                model_error_low=pl.col("low").fill_null(self.pooled_low),
                model_error_high=pl.col("high").fill_null(self.pooled_high),
                model_error_results=pl.col("results"),
                model_error_basis=pl.col("basis").fill_null(pooled),
            )
        )


@cache.per_catalog("serving-throughput-band", ThroughputBand)  # once per table content and code version
def throughput_band(cat: Catalog) -> ThroughputBand:
    """The range of the model's held-out throughput error within latency limits, per stack (module docstring)."""
    rows = cat.inference_runs.filter(
        (pl.col("scenario") == "server")
        & (pl.col("measure") == "tokens_per_s")
        & pl.col("stack").is_in(list(STACK_NAMES))
    )
    newest = rows.filter(pl.col("published") == pl.col("published").max().over("stack", "accelerator_id"))
    errors = validate(dataclasses.replace(cat, inference_runs=newest), calibrate(cat)).filter(
        pl.col("error").is_not_null()
    )
    stacks = (
        errors.group_by("stack")
        .agg(
            low=pl.min_horizontal(pl.col("error").min(), pl.lit(0.0)),
            high=pl.max_horizontal(pl.col("error").max(), pl.lit(0.0)),
            results=pl.len(),
            basis=pl.format(
                "{} held-out result(s) within latency limits ({})",
                pl.len(),
                pl.col("run_id").sort().str.join(", "),
            ),
        )
        .sort("stack")
    )
    return ThroughputBand(
        stacks=stacks,
        pooled_low=min(errors["error"].min(), 0.0),
        pooled_high=max(errors["error"].max(), 0.0),
        pooled_results=errors.height,
    )
