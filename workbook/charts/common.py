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
from workbook.catalog import shipped_palette

COMPONENT_COLOURS = {  # memory components in stacking order, each with one colour in every chart
    "weights": "#1f4e79",
    "gradients": "#4c78a8",
    "optimizer": "#9ecae9",
    "activations": "#72b7b2",
    "kv_cache": "#b279a2",
    "overhead": "#bab0ac",
}
COMPONENT_ORDER = list(COMPONENT_COLOURS)


def component_scale(components: tuple[str, ...]) -> alt.Scale:
    """The colour scale of a memory chart showing ``components`` (its legend lists only those)."""
    return alt.Scale(domain=list(components), range=[COMPONENT_COLOURS[c] for c in components])


# The spec's plot width: the report's PNG and SVG and the first draw use it; in the app and the static page each
# chart is then widened or narrowed to fill its grid cell (workbook/app/chartgrid.js)
WIDTH = 260
LOG_TICKS = [1, 3, 10, 30, 100, 300, 1000, 3000, 10000]  # 1-3-10 ticks on narrow log axes: no crowded labels
LABEL_LIMIT = 200  # px of a line of an option label on a bar chart axis (two lines: chip; cloud and pricing)
# An option label on two lines: the chip, then its cloud and pricing (keeps bar charts narrow enough for two per row)
TWO_LINES = "[slice(datum.label, 0, indexof(datum.label, ' · ')), slice(datum.label, indexof(datum.label, ' · ') + 3)]"
BAR_STEP = 28  # px per bar: room for a two-line label
USD = "$.3s"
MONEY = "$,.0f"
# One shape per option, by its place in the tab's ranking (``slot``): the same option has the same shape in every
# chart of a scenario. Twelve shapes that stay distinct at 60 px^2 (star and hexagon as SVG paths); a 13th option
# reuses them (its colour or its name still tells it apart).
STAR = "M0,-1L0.24,-0.33L0.95,-0.31L0.38,0.12L0.59,0.81L0,0.4L-0.59,0.81L-0.38,0.12L-0.95,-0.31L-0.24,-0.33Z"
HEXAGON = "M0,-1L0.87,-0.5L0.87,0.5L0,1L-0.87,0.5L-0.87,-0.5Z"
SHAPES = ["circle", "square", "triangle-up", "diamond", "cross", "triangle-down", STAR, "triangle-right", HEXAGON,
          "wedge", "triangle-left", "M-1,-0.35H1V0.35H-1Z"]  # fmt: skip
SHAPE_OF_SLOT = f"{json.dumps(SHAPES)}[datum.slot % {len(SHAPES)}]"  # Vega expression: a row's shape
VENDOR_PREFIX = r"^(NVIDIA|AMD Instinct|AMD|Google|AWS) "  # dropped from chip names on axes (the colour says it)
OUTLIER_RATIO = 10  # a bar over 10x the median bar is an outlier: the axis stops at 10x the median
OUTLIER_NOTE = f"a bar over {OUTLIER_RATIO}x the median is cut at {OUTLIER_RATIO}x the median (marked », cost printed)"
FAMILY = pl.format("{}-{}", pl.col("vendor"), pl.col("kind"))  # a row's chart family (data/palette.csv)
KEY_COLUMNS = ["accelerator_id", "vendor", "kind"]  # what ranks a tab's options (one best option per accelerator)


def family_color(legend: bool = True) -> alt.Color:
    """Colour by chart family (vendor and kind: NVIDIA GPU, AMD GPU, Google TPU, AWS Trainium), with the colours
    and legend labels of ``data/palette.csv``: one colour per family in every chart."""
    palette = shipped_palette().with_columns(family=FAMILY)
    labels = json.dumps(dict(palette.select("family", "label").iter_rows()))
    return alt.Color(
        "family:N",
        scale=alt.Scale(domain=palette["family"].to_list(), range=palette["color"].to_list()),
        legend=alt.Legend(title="Family", orient="bottom", columns=2, labelExpr=f"{labels}[datum.label]")
        if legend
        else None,
    )


def option_shape(legend: bool = True) -> alt.Shape:
    """Shape by option: each row's ``shape`` (computed from its ``slot`` by :func:`shaped`) is its symbol, so an
    option keeps its shape across charts whatever else a chart shows. The legend maps shape to option."""
    return alt.Shape(
        "option:N",
        title="Option",
        scale=alt.Scale(range=alt.FieldRange(field="shape")),
        legend=alt.Legend(orient="bottom", columns=1, labelLimit=380, symbolFillColor="#555") if legend else None,
    )


def shaped(chart: alt.Chart) -> alt.Chart:
    """``chart`` with each row's ``shape`` computed from its ``slot`` (see :data:`SHAPES`)."""
    return chart.transform_calculate(shape=SHAPE_OF_SLOT)


def best_per_accelerator(frame: pl.DataFrame, cost: str) -> pl.DataFrame:
    """Cheapest feasible option of each accelerator by the ``cost`` column, cheapest first."""
    return (
        frame.filter(pl.col("feasible")).sort(cost).unique(subset="accelerator_id", keep="first", maintain_order=True)
    )


def ranking(best: pl.DataFrame) -> pl.DataFrame:
    """A tab's options in rank order with their ``slot`` (0 = cheapest): the key every chart of the tab joins on
    (by accelerator: each chart shows an accelerator's best option) so that an option keeps its shape. A frame
    without ``vendor`` and ``kind`` (a memory breakdown) gets no family (drawn grey)."""
    columns = [pl.col(c) if c in best.columns else pl.lit(None, pl.String).alias(c) for c in KEY_COLUMNS]
    return best.select(columns).with_row_index("slot")


def keyed(frame: pl.DataFrame, key: pl.DataFrame | None = None) -> pl.DataFrame:
    """``frame`` with ``slot``, ``family`` and its ``option`` label, ranked by ``key`` (a :func:`ranking`; by default
    the order in which ``frame``'s accelerators first appear). Rows of accelerators not in ``key`` are dropped."""
    key = ranking(frame.unique("accelerator_id", keep="first", maintain_order=True)) if key is None else key
    joined = frame.drop(KEY_COLUMNS[1:], strict=False).join(key, on="accelerator_id", maintain_order="left")
    return with_option(joined).with_columns(family=FAMILY)


def short_name(name: pl.Expr) -> pl.Expr:
    """The chip name without its vendor (the family colour says it): "NVIDIA B200 (HGX) 180GB" -> "B200 (HGX) 180GB"."""
    return name.str.replace(VENDOR_PREFIX, "")


def rows(frame: pl.DataFrame, columns: list[str]) -> list[dict]:
    return frame.select(columns).to_dicts()


def with_option(frame: pl.DataFrame) -> pl.DataFrame:
    """An option's label: short chip name, cloud and pricing model (the full name is in each tooltip)."""
    return frame.with_columns(
        option=pl.format("{} · {} · {}", short_name(pl.col("name")), pl.col("cloud"), pl.col("pricing_model"))
    )


def message_rows(text: str | None) -> list[dict]:
    return [] if text is None else [{"text": text}]


def message_layer() -> alt.Chart:
    """The empty-state message, centred in the plot area (drawn only when the chart has nothing to show). An empty
    bar chart has no plot height: there the message sits clear above its axis."""
    return (
        alt.Chart(alt.NamedData("message"))
        .mark_text(fontSize=14, color="#666", align="center", baseline="middle")
        .encode(
            text="text:N", x=alt.value({"expr": "width / 2"}), y=alt.value({"expr": "height < 40 ? -24 : height / 2"})
        )
    )


def clipped(chart: alt.Chart, field: str, fields: list[str]) -> alt.Chart:
    """``chart`` with an axis that stops at :data:`OUTLIER_RATIO` x the median of ``field`` when its largest value
    is further out: each of ``fields`` gets a ``<name>_shown`` copy capped there, and ``clipped`` is true on rows
    cut short. With no outlier the copies equal the values."""
    cap = f"datum.max_{field} > {OUTLIER_RATIO} * datum.median_{field} ? {OUTLIER_RATIO} * datum.median_{field} : 1e300"
    return (
        chart.transform_joinaggregate(**{f"median_{field}": f"median({field})", f"max_{field}": f"max({field})"})
        .transform_calculate(cap=cap)
        .transform_calculate(
            clipped=f"datum.{field} > datum.cap",
            **{f"{name}_shown": f"min(datum.{name}, datum.cap)" for name in fields},
        )
    )


def range_marks(base: alt.Chart, y: alt.Y, field: str, label_format: str) -> list[alt.Chart]:
    """Over a bar chart of ``{field}_shown`` (see :func:`clipped`): the low-high range as a black line, a marker in
    the option's family colour and shape at the bar's end, and the real value printed on a bar cut at the clip."""
    band = base.mark_rule(color="#333", strokeWidth=1.5).encode(
        x=f"{field}_low_shown:Q", x2=f"{field}_high_shown:Q", y=y
    )
    marker = base.mark_point(filled=True, size=60, stroke="white", strokeWidth=1, opacity=1).encode(
        x=f"{field}_shown:Q", y=y, color=family_color(legend=False), shape=option_shape(legend=False)
    )
    cut = (
        base.transform_filter("datum.clipped")
        .transform_calculate(text=f"'» ' + format(datum.{field}, '{label_format}')")
        .mark_text(align="right", dx=-10, color="white", fontWeight="bold")
        .encode(x=f"{field}_shown:Q", y=y, text="text:N")
    )
    return [band, marker, cut]


def money_axis(scale_name: str, title: str) -> alt.Axis:
    """A money axis with as many significant digits as its span needs: a narrow range ($1.405M-$1.415M) gets
    ticks that differ ("$1.406M", not "$1.41M" five times)."""
    span = f"abs(domain('{scale_name}')[1] - domain('{scale_name}')[0])"
    top = f"max(abs(domain('{scale_name}')[0]), abs(domain('{scale_name}')[1]))"
    digits = f"clamp(ceil(log(({top}) / max({span}, 1e-9)) / LN10) + 2, 2, 8)"
    return alt.Axis(title=title, labelExpr=f"format(datum.value, '$.' + {digits} + '~s')", labelOverlap=True)


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
