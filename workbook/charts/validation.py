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
