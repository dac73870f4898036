"""Serving chart builders (frame -> alt.Chart), template + datasets like ``workbook.charts``."""

from __future__ import annotations

import functools

import altair as alt
import polars as pl

from workbook import serving
from workbook.charts import training
from workbook.charts.common import (
    BAR_STEP,
    LABEL_LIMIT,
    LOG_TICKS,
    MONEY,
    OUTLIER_NOTE,
    TWO_LINES,
    USD,
    WIDTH,
    best_per_accelerator,
    clipped,
    family_color,
    keyed,
    message_layer,
    message_rows,
    option_shape,
    range_marks,
    ranking,
    rows,
    shaped,
    short_name,
)

PER_M = "$.3f"
PER_M_COLUMNS = ["usd_per_million_tokens", "usd_per_million_tokens_low", "usd_per_million_tokens_high"]


def best_options(frame: pl.DataFrame) -> pl.DataFrame:
    """Cheapest feasible serving option of each accelerator, cheapest per token first."""
    return best_per_accelerator(frame, "usd_per_million_tokens")


@functools.cache
def price_template() -> alt.LayerChart:
    y = alt.Y(
        "option:N",
        sort=alt.EncodingSortField("slot", op="min"),
        title=None,
        axis=alt.Axis(labelLimit=LABEL_LIMIT, labelExpr=TWO_LINES),
    )
    base = shaped(clipped(alt.Chart(alt.NamedData("options")), PER_M_COLUMNS[0], PER_M_COLUMNS))
    bars = base.mark_bar(opacity=0.85).encode(
        x=alt.X(
            "usd_per_million_tokens_shown:Q",
            title="USD per million output tokens",
            axis=alt.Axis(format="$.2f", labelOverlap=True),
        ),
        y=y,
        color=family_color(),
        tooltip=[
            alt.Tooltip("option:N", title="Option"),
            alt.Tooltip("name:N", title="Accelerator"),
            alt.Tooltip("chips:Q", format=","),
            alt.Tooltip("replicas:Q", title="Replicas"),
            alt.Tooltip("stack_name:N", title="Software"),
            alt.Tooltip("tpot_ms:Q", title="p99 ms per token", format=".1f"),
            alt.Tooltip("usd_per_million_tokens:Q", title="$ / M tokens", format=PER_M),
            alt.Tooltip("usd_per_million_tokens_at_ceiling:Q", title="$ / M at the load ceiling", format=PER_M),
        ],
    )
    return alt.layer(bars, *range_marks(base, y, "usd_per_million_tokens", "$.3~f"), message_layer()).properties(
        title=alt.TitleParams(
            "Serving cost by accelerator",
            subtitle=[
                "USD per million output tokens at your traffic",
                "line = range: price quotes and the model's error on published results",
                OUTLIER_NOTE,
            ],
        ),
        width=WIDTH,
        height=alt.Step(BAR_STEP),
    )


def price_datasets(frame: pl.DataFrame, top: int = 12) -> dict[str, list[dict]]:
    data = keyed(best_options(frame).head(top))
    columns = [
        "slot",
        "option",
        "family",
        "name",
        "chips",
        "replicas",
        "stack_name",
        "tpot_ms",
        *PER_M_COLUMNS,
        "usd_per_million_tokens_at_ceiling",
    ]
    return {
        "options": rows(data, columns),
        "message": message_rows(None if data.height else "No option meets the targets"),
    }


@functools.cache
def tradeoff_template() -> alt.LayerChart:
    curve = shaped(alt.Chart(alt.NamedData("curve")))
    x = alt.X(
        "tpot_ms:Q",
        title="p99 time per output token (ms, log)",
        scale=alt.Scale(type="log"),
        axis=alt.Axis(values=LOG_TICKS, format="~s"),
    )
    y = alt.Y("tokens_per_s_per_chip:Q", title="Output tokens/s per chip")
    line = curve.mark_line().encode(x=x, y=y, color=family_color(), detail="option:N")
    points = curve.mark_point(filled=True, size=40, opacity=1).encode(
        x=x,
        y=y,
        color=family_color(legend=False),
        shape=option_shape(),
        tooltip=[
            alt.Tooltip("option:N", title="Accelerator"),
            alt.Tooltip("load_pct:Q", title="Load (% of capacity)", format=".0f"),
            alt.Tooltip("tpot_ms:Q", title="p99 ms per token", format=".1f"),
            alt.Tooltip("tokens_per_s_per_chip:Q", title="tokens/s per chip", format=",.0f"),
        ],
    )
    target = alt.Chart(alt.NamedData("target")).mark_rule(strokeDash=[6, 4], color="#c00").encode(x="tpot_ms:Q")
    return alt.layer(line, points, target, message_layer()).properties(
        title=alt.TitleParams(
            "Throughput vs latency as the load grows",
            subtitle=[
                "each point is a load on one replica (prefill interleaved); red = your per-token target",
                "an option that splits prefill off: its decode replica, tokens shared with the prefill chips it needs",
            ],
        ),
        width=WIDTH,
        height=260,
    )


def tradeoff_datasets(
    curve: pl.DataFrame, tpot_target_ms: float | None, key: pl.DataFrame | None = None
) -> dict[str, list[dict]]:
    """``key``: the tab's :func:`~workbook.charts.common.ranking` (shapes as in the other charts)."""
    data = (
        keyed(curve.with_columns(cloud=pl.lit(""), pricing_model=pl.lit("")), key)
        .with_columns(
            option=pl.format("{} ({})", short_name(pl.col("name")), pl.col("layout")),
            load_pct=pl.col("load_fraction") * 100,
        )
        .filter((pl.col("load_pct").round(0) % 5) == 0)  # every 5%: enough points for the curve
    )
    return {
        "curve": rows(data, ["option", "slot", "family", "name", "load_pct", "tpot_ms", "tokens_per_s_per_chip"]),
        "target": [] if tpot_target_ms is None else [{"tpot_ms": tpot_target_ms}],
        "message": message_rows(None if data.height else "No configuration fits"),
    }


@functools.cache
def combined_template() -> alt.LayerChart:
    bars = (
        alt.Chart(alt.NamedData("combos"))
        .mark_bar()
        .encode(
            x=alt.X("usd:Q", title="Total cost (USD)", stack="zero", axis=alt.Axis(format=USD)),
            y=alt.Y(
                "strategy:N", sort=alt.EncodingSortField("rank", op="min"), title=None, axis=alt.Axis(labelLimit=240)
            ),
            color=alt.Color(
                "part:N",
                title="",
                # not family colours (those mean NVIDIA, AMD, TPU, Trainium in every other chart)
                scale=alt.Scale(domain=["training", "serving"], range=["#9d755d", "#d4c4b0"]),
                legend=alt.Legend(orient="bottom"),
            ),
            tooltip=[
                alt.Tooltip("strategy:N", title="Strategy"),
                alt.Tooltip("part:N", title="Part"),
                alt.Tooltip("option:N", title="Option"),
                alt.Tooltip("usd:Q", title="USD", format=MONEY),
            ],
        )
    )
    return alt.layer(bars, message_layer()).properties(
        title=alt.TitleParams(
            "Train, then serve",
            subtitle=[
                "best GPU and TPU option for each phase, over the chosen months",
                "a commitment bills its whole term",
            ],
        ),
        width=WIDTH,
    )


def combined_datasets(combos: pl.DataFrame | None, empty: str | None = None) -> dict[str, list[dict]]:
    """The train-then-serve totals; with none, ``empty`` (why: :func:`workbook.serving.lifecycle.nothing_to_total`)."""
    if combos is None or combos.height == 0:
        return {"combos": [], "message": message_rows(empty or "Needs a feasible training and serving option")}
    ranked = combos.with_row_index("rank")
    long = pl.concat(
        [
            ranked.select(
                "rank",
                "strategy",
                pl.lit("training").alias("part"),
                pl.col("train_option").alias("option"),
                pl.col("train_usd").alias("usd"),
            ),
            ranked.select(
                "rank",
                "strategy",
                pl.lit("serving").alias("part"),
                pl.col("serve_option").alias("option"),
                pl.col("serve_usd").alias("usd"),
            ),
        ]
    )
    return {"combos": long.to_dicts(), "message": []}


SERVING_COMPONENTS = ("weights", "kv_cache", "overhead")  # what a served replica holds (no gradients, optimizer)


def memory_long(frame: pl.DataFrame) -> pl.DataFrame:
    """Serving memory per chip as the long frame ``charts.memory`` draws (weights, KV cache, overhead vs HBM)."""
    keys = ["accelerator_id", "name", "chips_per_replica", "hbm_gb"]
    return (
        best_options(frame)
        .head(8)
        .select(*keys, *(f"{c}_gb" for c in SERVING_COMPONENTS))
        .rename({"chips_per_replica": "chips"})
        .unpivot(index=["accelerator_id", "name", "chips", "hbm_gb"], variable_name="component", value_name="gb")
        .with_columns(pl.col("component").str.strip_suffix("_gb"))
    )


def memory_template() -> alt.LayerChart:
    """The Train tab's memory chart, its legend listing only what a served replica holds."""
    return training.memory_template(SERVING_COMPONENTS)


TEMPLATES = {
    "price": price_template,
    "tradeoff": tradeoff_template,
    "memory": memory_template,
    "combined": combined_template,
}


CURVE_OPTIONS = 3  # cheapest accelerators drawn on the throughput-vs-latency chart


def tab_datasets(
    frame: pl.DataFrame,
    scenario: serving.ServeScenario,
    catalog,
    combos: pl.DataFrame | None,
    combos_empty: str | None = None,
) -> dict[str, dict]:
    """Every Serve-tab chart's datasets: ``frame`` from ``serving.evaluate_serving``, ``combos`` from
    ``serving.train_then_serve`` (None until a training frame exists) and why it is empty (``combos_empty``)."""
    best = best_options(frame)
    key = ranking(best)  # one shape per option across the tab's charts
    curve = serving.batch_curve(scenario, best.head(CURVE_OPTIONS), catalog)
    return {
        "price": price_datasets(frame),
        "tradeoff": tradeoff_datasets(curve, scenario.tpot_ms, key),
        "memory": training.memory_datasets(memory_long(frame), key),
        "combined": combined_datasets(combos, combos_empty),
    }
