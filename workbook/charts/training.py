"""Chart builders: options frame -> ``alt.Chart``. Pure (no widgets, no display), testable without a browser.

Each chart is a data-free *template* (named datasets only) plus a *datasets* function (frame -> rows).
``cost_by_option(frame)`` etc. join the two into a complete chart. The app builds each template's
spec once and swaps only the datasets on every control change, which keeps a slider move fast.
"""

from __future__ import annotations

import functools

import altair as alt
import polars as pl

from workbook.charts.common import (
    BAR_STEP,
    COMPONENT_ORDER,
    LABEL_LIMIT,
    LOG_TICKS,
    MONEY,
    OUTLIER_NOTE,
    OUTLIER_RATIO,
    TWO_LINES,
    USD,
    WIDTH,
    best_per_accelerator,
    clipped,
    component_scale,
    family_color,
    keyed,
    message_layer,
    message_rows,
    money_axis,
    option_shape,
    range_marks,
    ranking,
    rows,
    shaped,
    short_name,
    with_option,
)
from workbook.model.memory import COMPONENTS as TRAINING_COMPONENTS
from workbook.training import options

TITLES = {  # one name per chart: its title in the page and its download's label
    "cost": "Training cost by accelerator",
    "frontier": "Cost vs days to finish",
    "memory": "Memory per chip",
    "size": "Cost and chips vs model size",
}
FINISH_DAYS = "Days to finish: porting + training (log scale)"


# ---- 1. cost by option --------------------------------------------------------------------------
@functools.cache
def cost_template() -> alt.LayerChart:
    y = alt.Y(
        "option:N",
        sort=alt.EncodingSortField("slot", op="min", order="ascending"),
        title=None,
        axis=alt.Axis(labelLimit=LABEL_LIMIT, labelExpr=TWO_LINES),
    )
    base = shaped(
        clipped(alt.Chart(alt.NamedData("options")), "cost_usd", ["cost_usd", "cost_usd_low", "cost_usd_high"])
    )
    bars = base.mark_bar(opacity=0.85).encode(
        x=alt.X("cost_usd_shown:Q", title="Total cost (USD)", axis=alt.Axis(format=USD, labelOverlap=True)),
        y=y,
        color=family_color(),
        tooltip=[
            alt.Tooltip("name:N", title="Accelerator"),
            alt.Tooltip("cloud:N", title="Cloud"),
            alt.Tooltip("pricing_model:N", title="Pricing"),
            alt.Tooltip("chips:Q", format=","),
            alt.Tooltip("train_days:Q", title="Training days", format=".1f"),
            alt.Tooltip("finish_days:Q", title="Days to finish (porting + training)", format=".1f"),
            alt.Tooltip("cost_usd:Q", title="Cost", format=MONEY),
            alt.Tooltip("cost_usd_low:Q", title="Low", format=MONEY),
            alt.Tooltip("cost_usd_high:Q", title="High", format=MONEY),
        ],
    )
    return alt.layer(bars, *range_marks(base, y, "cost_usd", "$.3s"), message_layer()).properties(
        title=alt.TitleParams(
            TITLES["cost"], subtitle=["cheapest cloud and pricing for each; black line = low-high range", OUTLIER_NOTE]
        ),
        width=WIDTH,
        height=alt.Step(BAR_STEP),
    )


def cost_datasets(frame: pl.DataFrame, top: int = 12) -> dict[str, list[dict]]:
    data = keyed(best_options(frame).head(top))
    columns = [
        "slot",
        "option",
        "family",
        "name",
        "cloud",
        "pricing_model",
        "chips",
        "train_days",
        "finish_days",
        "cost_usd",
        "cost_usd_low",
        "cost_usd_high",
    ]
    return {
        "options": rows(data, columns),
        "message": message_rows(None if data.height else "No option meets the constraints"),
    }


def cost_by_option(frame: pl.DataFrame) -> alt.LayerChart:
    """Bars: central training cost of each accelerator's best option, with its low-high range."""
    return cost_template().properties(datasets=cost_datasets(frame))


# ---- 2. cost vs days to finish -----------------------------------------------------------------
@functools.cache
def frontier_template() -> alt.LayerChart:
    base = clipped(alt.Chart(alt.NamedData("points")), "cost_usd", ["cost_usd"])
    drawn = shaped(base.transform_filter("!datum.clipped"))
    x = alt.X(
        "finish_days:Q", title=FINISH_DAYS, scale=alt.Scale(type="log"), axis=alt.Axis(values=LOG_TICKS, format="~s")
    )
    y = alt.Y("cost_usd:Q", axis=money_axis("y", "Total cost (USD)"))  # from zero: a 4% step must not look like 100%
    lines = drawn.mark_line().encode(x=x, y=y, color=family_color(), detail="option:N")
    points = drawn.mark_point(filled=True, size=60, opacity=1).encode(
        x=x,
        y=y,
        color=family_color(legend=False),
        shape=option_shape(),
        tooltip=[
            alt.Tooltip("option:N", title="Option"),
            alt.Tooltip("name:N", title="Accelerator"),
            alt.Tooltip("chips:Q", format=","),
            alt.Tooltip("start_delay_days:Q", title="Porting days", format=".1f"),
            alt.Tooltip("train_days:Q", title="Training days", format=".1f"),
            alt.Tooltip("finish_days:Q", title="Days to finish", format=".1f"),
            alt.Tooltip("cost_usd:Q", title="Cost", format=MONEY),
        ],
    )
    left_out = (
        base.transform_filter("datum.clipped")
        .transform_aggregate(points="count()", cap="max(cap)")
        .transform_calculate(
            text="datum.points + (datum.points == 1 ? ' point' : ' points') + ' above ' + format(datum.cap, '$.3s')"
            " + ' not drawn'"
        )
        .mark_text(align="right", baseline="top", color="#666", fontSize=11)
        .encode(x=alt.value({"expr": "width - 4"}), y=alt.value(4), text="text:N")
    )
    deadline = alt.Chart(alt.NamedData("deadline"))
    rule = deadline.mark_rule(strokeDash=[6, 4], color="#c00").encode(x="deadline:Q")
    # At the foot of the rule: with the cost axis from zero the options' line runs along the top.
    label = deadline.mark_text(align="left", dx=4, baseline="bottom", color="#c00").encode(
        x="deadline:Q", y=alt.value({"expr": "height - 4"}), text="label:N"
    )
    return alt.layer(lines, points, left_out, rule, label, message_layer()).properties(
        title=alt.TitleParams(
            TITLES["frontier"],
            subtitle=[
                "each point is a chip count; more chips finish sooner; porting time comes first",
                f"a point over {OUTLIER_RATIO}x the median cost is left out (counted top right)",
            ],
        ),
        width=WIDTH,
        height=260,
    )


def frontier_datasets(
    sweep_frame: pl.DataFrame, deadline_days: float | None, key: pl.DataFrame | None = None
) -> dict[str, list[dict]]:
    """``key``: the tab's :func:`~workbook.charts.common.ranking` (shapes as in the other charts)."""
    data = keyed(sweep_frame.filter(pl.col("feasible")), key)
    deadline = (
        [] if deadline_days is None else [{"deadline": deadline_days, "label": f"deadline: {deadline_days:g} days"}]
    )
    columns = ["option", "slot", "family", "name", "chips", "start_delay_days", "train_days", "finish_days", "cost_usd"]
    return {
        "points": rows(data, columns),
        "deadline": deadline,
        "message": message_rows(None if data.height else "No feasible option to plot"),
    }


def frontier(sweep_frame: pl.DataFrame, deadline_days: float | None) -> alt.LayerChart:
    """Lines: cost vs days to finish (porting + training) as the chip count changes, one line per option; the
    deadline dashed."""
    return frontier_template().properties(datasets=frontier_datasets(sweep_frame, deadline_days))


# ---- 3. memory per chip ------------------------------------------------------------------------
@functools.cache
def memory_template(components: tuple[str, ...] = TRAINING_COMPONENTS) -> alt.LayerChart:
    """Memory per chip by component (``components``: those the tab draws, in stacking order; a training run holds
    no KV cache)."""
    y = alt.Y(
        "label:N",
        sort=alt.EncodingSortField("slot", op="min", order="ascending"),
        title=None,
        axis=alt.Axis(labelLimit=LABEL_LIMIT),
    )
    bars = (
        alt.Chart(alt.NamedData("parts"))
        .mark_bar()
        .encode(
            x=alt.X("gb:Q", title="GB per chip", stack="zero"),
            y=y,
            color=alt.Color(
                "component:N",
                scale=component_scale(components),
                sort=list(components),
                title="Component",
                legend=alt.Legend(orient="bottom", columns=3),
            ),
            order=alt.Order("component_rank:Q"),
            tooltip=[
                alt.Tooltip("name:N", title="Accelerator"),
                alt.Tooltip("component:N", title="Component"),
                alt.Tooltip("gb:Q", title="GB", format=".1f"),
            ],
        )
    )
    capacity = alt.Chart(alt.NamedData("capacity"))
    tick = capacity.mark_tick(color="#c00", thickness=3, size=22).encode(
        x="hbm_gb:Q", y=y, tooltip=[alt.Tooltip("hbm_gb:Q", title="HBM capacity (GB)", format=".0f")]
    )
    # The option's family colour and shape, as in the other charts, at the end of its bar.
    marker = (
        shaped(capacity)
        .mark_point(filled=True, size=60, stroke="white", strokeWidth=1, opacity=1)
        .encode(x="total_gb:Q", y=y, color=family_color(legend=False), shape=option_shape(legend=False))
    )
    return (
        alt.layer(bars, tick, marker, message_layer())
        .resolve_scale(color="independent")
        .properties(
            title=alt.TitleParams(
                TITLES["memory"],
                subtitle="by component; red tick = HBM capacity; marker = the option's family and shape",
            ),
            width=WIDTH,
        )
    )


def memory_datasets(long_frame: pl.DataFrame, key: pl.DataFrame | None = None) -> dict[str, list[dict]]:
    """``key``: the tab's :func:`~workbook.charts.common.ranking` (shapes as in the other charts)."""
    data = keyed(long_frame.with_columns(cloud=pl.lit(""), pricing_model=pl.lit("")), key).with_columns(
        label=pl.format(
            "{} ({} {})",
            short_name(pl.col("name")),
            pl.col("chips"),
            pl.when(pl.col("chips") == 1).then(pl.lit("chip")).otherwise(pl.lit("chips")),
        ),
        component_rank=pl.col("component").replace_strict(
            {c: i for i, c in enumerate(COMPONENT_ORDER)}, return_dtype=pl.Int64
        ),
    )
    capacity = data.group_by("label", maintain_order=True).agg(
        pl.col("slot", "family", "option", "name", "hbm_gb").first(), total_gb=pl.col("gb").sum()
    )
    return {
        "parts": rows(data, ["label", "slot", "name", "component", "component_rank", "gb"]),
        "capacity": rows(capacity, ["label", "slot", "family", "option", "name", "hbm_gb", "total_gb"]),
        "message": message_rows(None if data.height else "No option to show"),
    }


def memory(long_frame: pl.DataFrame) -> alt.LayerChart:
    """Stacked bars: memory per chip by component, with each chip's HBM capacity marked."""
    return memory_template().properties(datasets=memory_datasets(long_frame))


# ---- 4. cost and time vs model size -------------------------------------------------------------
@functools.cache
def size_template() -> alt.HConcatChart:
    decades = [10.0**k for k in range(6, 15)]  # ticks at powers of ten only: the panels are narrow
    x = alt.X(
        "params:Q",
        title="Parameters (log scale)",
        scale=alt.Scale(type="log"),
        axis=alt.Axis(format="~s", values=decades, labelExpr="replace(datum.label, 'G', 'B')"),
    )  # 1G params = 1B
    tooltip = [
        alt.Tooltip("option:N", title="Option"),
        alt.Tooltip("name:N", title="Accelerator"),
        alt.Tooltip("params:Q", title="Parameters", format=".3s"),
        alt.Tooltip("chips:Q", format=","),
        alt.Tooltip("finish_days:Q", title="Days to finish", format=".1f"),
        alt.Tooltip("cost_usd:Q", title="Cost", format=MONEY),
    ]
    base = shaped(alt.Chart(alt.NamedData("points"))).properties(width=WIDTH // 2, height=220)
    now = alt.Chart(alt.NamedData("now")).mark_rule(strokeDash=[4, 3], color="#666").encode(x="params:Q")
    # the sweep's whole range, unseen: a line that ends early reads as an end, not as a shorter axis
    extent = alt.Chart(alt.NamedData("extent")).mark_point(opacity=0).encode(x="params:Q")
    cross = (
        alt.Chart(alt.NamedData("crossings"))
        .mark_rule(color="#9467bd", strokeWidth=2)
        .encode(x="params:Q", tooltip=[alt.Tooltip("text:N", title="Crossover")])
    )

    def panel(y: alt.Y) -> list[alt.Chart]:
        line = base.mark_line().encode(x=x, y=y, color=family_color(), detail="option:N")
        points = base.mark_point(filled=True, size=50, opacity=1).encode(
            x=x, y=y, color=family_color(legend=False), shape=option_shape(), tooltip=tooltip
        )
        return [line, points]

    cost_y = alt.Y(
        "cost_usd:Q", title="Total cost (USD)", scale=alt.Scale(type="log"), axis=alt.Axis(format=USD, tickCount=5)
    )
    chips_y = alt.Y(
        "chips:Q",
        title="Chips needed for the target days",
        scale=alt.Scale(type="log"),
        axis=alt.Axis(format="~s", tickCount=5),
    )
    return alt.hconcat(
        alt.layer(*panel(cost_y), now, extent, cross, message_layer()), alt.layer(*panel(chips_y), now, extent, cross)
    ).properties(
        title=alt.TitleParams(
            TITLES["size"],
            subtitle=[
                "leading GPU and TPU options, sized for the target days; dashed = your model",
                "purple = where the cheaper option flips",
                "a line ends where the option cannot get enough chips to finish in the target days",
            ],
        )
    )


def sized_for_target(sweep_frame: pl.DataFrame) -> pl.DataFrame:
    """The sweep's points an option can size for the target days: feasible, and not held to fewer chips than the
    target needs (the largest documented job, or the chips its cloud rents without a reservation). Beyond them the
    option would take longer than the target, so its line ends there."""
    return sweep_frame.filter(pl.col("feasible") & ~pl.col("chips_capped"))


def crossings(sweep_frame: pl.DataFrame) -> pl.DataFrame:
    """Model sizes (geometric midpoints) where the cheaper of two options changes."""
    data = with_option(sized_for_target(sweep_frame))
    options = data["option"].unique(maintain_order=True).to_list()
    if len(options) != 2:
        return pl.DataFrame(schema={"params": pl.Float64, "text": pl.String})
    wide = (
        data.pivot(on="option", index="params", values="cost_usd")
        .drop_nulls()
        .sort("params")
        .with_columns(sign=(pl.col(options[0]) < pl.col(options[1])))
        .with_columns(prev_params=pl.col("params").shift(), flipped=pl.col("sign") != pl.col("sign").shift())
    )
    flips = wide.filter(pl.col("flipped").fill_null(False))
    return flips.select(
        params=(pl.col("params") * pl.col("prev_params")).sqrt(),
        text=pl.when(pl.col("sign"))
        .then(pl.lit(f"{options[0]} becomes cheaper"))
        .otherwise(pl.lit(f"{options[1]} becomes cheaper")),
    )


def size_datasets(
    sweep_frame: pl.DataFrame, current_params: float, key: pl.DataFrame | None = None
) -> dict[str, list[dict]]:
    """``key``: the tab's :func:`~workbook.charts.common.ranking` (shapes as in the other charts)."""
    data = keyed(sized_for_target(sweep_frame), key)
    return {
        "points": rows(data, ["option", "slot", "family", "name", "params", "chips", "finish_days", "cost_usd"]),
        "now": [{"params": current_params}],
        "extent": [{"params": p} for p in (sweep_frame["params"].min(), sweep_frame["params"].max()) if p is not None],
        "crossings": crossings(sweep_frame).to_dicts(),
        "message": message_rows(None if data.height else "No feasible option to plot"),
    }


def size_sweep(sweep_frame: pl.DataFrame, current_params: float) -> alt.HConcatChart:
    """Cost and chips vs model size (each sized for the target days); a purple rule where the cheaper one flips."""
    return size_template().properties(datasets=size_datasets(sweep_frame, current_params))


TEMPLATES = {"cost": cost_template, "frontier": frontier_template, "memory": memory_template, "size": size_template}

# ---- what the Train tab (and the report) shows ----------------------------------------------------
FRONTIER_DAYS = [3, 7, 14, 30, 60, 120, 240, 365]
SIZE_SWEEP_PARAMS = [10 ** (8 + i * 0.5) for i in range(10)]  # 100M .. 3.2T
SWEEPS = {"days": FRONTIER_DAYS, "params": SIZE_SWEEP_PARAMS}  # evaluated with the main job in one pass
FRONTIER_OPTIONS = 5  # cheapest accelerators drawn on the cost-vs-time frontier
MEMORY_OPTIONS = 8  # cheapest accelerators in the memory chart


def best_options(frame: pl.DataFrame) -> pl.DataFrame:
    """Cheapest feasible option of each accelerator, cheapest first."""
    return best_per_accelerator(frame, "cost_usd")


def tab_datasets(everything: pl.DataFrame, deadline_days: float | None, current_params: float) -> dict[str, dict]:
    """Every Train-tab chart's datasets from one evaluation of the main job and the :data:`SWEEPS`
    (``options.evaluate_full(..., jobs_frame=options.job_frame(scenario, **SWEEPS))``)."""
    main = everything.filter(pl.col("sweep") == "main")
    best = best_options(main)
    key = ranking(best)  # one shape per option across the tab's charts
    leaders = best.group_by("kind", maintain_order=True).first().filter(pl.col("kind").is_in(["gpu", "tpu"]))
    return {
        "cost": cost_datasets(main),
        "frontier": frontier_datasets(
            options.picked(everything.filter(pl.col("sweep") == "days"), best.head(FRONTIER_OPTIONS)),
            deadline_days,
            key,
        ),
        "memory": memory_datasets(options.memory_breakdown(best.head(MEMORY_OPTIONS)), key),
        "size": size_datasets(
            options.picked(everything.filter(pl.col("sweep") == "params"), leaders), current_params, key
        ),
    }


def tab_charts(
    everything: pl.DataFrame, deadline_days: float | None, current_params: float
) -> dict[str, alt.TopLevelMixin]:
    """The Train tab's charts as complete altair charts (report, exports, notebooks)."""
    datasets = tab_datasets(everything, deadline_days, current_params)
    return {name: TEMPLATES[name]().properties(datasets=data) for name, data in datasets.items()}
