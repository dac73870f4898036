"""Chart builders without a browser: the spec builds, round-trips, and renders to PNG offline."""

import datetime as dt
import json

import polars as pl
import pytest
import vl_convert as vlc

from workbook.charts import serving as charts_serving
from workbook.charts import training as charts
from workbook.charts.common import template_specs
from workbook.charts.validation import serving_by_round
from workbook.training import options
from workbook.training.scenario import Constraints, ModelSpec, Scenario

SCENARIO = Scenario(model=ModelSpec.from_params(70e9), tokens=1.4e12, days=30, pricing=("on-demand",))


@pytest.fixture(scope="module")
def frame():
    return options.evaluate_full(
        SCENARIO, jobs_frame=options.job_frame(SCENARIO, days=[7, 30, 120], params=[1e9, 1e10, 1e11, 1e12])
    )


def _built(frame):
    main = frame.filter(pl.col("sweep") == "main")
    best = charts.best_options(main)
    leaders = best.group_by("kind", maintain_order=True).first().filter(pl.col("kind").is_in(["gpu", "tpu"]))
    return {
        "cost": charts.cost_by_option(main),
        "frontier": charts.frontier(options.picked(frame.filter(pl.col("sweep") == "days"), best.head(4)), 30),
        "memory": charts.memory(options.memory_breakdown(best.head(6))),
        "size": charts.size_sweep(options.picked(frame.filter(pl.col("sweep") == "params"), leaders), 70e9),
    }


@pytest.mark.parametrize("name", ["cost", "frontier", "memory", "size"])
def test_spec_builds_round_trips_and_renders(frame, name):
    chart = _built(frame)[name]
    spec = chart.to_dict()
    assert spec["datasets"] and all(isinstance(v, list) for v in spec["datasets"].values())
    assert type(chart).from_dict(json.loads(json.dumps(spec))).to_dict() == spec
    png = vlc.vegalite_to_png(spec, scale=1)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000


def test_cost_chart_sorted_cheapest_first(frame):
    rows = charts.cost_datasets(frame.filter(pl.col("sweep") == "main"))["options"]
    assert rows and [r["slot"] for r in rows] == list(range(len(rows)))
    assert [r["cost_usd"] for r in rows] == sorted(r["cost_usd"] for r in rows)


def test_empty_frame_shows_message_not_blank():
    impossible = Scenario(
        model=ModelSpec.from_params(70e9),
        tokens=1.4e12,
        days=30,
        pricing=("on-demand",),
        constraints=Constraints(budget_usd=1),
    )
    data = charts.cost_datasets(options.evaluate_full(impossible))
    assert data["options"] == [] and data["message"][0]["text"].startswith("No option")


def test_the_size_chart_ends_a_line_where_the_option_cannot_get_the_chips_for_the_target_days(frame):
    # 20 tokens a parameter in 30 days on demand, on the cheapest option (MI300X on tensorwave, at most 512 chips
    # without a reservation): 100B and 1T need more chips than that, and the sweep plans them at 512 (73 days and
    # 20 years of training). The chart drew those points as "chips needed for the target days" and their costs;
    # now the line ends before them.
    best = charts.best_options(frame.filter(pl.col("sweep") == "main"))
    sweep = options.picked(frame.filter(pl.col("sweep") == "params"), best.head(1))  # one option, as the app draws
    capped = sweep.filter(pl.col("feasible") & pl.col("chips_capped"))
    assert capped["params"].to_list() == [1e11, 1e12] and capped["train_days"].min() > 60
    data = charts.size_datasets(sweep, 70e9)
    points = pl.DataFrame(data["points"])
    assert points["params"].to_list() == [1e9, 1e10]
    assert data["extent"] == [{"params": 1e9}, {"params": 1e12}]  # the axis still spans the sweep
    kept = sweep.join(points.select("params", "chips"), on=["params", "chips"], how="semi")
    assert kept.height == 2 and kept["train_days"].max() <= 30 * 1.001


def test_crossing_found_between_two_lines():
    frame = pl.DataFrame(
        {
            "feasible": [True] * 6,
            "chips_capped": [False] * 6,
            "name": ["A"] * 3 + ["B"] * 3,
            "cloud": ["x"] * 6,
            "pricing_model": ["od"] * 6,
            "params": [1e9, 1e10, 1e11] * 2,
            "cost_usd": [1.0, 10.0, 100.0, 5.0, 8.0, 50.0],
        }
    )
    cross = charts.crossings(frame)
    assert cross.height == 1 and 1e9 < cross["params"][0] < 1e10 and "B" in cross["text"][0]


@pytest.mark.parametrize("templates", [charts.TEMPLATES, charts_serving.TEMPLATES], ids=["training", "serving"])
def test_app_specs_are_valid_and_data_free(templates):
    """The app skips schema validation for speed; the specs it gets must equal the validated ones."""
    specs = template_specs(templates)
    assert specs.keys() == templates.keys()
    for name, template in templates.items():
        assert specs[name] == template().to_dict()  # to_dict() validates against the Vega-Lite schema
        assert "datasets" not in specs[name]


def test_serving_validation_chart_puts_each_held_out_throughput_on_its_round_in_publication_order():
    frame = pl.DataFrame(
        {
            "run_id": ["new-offline", "old-offline", "old-ttft", "unpredicted"],
            "round": ["MLPerf v6.1", "MLPerf v4.1", "MLPerf v4.1", "MLPerf v4.1"],
            "published": [dt.date(2026, 9, 16), dt.date(2024, 8, 28), dt.date(2024, 8, 28), dt.date(2024, 8, 28)],
            "stack": ["vllm-rocm", "trtllm", "trtllm", "trtllm"],
            "accelerator_id": ["mi355x", "h100-sxm", "h100-sxm", "h200"],
            "weight_precision": ["fp4", "fp8", "fp8", "fp8"],
            "measure": ["tokens_per_s", "tokens_per_s", "ttft_ms", "tokens_per_s"],
            "published_value": [100.0, 200.0, 300.0, 50.0],
            "predicted_value": [90.0, 250.0, 330.0, None],
        }
    )
    spec = serving_by_round(frame, {"trtllm": "TensorRT-LLM", "vllm-rocm": "vLLM on ROCm"}).to_dict()
    points = spec["layer"][-1]
    rows = spec["datasets"][points["data"]["name"]]
    assert {r["run_id"] for r in rows} == {"new-offline", "old-offline"}  # throughput with a prediction only
    assert {r["run_id"]: r["ratio"] for r in rows} == pytest.approx({"new-offline": 0.9, "old-offline": 1.25})
    assert points["encoding"]["y"]["sort"] == ["MLPerf v4.1", "MLPerf v6.1"]
    assert {r["stack_name"] for r in rows} == {"TensorRT-LLM", "vLLM on ROCm"}
    assert len(vlc.vegalite_to_png(json.dumps(spec))) > 1000
