"""Train, then serve: the total of training on one option and serving on another over some months."""

from __future__ import annotations

import polars as pl

from workbook.model.cost import billed_chip_hours
from workbook.model.units import HOURS_PER_MONTH

# the options a strategy may pick: feasible, on GPU or TPU (train on either, serve on either)
CANDIDATES = pl.col("feasible") & pl.col("kind").is_in(["gpu", "tpu"])


def nothing_to_total(train: pl.DataFrame, serve: pl.DataFrame) -> str | None:
    """Why :func:`train_then_serve` has nothing to total, in plain words (None when it has): the phase with no
    feasible GPU or TPU option (the Train tab's card says what to relax)."""
    for frame, words in (  # short: the chart's empty-state line
        (train, "No training plan meets the Train tab's limits"),
        (serve, "No serving option meets these targets"),
    ):
        if frame.filter(CANDIDATES).height == 0:
            return words
    return None


def train_then_serve(train: pl.DataFrame, serve: pl.DataFrame, months: float) -> pl.DataFrame:
    """Total cost of training on one option and serving on another for ``months``, for the best GPU and TPU
    option of each (the 'train on TPU, serve on GPU' strategy and its alternatives). Serving on a commitment bills
    whole terms, as training's does: three months on a 1-year commitment pay twelve, eighteen pay twenty-four."""
    hours = months * HOURS_PER_MONTH

    def leaders(frame: pl.DataFrame, cost: pl.Expr, label: str) -> pl.DataFrame:
        best = frame.filter(CANDIDATES).sort(cost).unique("kind", keep="first", maintain_order=True)
        return best.select(
            pl.col("kind").alias(f"{label}_kind"),
            pl.format("{} ({}, {})", "name", "cloud", "pricing_model").alias(f"{label}_option"),
            cost.alias(f"{label}_usd"),
        )

    train_best = leaders(train, pl.col("cost_usd"), "train")
    billed = billed_chip_hours(pl.col("rented_chips"), pl.lit(hours), pl.col("pricing_model"))  # whole instances
    serve_best = leaders(serve, pl.col("usd_per_chip_hour") * billed, "serve")
    return (
        train_best.join(serve_best, how="cross")
        .with_columns(
            total_usd=pl.col("train_usd") + pl.col("serve_usd"),
            strategy=pl.format(
                "train on {}, serve on {}",
                pl.col("train_kind").str.to_uppercase(),
                pl.col("serve_kind").str.to_uppercase(),
            ),
        )
        .sort("total_usd")
    )
