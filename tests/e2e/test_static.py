"""The static page (``python -m workbook static``) opened from a file in headless Chromium: it draws with no server
and no request leaving the file, a control move redraws the charts, and what it shows matches the Python API for
the same scenario at grid points."""

import statistics

import polars as pl
import pytest

from tests.browser import NEEDS_CHROMIUM
from tests.static_page import move_ms, opened
from workbook import catalog, serving
from workbook.charts import training as charts
from workbook.static import Grid, write
from workbook.training import options

pytestmark = NEEDS_CHROMIUM

# A small grid keeps the test quick; the page is built by the same code as the shipped one.
GRID = Grid(
    params_b=(8, 70, 405),
    tokens_per_param=(20, 200),
    frameworks=("pytorch", "jax"),
    precisions=("bf16", "fp8"),
    days=(14, 30),
    serve_precisions=("bf16", "fp8"),
    requests_per_s=(1, 10),
)


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    path = write(tmp_path_factory.mktemp("site"), GRID, catalog.load())
    with opened(path) as (page, requests):
        page.requests = requests
        yield page


def _set(page, **controls):
    for name, value in controls.items():
        page.evaluate(
            "([id, v]) => { const el = document.getElementById(id); el.value = String(v);"
            " el.dispatchEvent(new Event('input', { bubbles: true })); }",
            [f"wb-{name}", value],
        )


def test_opens_from_a_file_with_no_request_leaving_it(page):
    assert page.errors == []
    assert page.locator("#wb-charts svg").count() == 2
    assert page.requests, "the page itself is a request"
    outside = [u for u in page.requests if not (u.startswith("file://") or u.startswith("blob:null/"))]
    assert outside == []
    text = page.inner_text("body")
    assert "Data as of: prices 20" in text and "Grid: 48 training scenarios" in text
    assert "params_b=70" in page.get_attribute("#wb-app-link", "href")


def test_a_slider_move_redraws_the_charts_and_the_answer(page):
    _set(page, params=1, days=1, pricing="on-demand", cloud="any", framework="pytorch", precision="bf16", tokens=0)
    before = page.inner_text("#wb-headline")
    times = [move_ms(page, "wb-params", value) for value in (2, 1, 0, 1)]
    assert None not in times, "every move must redraw both charts"
    print(f"static page: slider -> both charts redrawn, median {statistics.median(times):.1f} ms over {times}")
    _set(page, params=2)
    assert page.inner_text("#wb-headline") != before


CASES = [  # grid index values on the page -> the same scenario for the API
    dict(params=1, tokens=0, framework="pytorch", precision="bf16", days=1, pricing="on-demand", cloud="any"),
    dict(params=0, tokens=1, framework="jax", precision="fp8", days=0, pricing="spot", cloud="any"),
    dict(params=0, tokens=0, framework="pytorch", precision="bf16", days=1, pricing="on-demand", cloud="gcp"),
    dict(params=1, tokens=0, framework="pytorch", precision="fp8", days=1, pricing="on-demand", cloud="any"),
    dict(params=0, tokens=1, framework="jax", precision="bf16", days=1, pricing="commit-1y", cloud="aws"),
]


def _api(case):
    scenario = Grid.scenario(
        GRID.params_b[case["params"]],
        GRID.tokens_per_param[case["tokens"]],
        case["framework"],
        case["precision"],
        GRID.days[case["days"]],
        pricing=(case["pricing"],),
        cloud=None if case["cloud"] == "any" else case["cloud"],
    )
    everything = options.evaluate_full(scenario, jobs_frame=options.job_frame(scenario, days=charts.FRONTIER_DAYS))
    main = everything.filter(pl.col("sweep") == "main")
    best = charts.best_options(main)
    frontier = charts.frontier_datasets(
        options.picked(everything.filter(pl.col("sweep") == "days"), best.head(charts.FRONTIER_OPTIONS)),
        scenario.constraints.deadline_days,
    )
    return main, charts.cost_datasets(main), frontier


def _close(a, b):
    return a == pytest.approx(b, rel=1e-3)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['pricing']}-{c['cloud']}-{c['framework']}")
def test_values_match_the_api_at_grid_points(page, case):
    _set(page, **case)
    shown = page.evaluate("window.wbDatasets")
    main, cost, frontier = _api(case)
    assert cost["options"], "the case must have feasible options, or it checks nothing"
    assert [r["option"] for r in shown["cost"]["options"]] == [r["option"] for r in cost["options"]]
    for ours, theirs in zip(shown["cost"]["options"], cost["options"], strict=True):
        assert ours["chips"] == theirs["chips"]
        for key in ("train_days", "cost_usd", "cost_usd_low", "cost_usd_high"):
            assert _close(ours[key], theirs[key]), (ours["option"], key)
    ours = sorted((p["option"], p["chips"]) for p in shown["frontier"]["points"])
    assert ours == sorted((p["option"], p["chips"]) for p in frontier["points"])
    assert shown["frontier"]["deadline"] == frontier["deadline"]
    best = main.filter(pl.col("feasible")).row(0, named=True)
    headline = page.inner_text("#wb-headline")
    assert headline.startswith(f"Train on {best['name']} ({best['cloud']}, {best['pricing_model']}): {best['chips']:,}")
    table = page.inner_text("#wb-table").splitlines()
    assert len(table) == main.height  # every option of the API's frame (fewer than the 60 shown)
    ruled_out = main.filter(~pl.col("feasible"))
    assert ruled_out.height and {line.split("\t")[-1] for line in table} == {"ok", *ruled_out["infeasible_reason"]}


def test_serving_line_matches_the_api(page):
    _set(page, params=1, rps=1, **{"serve-precision": "fp8"}, pricing="on-demand", cloud="any")
    frame = serving.evaluate_serving(Grid.serve_scenario(GRID.params_b[1], "fp8", GRID.requests_per_s[1]))
    best = frame.filter(pl.col("feasible") & (pl.col("pricing_model") == "on-demand")).row(0, named=True)
    line = page.inner_text("#wb-serve-headline")
    assert line.startswith(
        f"Serve 10 requests/s on {best['name']} ({best['cloud']}, on-demand): {best['chips']:,} chips"
    )
    shown = float(line.split("$")[1].split(" ")[0])
    assert shown == pytest.approx(best["usd_per_million_tokens"], abs=0.0015)
