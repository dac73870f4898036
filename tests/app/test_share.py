"""Scenario links, exports and the report; the link and the offline report are also checked in Chromium."""

import base64
import html
import re

import polars as pl
import pytest

from tests.browser import chromium_available, launch_chromium, voila
from workbook import report, serving
from workbook.app import views
from workbook.app.shell import Dashboard
from workbook.present import days, per_million_tokens, usd
from workbook.training.scenario import ModelSpec, Scenario

# A value other than the default for every control of both tabs (each must differ, or the test proves nothing).
TRAIN_CHANGES = {
    "model": "deepseek-v3",  # a published architecture: the sizes below are its own
    "params_b": 671.0,
    "moe": True,
    "active_params_b": 37.0,
    "tokens_preset": "custom",
    "tokens_b": 15000.0,
    "framework": "jax",
    "current_platform": "tpu",
    "days": 90,
    "precision": "fp8",
    "pricing": "spot",
    "cloud": "gcp",
    "multi_cloud": True,
    "lock_in": True,
    "budget_musd": 2.5,
    "use_mfu_override": True,
    "mfu_override": 0.33,
    "use_goodput_override": True,
    "goodput_override": 0.71,
    "include_migration_cost": False,
    "usd_per_engineer_week": 9000.0,
}
SERVE_CHANGES = {
    "own_model": True,
    "model": "mixtral-8x7b",
    "params_b": 46.7,  # the architecture's own
    "precision": "int8",
    "kv_precision": "bf16",
    "prompt_tokens": 4000,
    "output_tokens": 700,
    "answer_spread": 4.5,
    "rps": 123.0,
    "ttft_ms": 900.0,
    "tpot_ms": 30.0,
    "headroom_pct": 60,
    "disaggregation": True,
    "router": "round-robin",
    "capacity_policy": "reserve",
    "stack": "generic",
    "pricing": "commit-1y",
    "cloud": "aws",
    "months": 24,
}


def test_link_round_trips_every_control_of_both_tabs():
    sender = Dashboard()
    assert set(TRAIN_CHANGES) == set(sender.train.link_controls()), "every Train control must be in this test"
    sender.tabs.selected_index = 1
    assert set(SERVE_CHANGES) == set(sender.serve.controls), "every Serve control must be in this test"
    for view, changes in ((sender.train, TRAIN_CHANGES), (sender.serve, SERVE_CHANGES)):
        assert not [name for name, value in changes.items() if view.controls[name].value == value], "already set"
        view.set_values(changes)  # one recompute per tab (each control's own change is tested in tests/app)
    assert "mode=serve" in sender.query
    receiver = Dashboard()
    receiver.apply_query(sender.query)
    assert receiver.tabs.selected_index == 1 and receiver.serve is not None
    assert {k: c.value for k, c in receiver.train.link_controls().items()} == TRAIN_CHANGES
    assert {k: c.value for k, c in receiver.serve.controls.items()} == SERVE_CHANGES
    assert receiver.train.card.value == sender.train.card.value and receiver.train.status.value == ""
    assert receiver.serve.card.value == sender.serve.card.value
    assert receiver.query == sender.query


def test_link_reflects_the_active_tab():
    d = Dashboard()
    assert "mode=train" in d.query and "serve_" not in d.query
    d.tabs.selected_index = 1
    assert "mode=serve" in d.query and "serve_rps=" in d.query
    d.tabs.selected_index = 0
    assert "mode=train" in d.query and "serve_rps=" in d.query


def test_older_links_still_imply_moe_and_own_tokens():
    d = Dashboard()
    d.apply_query("params_b=405&active_params_b=17&tokens_b=15000&mode=serve")
    c = d.train.controls
    assert c["moe"].value and c["tokens_preset"].value == "custom" and c["params_b"].value == 405.0
    assert c["tokens_b"].value == 15000.0 and d.tabs.selected_index == 1


def test_a_link_whose_sizes_contradict_its_architecture_says_which_it_ignored():
    # A hand-edited link: the architecture sets the model's sizes (as on the page, where they are locked), and the
    # message names each size it replaced; sizes that agree with it (as every link the page makes) say nothing.
    d = Dashboard()
    d.apply_query("model=llama3-405b&params_b=10&moe=1&mode=serve&serve_own_model=1&serve_model=deepseek-v3")
    status = d.train.status.value
    assert "params_b=10.0 ignored: set by the model Llama 3.1 405B" in status
    assert "moe=True ignored" in status and "serve_" not in status  # the Serve size was not given
    assert d.train.scenario.model.params == pytest.approx(405.9e9) and d.serve.scenario.model.params == 671e9
    agreeing = Dashboard()
    agreeing.apply_query(d.query)
    assert "Link:" not in agreeing.train.status.value


def test_todays_practice_preset_and_platform_links_reach_the_scenario():
    d = Dashboard()
    d.apply_query("params_b=8&tokens=todays_practice&platform=tpu&framework=jax")  # the older names still open
    c = d.train.controls
    assert c["tokens_preset"].value == "todays_practice" and c["current_platform"].value == "tpu"
    assert d.train.scenario.tokens == 15e12 and d.train.scenario.current_platform == "tpu"
    assert "tokens_preset=todays_practice" in d.query and "current_platform=tpu" in d.query
    assert "tokens_b=" not in d.query  # derived by the preset, so not carried
    default = Dashboard()
    assert default.train.scenario.tokens == 20 * default.train.scenario.model.params


@pytest.mark.parametrize(
    "query, message",
    [
        ("params_b=abc", "not a number"),
        ("params_b=99999", "outside"),
        ("days=0", "outside"),
        ("days=2.5", "whole number"),
        ("budget_musd=-1", "outside"),
        ("moe=maybe", "not 1 or 0"),
        ("framework=mxnet", "not one of"),
        ("cloud=mars", "not one of"),
        ("serve_rps=0", "outside"),
        ("serve_stack=fast", "not one of"),
        ("mode=both", "not one of"),
        ("colour=red", "unknown link parameter"),
    ],
)
def test_bad_link_values_are_listed_and_defaulted(query, message):
    d = Dashboard()
    before = {k: c.value for k, c in d.train.link_controls().items()}
    d.apply_query(query)
    assert message in d.train.status.value and "Link:" in d.train.status.value
    assert {k: c.value for k, c in d.train.link_controls().items()} == before
    assert d.pending_serve == {} and d.tabs.selected_index == 0


def test_copy_link_uses_the_anchors_address_not_document_url():
    html_text = views.share_link("params_b=13&mode=train")
    assert "new URL(" not in html_text and "a.wb-link" in html_text and "Link copied" in html_text
    assert "class='wb-link' href='?params_b=13&amp;mode=train'" in html_text


def test_links_made_outside_voila_open_the_app_not_the_lab_page(monkeypatch):
    from workbook.app import links
    from workbook.errors import InputError

    for name in ("VOILA_KERNEL_ID", "VOILA_PREHEAT", links.APP_URL_VARIABLE):
        monkeypatch.delenv(name, raising=False)
    assert links.app_url() == links.DEFAULT_APP_URL
    monkeypatch.setenv(links.APP_URL_VARIABLE, "https://workbook.example.com/app/")
    d = Dashboard()
    assert f"href='https://workbook.example.com/app/?{d.query.replace('&', '&amp;')}'" in d.link.value
    assert "in the app at https://workbook.example.com/app/" in d.link.value
    monkeypatch.setenv(links.APP_URL_VARIABLE, "workbook.example.com")
    with pytest.raises(InputError, match="WORKBOOK_APP_URL: must be the app's http"):
        links.app_url()
    monkeypatch.setenv("VOILA_KERNEL_ID", "k")  # the app page: the link reopens the page it is on
    assert links.app_url() == "" and "href='?" in views.share_link(d.query, links.app_url())


@pytest.fixture(scope="module")
def scenario():
    return Scenario(model=ModelSpec.from_params(13e9), tokens=260e9, days=20, pricing=("on-demand",))


@pytest.fixture(scope="module")
def served():
    """The Serve tab's answer for 70B FP8 at 100 requests/s (several replicas, runners-up)."""
    s = serving.ServeScenario(
        model=ModelSpec.from_params(70e9), weight_precision="fp8", kv_precision="fp8", requests_per_s=100
    )
    return serving.recommend_serving(serving.evaluate_serving(s), s)


def test_report_is_a_self_contained_brief(scenario):
    text = report.render(scenario, link="?params_b=13&mode=train")
    assert text.startswith("<!doctype html>") and text.count("<svg") == 1
    assert "<script" not in text and not re.search(r"(src|href)=['\"]https?://", text)
    for part in ("Confidence:", "Runners-up", "Ruled out", "MWh", "t CO2e", "Data as of", "?params_b=13", "Where"):
        assert part in text, part
    assert "mfu_override =" not in text and "framework_overhead_bytes" not in text  # words, not code names


def test_brief_includes_the_serving_answer(scenario, served):
    assert report.render(scenario).count("<h2>Serving</h2>") == 0  # only once the Serve tab was used
    text = report.render(scenario, serving=served)
    best = served.best
    assert best is not None and served.runners_up and best["replicas"] > 1, "scenario no longer shows every part"
    for part in (
        "<h2>Serving</h2>",
        "Model served: 70.0B parameters.",
        html.escape(served.headline),
        f"{best['replicas']:,} independent replicas of {best['chips_per_replica']} chip",
        f"{usd(best['usd_per_month'])} a month (",
        per_million_tokens(best["usd_per_million_tokens"]),
        f"runs at {best['utilisation']:.0%} of the load the latency targets allow it (sized to at most 75% of it",
        f"per token {best['tpot_ms']:,.0f} ms (target 50 ms)",
        f"first token {best['ttft_ms']:,.0f} ms (target 2,000 ms)",
        f"Runners-up: {served.runners_up[0]['name']}",
    ):
        assert part in text, part


def test_brief_shows_region_commitment_bill_and_porting():
    from workbook import catalog
    from workbook.training.recommend import recommend

    s = Scenario(model=ModelSpec.from_params(13e9), tokens=260e9, days=60, pricing=("commit-1y",))
    best = recommend(report.chart_specs(s, catalog.load())[0], s.framework, s.current_platform).best
    assert best is not None and best["term_months"] and best["start_delay_days"] > 0, "scenario no longer shows both"
    text = report.render(s)
    assert f"the whole {best['term_months']}-month term is billed" in text
    assert f"is {usd(best['amortised_cost_usd'])} (amortised)" in text
    assert f"finishes in {days(best['finish_days'])}: about {best['start_delay_days']:.0f} days of porting" in text
    assert f"Where: {best['cloud']} (" in text and best["instance_type"] in text
    assert "team on CUDA on NVIDIA today" in text


@pytest.mark.slow
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
    page = base64.b64decode(found["accelerator-brief.html"]).decode()
    assert page.startswith("<!doctype html>") and "13.0B-parameter" in page and "?model=custom&amp;params_b=13" in page
    labels = re.findall(r"<a class='wb-link' download='[^']+' href='[^']+'>([^<]+)</a>", d.train.downloads.value)
    assert "Training cost by accelerator (PNG)" in labels and "One-page brief (HTML)" in labels
    assert not [label for label in labels if label in ("PNG", "SVG")]


def needs_browser(test):
    skip = pytest.mark.skipif(not chromium_available(), reason="needs Debian chromium at /usr/bin/chromium")
    return pytest.mark.browser(skip(test))


@needs_browser
def test_brief_renders_offline_and_prints_on_one_page(scenario, served, tmp_path):
    from playwright.sync_api import sync_playwright

    path = tmp_path / "brief.html"
    path.write_text(report.render(scenario, link="?params_b=13&mode=train", serving=served))
    with sync_playwright() as p:
        browser = launch_chromium(p)
        page = browser.new_page()
        requests = []
        page.on("request", lambda r: requests.append(r.url))
        page.goto(path.as_uri())
        assert page.locator("svg").count() == 1 and "Runners-up" in page.inner_text("body")
        assert "independent replica" in page.inner_text("body")  # the serving answer is on the page
        for paper in ("A4", "Letter"):
            pdf = page.pdf(format=paper, print_background=True)
            assert pdf.startswith(b"%PDF") and len(re.findall(rb"/Type\s*/Page[^s]", pdf)) == 1, paper
        browser.close()
    assert [u for u in requests if not u.startswith("file://")] == []


@needs_browser
def test_scenario_link_opens_the_same_scenario():
    from playwright.sync_api import sync_playwright

    with voila() as url, sync_playwright() as p:
        browser = launch_chromium(p)
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
        href = page.locator(".wb-share a.wb-link").get_attribute("href")
        assert "params_b=13" in href and "framework=jax" in href and "precision=fp8" in href
        browser.close()
