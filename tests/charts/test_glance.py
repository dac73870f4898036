"""Charts that read at a glance: one colour per family, one shape per option in every chart of a tab, whole option
labels, outliers cut with a mark, money ticks that differ, empty states clear of the axes, days to finish."""

import re

import altair as alt
import polars as pl
import pytest
import vl_convert as vlc

from workbook import serving
from workbook.catalog import shipped_palette
from workbook.charts import common
from workbook.charts import serving as charts_serving
from workbook.charts import training as charts
from workbook.training import options
from workbook.training.scenario import Constraints, ModelSpec, Scenario

SCENARIO = Scenario(model=ModelSpec.from_params(70e9), tokens=1.4e12, days=30)  # every pricing model, no deadline


@pytest.fixture(scope="module")
def train_sets():
    everything = options.evaluate_full(SCENARIO, jobs_frame=options.job_frame(SCENARIO, **charts.SWEEPS))
    return charts.tab_datasets(everything, 30, SCENARIO.model.params)


@pytest.fixture(scope="module")
def serve_sets():
    s = serving.ServeScenario(model=ModelSpec.from_params(70e9), requests_per_s=5)
    return charts_serving.tab_datasets(serving.evaluate_serving(s), s, None, None)


def _svg(template, datasets) -> str:
    return vlc.vegalite_to_svg(template().properties(datasets=datasets).to_dict())


def _per_option_rows(sets: dict) -> list[tuple[str, dict]]:
    out = []
    for chart, data in sets.items():
        for rows in data.values():
            out += [(chart, r) for r in rows if "slot" in r]
    return out


@pytest.mark.parametrize("tab", ["train", "serve"])
def test_an_option_has_one_shape_and_its_family_colour_in_every_chart(tab, train_sets, serve_sets):
    sets = train_sets if tab == "train" else serve_sets
    rows = _per_option_rows(sets)
    charts_seen = {chart for chart, _ in rows}
    assert len(charts_seen) >= 3, charts_seen  # the ranking is shared by several charts, or this checks nothing
    first = sets["cost" if tab == "train" else "price"]["options"]
    slots = {r["name"]: r["slot"] for r in first}
    families = {r["name"]: r["family"] for r in first}
    assert len(set(families.values())) >= 2
    for chart, r in rows:
        assert slots[r["name"]] == r["slot"], (chart, r["name"])  # same option, same shape, whatever the chart
        if "family" in r:
            assert families[r["name"]] == r["family"], (chart, r["name"])


@pytest.mark.parametrize(
    "template", [*charts.TEMPLATES.values(), charts_serving.price_template, charts_serving.tradeoff_template]
)
def test_per_option_charts_colour_by_family_from_the_palette(template):
    spec = str(template().to_dict())
    palette = shipped_palette()
    assert "'field': 'family'" in spec and all(color in spec for color in palette["color"])
    assert "'field': 'shape'" in spec  # the shape of each option comes from its slot


def _symbol_path(chart, rows) -> str:
    """The outline of the first point drawn (legend symbols come after the marks)."""
    svg = vlc.vegalite_to_svg(chart.properties(datasets={"d": rows}).to_dict())
    marks = re.findall(r'<g class="mark-symbol[^"]*"[^>]*><path [^>]*\bd="([^"]+)"', svg)
    return marks[0] if marks else ""


@pytest.mark.parametrize("slot", [0, 1, 6, 13])
def test_an_option_is_drawn_with_the_shape_of_its_slot(slot):
    base = alt.Chart(alt.NamedData("d")).encode(x=alt.value(10), y=alt.value(10))
    rows = [{"slot": slot, "option": "o"}]
    ours = _symbol_path(common.shaped(base).mark_point(size=60).encode(shape=common.option_shape()), rows)
    shape = common.SHAPES[slot % len(common.SHAPES)]
    expected = _symbol_path(base.mark_point(size=60, shape=shape), rows)
    other = _symbol_path(base.mark_point(size=60, shape=common.SHAPES[(slot + 1) % len(common.SHAPES)]), rows)
    assert ours and ours == expected != other


def test_option_labels_are_whole(train_sets):
    data = train_sets["cost"]
    assert len(data["options"]) >= 5
    svg = _svg(charts.cost_template, data)
    assert "…" not in svg  # no label cut short
    for r in data["options"]:
        assert r["option"].endswith(f"· {r['cloud']} · {r['pricing_model']}") and r["option"] in svg.replace(
            "&amp;", "&"
        )
    assert any(r["name"].startswith("NVIDIA ") and not r["option"].startswith("NVIDIA") for r in data["options"])


def _cost_rows(costs):
    return [
        {"slot": i, "option": f"chip{i} · c · on-demand", "family": "nvidia-gpu", "name": f"chip{i}", "cloud": "c",
         "pricing_model": "on-demand", "chips": 8, "train_days": 10, "finish_days": 10, "cost_usd": c,
         "cost_usd_low": c * 0.8, "cost_usd_high": c * 1.2}
        for i, c in enumerate(costs)
    ]  # fmt: skip


def test_an_outlier_bar_is_cut_and_marked_with_its_cost():
    normal = _svg(charts.cost_template, {"options": _cost_rows([1e6, 2e6, 3e6, 4e6]), "message": []})
    assert "» $" not in normal
    outlier = _svg(charts.cost_template, {"options": _cost_rows([1e6, 2e6, 3e6, 260e6]), "message": []})
    assert "» $260M" in outlier
    ticks = re.findall(r">\$([\d.]+)M<", outlier)
    assert ticks and max(float(t) for t in ticks) <= common.OUTLIER_RATIO * 2.5  # the axis stops near 10x median
    assert f"{common.OUTLIER_RATIO}x the median" in str(charts.cost_template().to_dict()["title"])


def test_narrow_money_axis_ticks_all_differ():
    points = [
        {"option": "a · c · p", "slot": 0, "family": "nvidia-gpu", "name": "a", "chips": c, "start_delay_days": 0,
         "train_days": d, "finish_days": d, "cost_usd": 1.41e6 + i * 1e3}
        for i, (c, d) in enumerate([(64, 40), (128, 21), (256, 11), (512, 6)])
    ]  # fmt: skip
    svg = _svg(charts.frontier_template, {"points": points, "deadline": [], "message": []})
    labels = re.findall(r">(\$[\d.]+[kM])<", svg)
    assert len(labels) >= 3 and len(set(labels)) == len(labels), labels


def test_frontier_cost_axis_starts_at_zero_so_a_small_saving_looks_small():
    # More chips saving 4% ($1.00M to $0.96M) drawn from $960k would look like a fall to nothing.
    points = [
        {"option": "a · c · p", "slot": 0, "family": "nvidia-gpu", "name": "a", "chips": c, "start_delay_days": 0,
         "train_days": d, "finish_days": d, "cost_usd": cost}
        for c, d, cost in [(128, 40, 1.0e6), (256, 29, 0.99e6), (512, 15, 0.961e6)]
    ]  # fmt: skip
    svg = _svg(charts.frontier_template, {"points": points, "deadline": [], "message": []})
    labels = re.findall(r">(\$[\d.]*[kM]?)<", svg)
    assert "$0" in labels and "$1M" in labels, labels


def test_frontier_is_drawn_over_days_to_finish(train_sets):
    points = train_sets["frontier"]["points"]
    assert points
    for p in points:
        assert p["finish_days"] == pytest.approx(p["start_delay_days"] + p["train_days"])
    assert any(p["start_delay_days"] > 0 for p in points)  # porting moves some options right
    spec = charts.frontier_template().to_dict()
    assert "finish_days" in str(spec) and "porting + training" in str(spec)


@pytest.mark.parametrize(
    "template, datasets",
    [
        (charts.cost_template, {"options": [], "message": [{"text": "No option meets the constraints"}]}),
        (charts.frontier_template, {"points": [], "deadline": [], "message": [{"text": "No feasible option"}]}),
    ],
)
def test_empty_state_is_centred_clear_of_the_axes(template, datasets):
    view = vlc.vegalite_to_svg(template().properties(datasets=datasets).to_dict())
    assert datasets["message"][0]["text"] in view
    layer = str(common.message_layer().to_dict()["encoding"])
    assert "width / 2" in layer and "height / 2" in layer and "height < 40" in layer


def test_impossible_scenario_leaves_every_train_chart_with_a_message():
    impossible = Scenario(
        model=ModelSpec.from_params(70e9), tokens=1.4e12, days=30, constraints=Constraints(budget_usd=1)
    )
    everything = options.evaluate_full(impossible, jobs_frame=options.job_frame(impossible, **charts.SWEEPS))
    sets = charts.tab_datasets(everything, 30, impossible.model.params)
    assert all(data["message"] for name, data in sets.items() if name != "size" or not data["points"])
    assert pl.DataFrame(sets["cost"]["options"]).height == 0


@pytest.mark.parametrize("tab", ["train", "serve"])
def test_the_memory_legend_lists_the_components_drawn(tab, train_sets, serve_sets):
    """Serving holds no gradients or optimizer state: its legend does not offer them; colours match the Train tab's."""
    templates, sets = (charts.TEMPLATES, train_sets) if tab == "train" else (charts_serving.TEMPLATES, serve_sets)
    drawn = {r["component"] for r in sets["memory"]["parts"] if r["gb"] > 0}
    bars = templates["memory"]().to_dict()["layer"][0]["encoding"]["color"]["scale"]
    assert drawn and set(bars["domain"]) == drawn, (bars["domain"], drawn)
    assert all(common.COMPONENT_COLOURS[c] == colour for c, colour in zip(bars["domain"], bars["range"], strict=True))
