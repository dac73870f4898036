"""Validation charts: predicted vs published results (the validation notebook)."""

from __future__ import annotations

import altair as alt
import polars as pl


def backtest(frame: pl.DataFrame) -> alt.LayerChart:
    """Log-log scatter of predicted vs reported chip-hours, the y = x line and a +-25% band, by family."""
    data = frame.select(
        "run_id", "model", "family", "accelerator_id", "reported_chip_hours", "predicted_chip_hours", "error"
    ).with_columns(off_by=pl.col("error").exp())
    low, high = data["reported_chip_hours"].min() / 2, data["reported_chip_hours"].max() * 2
    line = pl.DataFrame({"x": [low, high]})
    band = line.with_columns(lower=pl.col("x") / 1.25, upper=pl.col("x") * 1.25)
    scale = alt.Scale(type="log", domain=[low, high])
    x = alt.X("reported_chip_hours:Q", title="Reported chip-hours (log)", scale=scale, axis=alt.Axis(format=".1s"))
    points = (
        alt.Chart(data)
        .mark_circle(size=70, opacity=0.85)
        .encode(
            x=x,
            y=alt.Y(
                "predicted_chip_hours:Q", title="Predicted chip-hours (log)", scale=scale, axis=alt.Axis(format=".1s")
            ),
            color=alt.Color("family:N", title="Accelerator family"),
            tooltip=[
                alt.Tooltip("model:N", title="Run"),
                alt.Tooltip("accelerator_id:N", title="Accelerator"),
                alt.Tooltip("reported_chip_hours:Q", title="Reported", format=",.0f"),
                alt.Tooltip("predicted_chip_hours:Q", title="Predicted", format=",.0f"),
                alt.Tooltip("off_by:Q", title="Predicted / reported", format=".2f"),
            ],
        )
    )
    diagonal = alt.Chart(line).mark_line(color="#333").encode(x=alt.X("x:Q", scale=scale), y=alt.Y("x:Q", scale=scale))
    area = (
        alt.Chart(band)
        .mark_area(opacity=0.35, color="#9ecae9")
        .encode(x=alt.X("x:Q", scale=scale), y=alt.Y("lower:Q", scale=scale), y2="upper:Q")
    )
    return alt.layer(area, diagonal, points).properties(
        width=480,
        height=420,
        title=alt.TitleParams(
            "Predicted vs reported chip-hours of published training runs",
            subtitle="line: perfect prediction; shaded band: within 25%",
        ),
    )


def serving_by_round(frame: pl.DataFrame, stack_names: dict[str, str]) -> alt.LayerChart:
    """Held-out serving throughput per round: predicted / published on a log axis, one point a result (the rows of
    :func:`workbook.serving.validation.validate` measuring tokens/s), rounds in publication order and coloured by
    software stack (``stack_names``: id -> name), over the 25% band and the 1.4x lines of the serving targets.
    Drift shows as a round whose points sit off 1 together."""
    data = (
        frame.filter((pl.col("measure") == "tokens_per_s") & pl.col("predicted_value").is_not_null())
        .select(
            "run_id",
            "round",
            "published",
            "stack",
            "accelerator_id",
            "weight_precision",
            "published_value",
            "predicted_value",
        )
        .with_columns(
            ratio=pl.col("predicted_value") / pl.col("published_value"),
            stack_name=pl.col("stack").replace_strict(stack_names, default=pl.col("stack")),
            published=pl.col("published").cast(pl.String),
        )
    )
    order = data.group_by("round").agg(pl.col("published").min()).sort("published", "round")["round"].to_list()
    scale = alt.Scale(type="log", domain=[0.4, 2.5])
    y = alt.Y("round:N", title=None, sort=order)
    points = (
        alt.Chart(data)
        .mark_circle(size=45, opacity=0.6, aria=False)  # a thousand points: no per-point screen-reader text in the SVG
        .encode(
            x=alt.X("ratio:Q", title="Predicted / published throughput (log)", scale=scale),
            y=y,
            color=alt.Color("stack_name:N", title="Software stack"),
            tooltip=[
                alt.Tooltip("run_id:N", title="Result"),
                alt.Tooltip("accelerator_id:N", title="Accelerator"),
                alt.Tooltip("weight_precision:N", title="Weights"),
                alt.Tooltip("published:N", title="Published"),
                alt.Tooltip("published_value:Q", title="Published tokens/s", format=",.0f"),
                alt.Tooltip("predicted_value:Q", title="Predicted tokens/s", format=",.0f"),
                alt.Tooltip("ratio:Q", title="Predicted / published", format=".2f"),
            ],
        )
    )
    band = alt.Chart(pl.DataFrame({"lower": [1 / 1.25], "upper": [1.25]})).mark_rect(opacity=0.2, color="#9ecae9")
    band = band.encode(x=alt.X("lower:Q", scale=scale), x2="upper:Q")
    lines = pl.DataFrame({"x": [1 / 1.4, 1.0, 1.4], "kind": ["1.4x", "exact", "1.4x"]})
    rules = (
        alt.Chart(lines)
        .mark_rule()
        .encode(
            x=alt.X("x:Q", scale=scale),
            strokeDash=alt.condition(alt.datum.kind == "exact", alt.value([1, 0]), alt.value([4, 4])),
            color=alt.value("#333"),
        )
    )
    return alt.layer(band, rules, points).properties(
        width=480,
        height=alt.Step(18),
        title=alt.TitleParams(
            "Serving throughput, predicted vs published, per round (each held out of its own fit)",
            subtitle="shaded: within 25%; dashed: 1.4x either way; rounds in publication order",
        ),
    )
