"""What every chart shares: family colours, widths, formats, the empty-state message layer, spec export.

Each chart is a data-free *template* (named datasets only) plus a *datasets* function (frame -> rows).
The app builds each template's spec once and swaps only the datasets on every control change.
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path

import altair as alt
import polars as pl

from workbook import cache
from workbook.catalog import shipped_kinds

COMPONENT_ORDER = ["weights", "gradients", "optimizer", "activations", "kv_cache", "overhead"]
COMPONENT_COLORS = alt.Scale(
    domain=COMPONENT_ORDER, range=["#1f4e79", "#4c78a8", "#9ecae9", "#72b7b2", "#b279a2", "#bab0ac"]
)
WIDTH = 260  # plot width; with axis labels two charts side by side fit a 1600 px window
LOG_TICKS = [1, 3, 10, 30, 100, 300, 1000, 3000, 10000]  # 1-3-10 ticks on narrow log axes: no crowded labels
LABEL_LIMIT = 200  # px of an option name on a bar chart axis (the full name is in the tooltip)
USD = "$.3s"
MONEY = "$,.0f"


def kind_color() -> alt.Color:
    """Colour by accelerator kind, with the colours and legend labels of ``data/kinds.csv``."""
    kinds = shipped_kinds()
    labels = json.dumps(dict(kinds.select("kind", "label").iter_rows()))
    return alt.Color(
        "kind:N",
        scale=alt.Scale(domain=kinds["kind"].to_list(), range=kinds["color"].to_list()),
        legend=alt.Legend(title="Family", orient="bottom", labelExpr=f"{labels}[datum.label]"),
    )


def best_per_accelerator(frame: pl.DataFrame, cost: str) -> pl.DataFrame:
    """Cheapest feasible option of each accelerator by the ``cost`` column, cheapest first."""
    return (
        frame.filter(pl.col("feasible")).sort(cost).unique(subset="accelerator_id", keep="first", maintain_order=True)
    )


def rows(frame: pl.DataFrame, columns: list[str]) -> list[dict]:
    return frame.select(columns).to_dicts()


def with_option(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.with_columns(
        option=pl.format("{} · {} · {}", pl.col("name"), pl.col("cloud"), pl.col("pricing_model"))
    )


def message_rows(text: str | None) -> list[dict]:
    return [] if text is None else [{"text": text}]


def message_layer(height: int = 60) -> alt.Chart:
    return (
        alt.Chart(alt.NamedData("message"))
        .mark_text(fontSize=14, color="#666", baseline="top")
        .encode(text="text:N", y=alt.value(height // 2))
    )


def template_specs(templates: dict) -> dict[str, dict]:
    """Each template as its Vega-Lite dict, for the app's chart grid. Not schema-validated here: that costs ~0.15 s
    of every kernel start (20 visitors at once share 2 cores); tests validate every template instead. Building the
    specs with altair costs ~0.4 CPU-s per kernel, so each is kept on disk, keyed by the altair version and the
    source of the chart modules: a new kernel reads JSON instead."""
    return {name: _spec(name, template) for name, template in templates.items()}


@functools.cache
def _charts_version() -> str:
    """Changes with altair or any chart module (templates share constants across modules)."""
    digest = hashlib.sha256(alt.__version__.encode())
    for source in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(source.read_bytes())
    return digest.hexdigest()[:16]


def _spec(name: str, template) -> dict:
    path = cache.directory() / "specs" / f"{template.__module__}.{name}-{_charts_version()}.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # absent or unreadable: build it
        spec = template().to_dict(validate=False)
        cache.write_atomic(path, lambda tmp: tmp.write_text(json.dumps(spec), encoding="utf-8"))
        return spec
