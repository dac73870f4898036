"""Scenario links, exports and the report; the link and the offline report are also checked in Chromium."""

import base64
import re

import polars as pl
import pytest

from tests.browser import CHROMIUM, CHROMIUM_ARGS, chromium_available, voila
from workbook import report
from workbook.app import links, state
from workbook.app.shell import Dashboard
from workbook.charts import training as train_charts
from workbook.training.scenario import ModelSpec, Scenario

CLOUDS = ["aws", "gcp"]


def test_link_round_trip():
    values = {
        **state.DEFAULTS,
        "params_b": 13.0,
        "days": 60,
        "framework": "jax",
        "cloud": "gcp",
        "moe": True,
        "active_params_b": 3.0,
        "tokens_preset": "custom",
        "tokens_b": 500.0,
        "current_platform": "tpu",
    }
    parsed, problems = links.parse(links.build(values, "serve"), CLOUDS)
    assert not problems
    assert parsed == {
        "params_b": 13.0,
        "framework": "jax",
        "days": 60,
        "precision": "bf16",
        "pricing": "on-demand",
        "cloud": "gcp",
        "mode": "serve",
        "active_params_b": 3.0,
        "moe": True,
        "tokens_b": 500.0,
        "tokens_preset": "custom",
        "current_platform": "tpu",
    }


@pytest.mark.parametrize(
    "query, message",
    [
        ("params_b=abc", "not a number"),
        ("params_b=99999", "outside"),
        ("days=0", "outside"),
        ("framework=mxnet", "not one of"),
        ("cloud=mars", "not one of"),
        ("colour=red", "unknown link parameter"),
    ],
)
def test_bad_link_values_are_reported_and_defaulted(query, message):
    values, problems = links.parse(query, CLOUDS)
    assert values == {} and len(problems) == 1 and message in problems[0]


@pytest.fixture(scope="module")
def scenario():
    return Scenario(model=ModelSpec.from_params(13e9), tokens=260e9, days=20, pricing=("on-demand",))


def test_report_is_self_contained(scenario):
    text = report.render(scenario)
    assert (
        text.startswith("<!doctype html>")
        and "Recommendation" in text
        and text.count("<svg") == len(train_charts.TEMPLATES)
    )
    assert "<script" not in text and not re.search(r"(src|href)=['\"]https?://", text)
    assert "Prices as of" in text


def test_downloads_parse():
    d = Dashboard()
    d.apply_query("params_b=13&days=20")
    d.train.prepare_downloads()
    found = dict(re.findall(r"download='([^']+)' href='data:[^;]+;base64,([^']+)'", d.train.downloads.value))
    table = pl.read_csv(base64.b64decode(found["options.csv"]))
    assert table.height == d.train.frame.height and "cost_usd" in table.columns
    png = base64.b64decode(found["cost.png"])
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert width > 400 and height > 200
    assert base64.b64decode(found["cost.svg"]).startswith(b"<svg")
    page = base64.b64decode(found["accelerator-report.html"]).decode()
    assert (
        page.startswith("<!doctype html>")
        and "13.0B parameters" in page
        and page.count("<svg") == len(train_charts.TEMPLATES)
    )


def needs_browser(test):
    skip = pytest.mark.skipif(not chromium_available(), reason="needs Debian chromium at /usr/bin/chromium")
    return pytest.mark.browser(skip(test))


@needs_browser
def test_report_renders_in_chromium_without_network(scenario, tmp_path):
    from playwright.sync_api import sync_playwright

    path = tmp_path / "report.html"
    path.write_text(report.render(scenario))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page()
        requests = []
        page.on("request", lambda r: requests.append(r.url))
        page.goto(path.as_uri())
        assert page.locator("svg").count() == len(train_charts.TEMPLATES) and "Recommendation" in page.inner_text(
            "body"
        )
        browser.close()
    assert [u for u in requests if not u.startswith("file://")] == []


@needs_browser
def test_scenario_link_opens_the_same_scenario():
    from playwright.sync_api import sync_playwright

    with voila() as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1500})
        page.goto(url + "/?params_b=13&days=60&framework=jax&precision=fp8&colour=red", timeout=120_000)
        page.wait_for_function("document.querySelectorAll('.vega-embed svg').length >= 4", timeout=120_000)
        slider = page.locator(".widget-slider", has_text="Model size").locator(".widget-readout")
        assert slider.inner_text().strip() in ("13.0", "13")
        assert (
            page.locator(".widget-slider", has_text="Target days").locator(".widget-readout").inner_text().strip()
            == "60"
        )
        body = page.inner_text("body")
        assert "unknown link parameter 'colour'" in body
        href = page.locator("a.wb-link").get_attribute("href")
        assert "params_b=13" in href and "framework=jax" in href and "precision=fp8" in href
        browser.close()


def test_todays_practice_preset_and_platform_links_reach_the_scenario():
    values, problems = links.parse("params_b=8&tokens=todays_practice&platform=tpu&framework=jax", CLOUDS)
    assert not problems and values["tokens_preset"] == "todays_practice" and values["current_platform"] == "tpu"
    scenario = state.scenario_from({**state.DEFAULTS, **values})
    assert scenario.tokens == 15e12 and scenario.current_platform == "tpu"
    assert "tokens=todays_practice" in links.build({**state.DEFAULTS, **values}, "train")
    default = state.scenario_from(state.DEFAULTS)
    assert default.tokens == 20 * default.model.params
