"""Chart builders: options frame -> ``alt.Chart``. Pure (no widgets, no display), testable without a browser.

Each chart is a data-free *template* (named datasets only) plus a *datasets* function (frame -> rows).
``cost_by_option(frame)`` etc. join the two into a complete chart. The app builds each template's
spec once and swaps only the datasets on every control change, which keeps a slider move fast.
"""

from __future__ import annotations

import functools

import altair as alt
import polars as pl

KIND_COLORS = alt.Scale(domain=["gpu", "tpu", "trainium"], range=["#4c78a8", "#f58518", "#54a24b"])
KIND_LEGEND = alt.Legend(title="Family", orient="bottom",
                         labelExpr="{'gpu': 'GPU', 'tpu': 'TPU', 'trainium': 'Trainium'}[datum.label]")
COMPONENT_ORDER = ["weights", "gradients", "optimizer", "activations", "kv_cache", "overhead"]
COMPONENT_COLORS = alt.Scale(domain=COMPONENT_ORDER,
                             range=["#1f4e79", "#4c78a8", "#9ecae9", "#72b7b2", "#b279a2", "#bab0ac"])
WIDTH = 260  # plot width; with axis labels two charts side by side fit a 1600 px window
LOG_TICKS = [1, 3, 10, 30, 100, 300, 1000, 3000, 10000]  # 1-3-10 ticks on narrow log axes: no crowded labels
LABEL_LIMIT = 200  # px of an option name on a bar chart axis (the full name is in the tooltip)
USD = "$.3s"
MONEY = "$,.0f"


def best_per_accelerator(frame: pl.DataFrame) -> pl.DataFrame:
    """Cheapest feasible option of each accelerator, cheapest first."""
    return (frame.filter(pl.col("feasible")).sort("cost_usd")
            .unique(subset="accelerator_id", keep="first", maintain_order=True))


def _rows(frame: pl.DataFrame, columns: list[str]) -> list[dict]:
    return frame.select(columns).to_dicts()


def _with_option(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.with_columns(option=pl.format("{} · {} · {}", pl.col("name"), pl.col("cloud"), pl.col("pricing_model")))


def _message(text: str | None) -> list[dict]:
    return [] if text is None else [{"text": text}]


def _message_layer(height: int = 60) -> alt.Chart:
    return alt.Chart(alt.NamedData("message")).mark_text(fontSize=14, color="#666", baseline="top").encode(
        text="text:N", y=alt.value(height // 2))


# ---- 1. cost by option --------------------------------------------------------------------------
@functools.cache
def cost_template() -> alt.LayerChart:
    y = alt.Y("option:N", sort=alt.EncodingSortField("rank", op="min", order="ascending"), title=None,
              axis=alt.Axis(labelLimit=LABEL_LIMIT))
    base = alt.Chart(alt.NamedData("options"))
    bars = base.mark_bar(opacity=0.85).encode(
        x=alt.X("cost_usd:Q", title="Total cost (USD)", axis=alt.Axis(format=USD, labelOverlap=True)), y=y,
        color=alt.Color("kind:N", scale=KIND_COLORS, legend=KIND_LEGEND),
        tooltip=[alt.Tooltip("name:N", title="Accelerator"), alt.Tooltip("cloud:N", title="Cloud"),
                 alt.Tooltip("pricing_model:N", title="Pricing"), alt.Tooltip("chips:Q", format=","),
                 alt.Tooltip("train_days:Q", title="Days", format=".1f"),
                 alt.Tooltip("cost_usd:Q", title="Cost", format=MONEY),
                 alt.Tooltip("cost_usd_low:Q", title="Low", format=MONEY),
                 alt.Tooltip("cost_usd_high:Q", title="High", format=MONEY)])
    band = base.mark_rule(color="#333", strokeWidth=1.5).encode(x="cost_usd_low:Q", x2="cost_usd_high:Q", y=y)
    return alt.layer(bars, band, _message_layer()).properties(
        title=alt.TitleParams("Training cost by accelerator",
                              subtitle="cheapest cloud and pricing for each; black line = low-high range"), width=WIDTH)


def cost_datasets(frame: pl.DataFrame, top: int = 12) -> dict[str, list[dict]]:
    data = _with_option(best_per_accelerator(frame).head(top)).with_row_index("rank")
    columns = ["rank", "option", "name", "kind", "cloud", "pricing_model", "chips", "train_days", "cost_usd", "cost_usd_low",
               "cost_usd_high"]
    return {"options": _rows(data, columns), "message": _message(None if data.height else "No option meets the constraints")}


def cost_by_option(frame: pl.DataFrame) -> alt.LayerChart:
    """Bars: central training cost of each accelerator's best option, with its low-high range."""
    return cost_template().properties(datasets=cost_datasets(frame))


# ---- 2. cost vs time frontier ------------------------------------------------------------------
@functools.cache
def frontier_template() -> alt.LayerChart:
    lines = alt.Chart(alt.NamedData("points")).mark_line(point=True).encode(
        x=alt.X("train_days:Q", title="Days to train (log scale)", scale=alt.Scale(type="log"),
                axis=alt.Axis(values=LOG_TICKS)),
        y=alt.Y("cost_usd:Q", title="Total cost (USD)", axis=alt.Axis(format=USD), scale=alt.Scale(zero=False)),
        color=alt.Color("option:N", title="Option", legend=alt.Legend(orient="bottom", columns=1, labelLimit=380)),
        tooltip=[alt.Tooltip("option:N", title="Option"), alt.Tooltip("chips:Q", format=","),
                 alt.Tooltip("train_days:Q", title="Days", format=".1f"), alt.Tooltip("cost_usd:Q", title="Cost", format=MONEY)])
    deadline = alt.Chart(alt.NamedData("deadline"))
    rule = deadline.mark_rule(strokeDash=[6, 4], color="#c00").encode(x="deadline:Q")
    label = deadline.mark_text(align="left", dx=4, baseline="top", color="#c00").encode(
        x="deadline:Q", y=alt.value(4), text="label:N")
    return alt.layer(lines, rule, label, _message_layer()).properties(
        title=alt.TitleParams("Cost vs time to train", subtitle="each point is a chip count; more chips finish sooner"),
        width=WIDTH, height=260)


def frontier_datasets(sweep_frame: pl.DataFrame, deadline_days: float | None) -> dict[str, list[dict]]:
    data = _with_option(sweep_frame.filter(pl.col("feasible")))
    deadline = [] if deadline_days is None else [{"deadline": deadline_days, "label": f"deadline: {deadline_days:g} days"}]
    return {"points": _rows(data, ["option", "chips", "train_days", "cost_usd"]), "deadline": deadline,
            "message": _message(None if data.height else "No feasible option to plot")}


def frontier(sweep_frame: pl.DataFrame, deadline_days: float | None) -> alt.LayerChart:
    """Lines: cost vs time to train as the chip count changes, one line per option; the deadline dashed."""
    return frontier_template().properties(datasets=frontier_datasets(sweep_frame, deadline_days))


# ---- 3. memory per chip ------------------------------------------------------------------------
@functools.cache
def memory_template() -> alt.LayerChart:
    y = alt.Y("label:N", sort=alt.EncodingSortField("rank", op="min", order="ascending"), title=None,
              axis=alt.Axis(labelLimit=LABEL_LIMIT))
    bars = alt.Chart(alt.NamedData("parts")).mark_bar().encode(
        x=alt.X("gb:Q", title="GB per chip", stack="zero"), y=y,
        color=alt.Color("component:N", scale=COMPONENT_COLORS, sort=COMPONENT_ORDER, title="Component",
                        legend=alt.Legend(orient="bottom", columns=3)),
        order=alt.Order("component_rank:Q"),
        tooltip=[alt.Tooltip("name:N", title="Accelerator"), alt.Tooltip("component:N", title="Component"),
                 alt.Tooltip("gb:Q", title="GB", format=".1f")])
    capacity = alt.Chart(alt.NamedData("capacity")).mark_tick(color="#c00", thickness=3, size=22).encode(
        x="hbm_gb:Q", y=y, tooltip=[alt.Tooltip("hbm_gb:Q", title="HBM capacity (GB)", format=".0f")])
    return alt.layer(bars, capacity, _message_layer()).properties(
        title=alt.TitleParams("Memory per chip", subtitle="by component; red tick = HBM capacity"), width=WIDTH)


def memory_datasets(long_frame: pl.DataFrame) -> dict[str, list[dict]]:
    labels = long_frame.select("accelerator_id").unique(maintain_order=True).with_row_index("rank")
    data = (long_frame.join(labels, on="accelerator_id")
            .with_columns(label=pl.format("{} ({} chips)", pl.col("name"), pl.col("chips")),
                          component_rank=pl.col("component").replace_strict(
                              {c: i for i, c in enumerate(COMPONENT_ORDER)}, return_dtype=pl.Int64)))
    capacity = data.unique("label", maintain_order=True)
    return {"parts": _rows(data, ["label", "rank", "name", "component", "component_rank", "gb"]),
            "capacity": _rows(capacity, ["label", "rank", "hbm_gb"]),
            "message": _message(None if data.height else "No option to show")}


def memory(long_frame: pl.DataFrame) -> alt.LayerChart:
    """Stacked bars: memory per chip by component, with each chip's HBM capacity marked."""
    return memory_template().properties(datasets=memory_datasets(long_frame))


# ---- 4. cost and time vs model size -------------------------------------------------------------
@functools.cache
def size_template() -> alt.HConcatChart:
    decades = [10.0 ** k for k in range(6, 15)]  # ticks at powers of ten only: the panels are narrow
    x = alt.X("params:Q", title="Parameters (log scale)", scale=alt.Scale(type="log"),
              axis=alt.Axis(format="~s", values=decades, labelExpr="replace(datum.label, 'G', 'B')"))  # 1G params = 1B
    color = alt.Color("option:N", title="Option", legend=alt.Legend(orient="bottom", columns=1, labelLimit=380))
    tooltip = [alt.Tooltip("option:N", title="Option"), alt.Tooltip("params:Q", title="Parameters", format=".3s"),
               alt.Tooltip("chips:Q", format=","), alt.Tooltip("train_days:Q", title="Days", format=".1f"),
               alt.Tooltip("cost_usd:Q", title="Cost", format=MONEY)]
    base = alt.Chart(alt.NamedData("points")).properties(width=WIDTH // 2, height=220)
    now = alt.Chart(alt.NamedData("now")).mark_rule(strokeDash=[4, 3], color="#666").encode(x="params:Q")
    cross = alt.Chart(alt.NamedData("crossings")).mark_rule(color="#9467bd").encode(
        x="params:Q", tooltip=[alt.Tooltip("text:N", title="Crossover")])
    cost_panel = base.mark_line(point=True).encode(
        x=x, y=alt.Y("cost_usd:Q", title="Total cost (USD)", scale=alt.Scale(type="log"),
                     axis=alt.Axis(format=USD, tickCount=5)), color=color, tooltip=tooltip)
    chips_panel = base.mark_line(point=True).encode(
        x=x, y=alt.Y("chips:Q", title="Chips needed for the target days", scale=alt.Scale(type="log"),
                     axis=alt.Axis(format="~s", tickCount=5)),
        color=color, tooltip=tooltip)
    return alt.hconcat(alt.layer(cost_panel, now, cross, _message_layer()), alt.layer(chips_panel, now, cross)).properties(
        title=alt.TitleParams("Cost and chips vs model size", subtitle=[
            "leading GPU and TPU options, sized for the target days; dashed = your model",
            "purple = where the cheaper option flips; a line ends where no documented job is big enough"]))


def crossings(sweep_frame: pl.DataFrame) -> pl.DataFrame:
    """Model sizes (geometric midpoints) where the cheaper of two options changes."""
    data = _with_option(sweep_frame.filter(pl.col("feasible")))
    options = data["option"].unique(maintain_order=True).to_list()
    if len(options) != 2:
        return pl.DataFrame(schema={"params": pl.Float64, "text": pl.String})
    wide = (data.pivot(on="option", index="params", values="cost_usd").drop_nulls().sort("params")
            .with_columns(sign=(pl.col(options[0]) < pl.col(options[1])))
            .with_columns(prev_params=pl.col("params").shift(), flipped=pl.col("sign") != pl.col("sign").shift()))
    flips = wide.filter(pl.col("flipped").fill_null(False))
    return flips.select(
        params=(pl.col("params") * pl.col("prev_params")).sqrt(),
        text=pl.when(pl.col("sign")).then(pl.lit(f"{options[0]} becomes cheaper"))
        .otherwise(pl.lit(f"{options[1]} becomes cheaper")))


def size_datasets(sweep_frame: pl.DataFrame, current_params: float) -> dict[str, list[dict]]:
    data = _with_option(sweep_frame.filter(pl.col("feasible")))
    return {"points": _rows(data, ["option", "params", "chips", "train_days", "cost_usd"]),
            "now": [{"params": current_params}], "crossings": crossings(sweep_frame).to_dicts(),
            "message": _message(None if data.height else "No feasible option to plot")}


def size_sweep(sweep_frame: pl.DataFrame, current_params: float) -> alt.HConcatChart:
    """Cost and chips vs model size (each sized for the target days); a purple rule where the cheaper one flips."""
    return size_template().properties(datasets=size_datasets(sweep_frame, current_params))


TEMPLATES = {"cost": cost_template, "frontier": frontier_template, "memory": memory_template, "size": size_template}


def template_specs(templates: dict) -> dict[str, dict]:
    """Each template as its Vega-Lite dict, for the app's chart grid. Not schema-validated here: that costs ~0.15 s
    of every kernel start (20 visitors at once share 2 cores); tests validate every template instead."""
    return {name: template().to_dict(validate=False) for name, template in templates.items()}


# ---- backtest (validation notebook) -------------------------------------------------------------
def backtest(frame: pl.DataFrame) -> alt.LayerChart:
    """Log-log scatter of predicted vs reported chip-hours, the y = x line and a +-25% band, by family."""
    data = frame.select("run_id", "model", "family", "accelerator_id", "reported_chip_hours", "predicted_chip_hours",
                        "error").with_columns(off_by=pl.col("error").exp())
    low, high = data["reported_chip_hours"].min() / 2, data["reported_chip_hours"].max() * 2
    line = pl.DataFrame({"x": [low, high]})
    band = line.with_columns(lower=pl.col("x") / 1.25, upper=pl.col("x") * 1.25)
    scale = alt.Scale(type="log", domain=[low, high])
    x = alt.X("reported_chip_hours:Q", title="Reported chip-hours (log)", scale=scale, axis=alt.Axis(format=".1s"))
    points = alt.Chart(data).mark_circle(size=70, opacity=0.85).encode(
        x=x, y=alt.Y("predicted_chip_hours:Q", title="Predicted chip-hours (log)", scale=scale, axis=alt.Axis(format=".1s")),
        color=alt.Color("family:N", title="Accelerator family"),
        tooltip=[alt.Tooltip("model:N", title="Run"), alt.Tooltip("accelerator_id:N", title="Accelerator"),
                 alt.Tooltip("reported_chip_hours:Q", title="Reported", format=",.0f"),
                 alt.Tooltip("predicted_chip_hours:Q", title="Predicted", format=",.0f"),
                 alt.Tooltip("off_by:Q", title="Predicted / reported", format=".2f")])
    diagonal = alt.Chart(line).mark_line(color="#333").encode(x=alt.X("x:Q", scale=scale), y=alt.Y("x:Q", scale=scale))
    area = alt.Chart(band).mark_area(opacity=0.35, color="#9ecae9").encode(
        x=alt.X("x:Q", scale=scale), y=alt.Y("lower:Q", scale=scale), y2="upper:Q")
    return alt.layer(area, diagonal, points).properties(
        width=480, height=420, title=alt.TitleParams("Predicted vs reported chip-hours of published training runs",
                                                     subtitle="line: perfect prediction; shaded band: within 25%"))
