"""Widget wiring in the kernel: set a control -> scenario, frames and chart data change; bad states show a message."""

import datetime
import html

import polars as pl
import pytest

from workbook.app import state
from workbook.app.serve_view import ServeView
from workbook.app.shell import Dashboard
from workbook.errors import InputError
from workbook.model.spec import PRESETS


@pytest.fixture
def dash():
    """A fresh Dashboard per test: no test sees another's slider moves."""
    return Dashboard()


def _data(dash, name):
    return dash.train.charts.datasets[name]


def test_a_prompt_longer_than_the_served_models_context_window_says_so_on_the_page(dash):
    dash.tabs.selected_index = 1
    c = dash.serve.controls
    c["own_model"].value = True
    c["model"].value = "llama3-70b"
    c["prompt_tokens"].value = 200_000
    message = html.unescape(dash.serve.status.value)
    assert dash.serve.stale and "Traceback" not in message
    words = "Prompt tokens: the prompt plus the answer (200,000 + 300 tokens) must fit in the model's 131,072-token"
    assert words in message, message


def test_initial_page_has_recommendation_and_charts(dash):
    assert "Train on" in dash.train.card.value
    assert _data(dash, "cost")["options"]
    assert dash.train.status.value == ""


def test_model_size_changes_scenario_and_charts(dash):
    before = (dash.train.scenario, _data(dash, "cost"), _data(dash, "size")["now"])
    dash.train.controls["params_b"].value = 7
    assert dash.train.scenario.model.params == pytest.approx(7e9)
    assert dash.train.scenario.tokens == pytest.approx(140e9)  # 20 tokens per parameter
    assert _data(dash, "cost") != before[1] and _data(dash, "size")["now"] != before[2]


def test_a_published_architecture_sets_the_model_of_both_tabs(dash):
    # DeepSeek-V3 from the model menu: its sizes shown and locked, its shape (experts, latent attention) in the
    # training scenario and, unless overridden, in the served one, whose KV cache is the latent's: 61 layers x 576
    # values, 35 KB a token in FP8, where the size alone would derive plain KV heads.
    c = dash.train.controls
    c["model"].value = "deepseek-v3"
    assert dash.train.scenario.model == PRESETS["deepseek-v3"] and dash.train.status.value == ""
    assert (c["params_b"].value, c["moe"].value, c["active_params_b"].value) == (671.0, True, 37.0)
    assert c["params_b"].disabled and c["moe"].disabled and c["active_params_b"].disabled
    assert dash.train.scenario.tokens == pytest.approx(20 * 671e9)
    dash.tabs.selected_index = 1
    served = dash.serve.scenario
    assert served.model == PRESETS["deepseek-v3"] and served.latent_attention
    assert dash.serve.controls["params_b"].value == 671.0  # the size shown is the model served
    assert served.kv_bytes_per_token == pytest.approx(61 * 576 * 1.0)
    assert "Train: DeepSeek-V3 / R1 (671.0B parameters, 37.0B active)" in dash.serve.card.value
    dash.serve.controls["own_model"].value = True  # serve another architecture than the one trained
    dash.serve.controls["model"].value = "llama3-70b"
    assert dash.serve.scenario.model == PRESETS["llama3-70b"] and dash.serve.controls["params_b"].disabled
    assert "a different model from the one trained" in dash.serve.card.value
    c["model"].value = "custom"  # any size again, from the sizes shown
    assert not c["params_b"].disabled and not c["moe"].disabled and not c["active_params_b"].disabled
    assert dash.train.scenario.model.params == pytest.approx(671e9) and dash.train.scenario.model.kv_lora_rank is None


def test_days_moves_the_deadline_rule(dash):
    dash.train.controls["days"].value = 45
    assert _data(dash, "frontier")["deadline"][0]["deadline"] == 45
    assert dash.train.scenario.constraints.deadline_days == 45


def test_framework_and_cloud_filters(dash):
    dash.train.controls["days"].value = 120  # a TensorFlow team's port to a native stack takes weeks before training
    dash.train.controls["framework"].value = "tensorflow"
    dash.train.controls["cloud"].value = "gcp"
    assert dash.train.frame["cloud"].drop_nulls().unique().to_list() == ["gcp"]
    assert "TensorFlow" in dash.train.card.value
    dash.train.controls["framework"].value = "pytorch"
    dash.train.controls["cloud"].value = "any"


def test_multi_cloud_excludes_tpus_and_explains(dash):
    dash.train.controls["multi_cloud"].value = True
    assert "only one cloud" in dash.train.card.value
    dash.train.controls["multi_cloud"].value = False


def test_bad_and_extreme_states_show_a_message_not_a_traceback(dash):
    dash.train.controls["budget_musd"].value = -5
    assert "Budget cap" in dash.train.status.value
    dash.train.controls["budget_musd"].value = 0.000001
    assert "No accelerator meets" in dash.train.card.value
    assert _data(dash, "cost")["message"]
    dash.train.controls["budget_musd"].value = 0
    dash.train.controls["params_b"].value = 2000
    dash.train.controls["days"].value = 1
    assert "Traceback" not in dash.train.card.value + dash.train.status.value
    dash.train.controls["moe"].value = True
    dash.train.controls["active_params_b"].value = 2000
    dash.train.controls["params_b"].value = 100
    assert "Active params (B): must not exceed the model size (100B), got 2000B" in dash.train.status.value
    dash.train.controls["active_params_b"].value = 10
    assert dash.train.status.value == "" and dash.train.scenario.model.active_params == pytest.approx(10e9)


def test_mfu_override_changes_days(dash):
    dash.train.controls["moe"].value = False
    dash.train.controls["params_b"].value = 70
    dash.train.controls["days"].value = 30
    chips_before = dash.train.frame["chips"].to_list()
    dash.train.controls["use_mfu_override"].value = True
    dash.train.controls["mfu_override"].value = 0.2
    assert dash.train.scenario.assumptions.mfu_override == 0.2
    assert dash.train.frame["chips"].to_list() != chips_before
    dash.train.controls["use_mfu_override"].value = False


def test_price_override_upload(dash):
    good = (
        b"accelerator_id,cloud,pricing_model,usd_per_chip_hour,as_of,source\n"
        b"tpu-v5p,gcp,on-demand,0.5,2026-11-01,our contract\n"
    )
    dash.train.controls["price_file"].value = (
        {
            "name": "ours.csv",
            "content": memoryview(good),
            "type": "text/csv",
            "size": len(good),
            "last_modified": datetime.datetime(2026, 11, 1),
        },
    )
    assert "Using your prices" in dash.train.status.value
    bad = (
        b"accelerator_id,cloud,pricing_model,usd_per_chip_hour,as_of,source\ntpu-v5p,gcp,on-demand,-2,2026-11-01,x y\n"
    )
    dash.train.controls["price_file"].value = (
        {
            "name": "bad.csv",
            "content": memoryview(bad),
            "type": "text/csv",
            "size": len(bad),
            "last_modified": datetime.datetime(2026, 11, 1),
        },
    )
    assert "bad.csv line 2, column usd_per_chip_hour" in dash.train.status.value


def test_state_is_pure_and_validates():
    s = state.scenario_from({"params_b": 7, "days": 10})
    assert s.model.params == 7e9 and s.days == 10
    with pytest.raises(InputError) as err:
        state.scenario_from({"budget_musd": -1})
    assert err.value.field == "budget_musd"


def test_trust_panels_fill_on_open(dash):
    assert dash.trust.children[0].value == ""
    dash.trust.selected_index = 0
    accuracy = dash.trust.children[0].value
    assert "published training runs within" in accuracy and "Held out" in accuracy and "Hopper within" in accuracy
    words = accuracy.split("<details>")[0]
    assert "ln(" not in words and "ln(" in accuracy  # managers read percentages; engineers find the log errors
    dash.trust.selected_index = 1
    assert "v5p" in dash.trust.children[1].value and "contradicted" in dash.trust.children[1].value


def test_the_serve_tab_says_it_is_working_while_its_first_answer_is_computed(dash, monkeypatch):
    # Its first answer can take half a minute after an update (the serving calibration is rebuilt): the tab says so
    # until the answer replaces the notice.
    seen = []
    update = ServeView.update
    monkeypatch.setattr(ServeView, "update", lambda view: (seen.append(view.status.value), update(view)))
    dash.tabs.selected_index = 1
    assert seen and "Working out every serving option" in seen[0]
    assert dash.serve.status.value == "" and "Serve on" in dash.serve.card.value


def test_serve_view_wiring(dash):
    dash.tabs.selected_index = 1
    assert "Serve on" in dash.serve.card.value
    chips = dash.serve.frame["chips"].to_list()
    dash.serve.controls["rps"].value = 500
    assert dash.serve.scenario.requests_per_s == pytest.approx(500)
    assert dash.serve.frame["chips"].to_list() != chips
    dash.serve.controls["tpot_ms"].value = 2  # below any engine's fixed step cost: nothing can, and the card says why
    assert "Traceback" not in dash.serve.card.value + dash.serve.status.value
    assert (
        "No accelerator meets these targets" in dash.serve.card.value and "even one sequence" in dash.serve.card.value
    )
    # Train, then serve says which phase has nothing to total
    assert dash.serve.charts.datasets["combined"]["message"][0]["text"].startswith("No serving option meets")
    dash.serve.controls["tpot_ms"].value = 10
    assert dash.serve.charts.datasets["combined"]["combos"] and not dash.serve.charts.datasets["combined"]["message"]


def test_serve_tab_serves_the_train_tabs_model_unless_overridden(dash):
    dash.tabs.selected_index = 1
    serve = dash.serve
    assert serve.scenario.model == dash.train.scenario.model
    assert "Train:" in serve.card.value and "Serve:" in serve.card.value and "different model" not in serve.card.value
    assert serve.controls["params_b"].disabled
    serve.controls["own_model"].value = True
    serve.controls["params_b"].value = 8
    assert serve.scenario.model.params == pytest.approx(8e9)
    assert "a different model from the one trained" in serve.card.value
    serve.controls["own_model"].value = False
    assert serve.scenario.model == dash.train.scenario.model
    serve.controls["headroom_pct"].value = 50
    assert serve.scenario.headroom == pytest.approx(0.5) and "sized to at most 50% of it" in serve.card.value
    serve.controls["stack"].value = "generic"
    assert serve.scenario.stack_choice == "generic" and "TensorRT-LLM" not in serve.card.value.split("</div>")[1]
    serve.controls["capacity_policy"].value = "reserve"
    assert serve.scenario.capacity_policy == "reserve"


def test_chart_bundle_is_sent_on_request_not_in_the_widget_state(dash):
    """The page's first request for all widget states must stay small (ipywidgets gives it 4 s under load)."""
    import json

    from workbook.app import chartgrid

    grid = dash.train.charts
    state = grid.get_state()
    assert "_bundle" not in state and len(json.dumps(state)) < 200_000
    chartgrid._PAGES_SERVED.clear()
    sent = []
    grid.send = sent.append
    grid._on_message(grid, {"request": "something else"}, [])
    assert sent == []
    grid._on_message(grid, {"request": "bundle", "page": "p1"}, [])
    assert sent == [{"bundle": grid._bundle_key, "javascript": chartgrid.bundle()[1]}]


def test_chart_bundle_goes_once_per_page_view_and_repeats_are_ignored(dash):
    """A client repeating the small request must not make the kernel send the 0.9 MB bundle again and again."""
    from workbook.app import chartgrid

    chartgrid._PAGES_SERVED.clear()
    sent = []
    for grid in (dash.train.charts, dash.serve.charts if dash.serve else dash.train.charts):
        grid.send = sent.append
        for _ in range(50):
            grid._on_message(grid, {"request": "bundle", "page": "one-page-view"}, [])
    assert len(sent) == 1
    for page in range(100):  # forged page ids: bounded too
        dash.train.charts._on_message(dash.train.charts, {"request": "bundle", "page": f"forged-{page}"}, [])
    assert len(sent) == chartgrid.MAX_PAGE_VIEWS
    chartgrid._PAGES_SERVED.clear()


# --- No stale answers, every message shown, every message names the control in its unit. ---


def _upload(dash, name, body):
    dash.train.controls["price_file"].value = (
        {"name": name, "content": memoryview(body), "type": "text/csv", "size": len(body)},
    )


def test_invalid_input_clears_the_answer_until_a_valid_scenario_is_computed():
    dash = Dashboard()
    assert "Train on" in dash.train.card.value and dash.link.value
    dash.train.controls["budget_musd"].value = 2e6
    status = dash.train.status.value
    assert "Budget cap ($M, 0 = none): must be between" in status and "got 2e+06" in status
    assert "Budget usd" not in status and "2e+12" not in status
    assert "Train on" not in dash.train.card.value and "wb-stale" in dash.train.card.value
    assert "wb-stale" in dash.train.table.value and dash.link.value == ""
    assert dash.train.charts.layout.visibility == "hidden"
    dash.train.prepare_downloads()
    assert dash.train.downloads.value == ""  # no downloads of a previous answer
    dash.train.controls["budget_musd"].value = 0
    assert "Train on" in dash.train.card.value and dash.link.value and dash.train.status.value == ""
    assert dash.train.charts.layout.visibility is None


def test_a_tab_is_marked_working_while_its_answer_is_recomputed_and_only_then(dash, monkeypatch):
    # The page dims the answer on screen while a new one is worked out (a 405B plan takes seconds): the tab carries
    # the class from the change until the answer, or the message, is shown, on both tabs and when it fails.
    from workbook.app import stale

    dash.tabs.selected_index = 1
    seen = []
    for view in (dash.train, dash.serve):
        recompute = view._recompute

        def watched(scenario, view=view, recompute=recompute):
            seen.append(stale.WORKING in view.widget._dom_classes)
            recompute(scenario)

        monkeypatch.setattr(view, "_recompute", watched)
    dash.train.controls["days"].value = 20
    dash.serve.controls["rps"].value = 3
    assert seen == [True, True]  # Train, then Serve
    assert not any(stale.WORKING in v.widget._dom_classes for v in (dash.train, dash.serve))

    def fails(scenario):
        raise RuntimeError("boom")

    monkeypatch.setattr(dash.serve, "_recompute", fails)
    dash.serve.controls["rps"].value = 4
    assert "could not be computed (RuntimeError: boom)" in dash.serve.status.value
    assert stale.WORKING not in dash.serve.widget._dom_classes


def test_a_bad_link_shows_all_its_messages_together_and_no_answer():
    dash = Dashboard()
    dash.apply_query("params_b=13&active_params_b=500&foo=1")
    status = dash.train.status.value
    assert "Active params (B): must not exceed the model size (13B), got 500B" in status
    assert "unknown link parameter &#x27;foo&#x27; ignored" in status
    assert "Train on" not in dash.train.card.value and dash.link.value == ""
    dash.train.controls["active_params_b"].value = 5  # the user fixes it: the answer returns, the link note goes
    assert "Train on" in dash.train.card.value and dash.train.status.value == ""


def test_rejected_upload_after_a_good_one_is_reported_and_the_good_one_stays_in_use():
    dash = Dashboard()
    header = b"accelerator_id,cloud,pricing_model,usd_per_chip_hour,as_of,source\n"
    _upload(dash, "ours.csv", header + b"tpu-v5p,gcp,on-demand,0.5,2026-11-01,our contract\n")
    ours = dash.train.catalog
    assert "Using your prices from ours.csv" in dash.train.status.value
    _upload(dash, "bad.csv", header + b"tpu-v5p,gcp,on-demand,-2,2026-11-01,x y\n")
    status = dash.train.status.value
    assert "bad.csv line 2, column usd_per_chip_hour" in status and "still using your prices from ours.csv" in status
    assert dash.train.catalog is ours
    dash.train.controls["days"].value = 20  # an unrelated change keeps both the prices and the message
    assert dash.train.catalog is ours and "still using your prices from ours.csv" in dash.train.status.value


def test_oversized_upload_is_refused_with_a_message_naming_the_limit():
    from workbook.app.upload import MAX_UPLOAD_BYTES

    dash = Dashboard()
    upload = dash.train.controls["price_file"]
    before = dash.train.catalog
    upload._on_message(upload, {"too_large": True, "name": "huge.csv", "size": 12 * 2**20}, [])
    assert "huge.csv is 12.0 MiB, above the 5.0 MiB limit" in dash.train.status.value
    # A client that skips the page's check and sends the bytes anyway gets the same answer.
    upload._on_message(upload, {"upload": True, "name": "sneaky.csv"}, [memoryview(b"x" * (MAX_UPLOAD_BYTES + 1))])
    assert "sneaky.csv is 5.0 MiB, above the 5.0 MiB limit" in dash.train.status.value
    assert dash.train.catalog is before and "Train on" in dash.train.card.value


def test_downloads_are_prepared_once_per_result(monkeypatch):
    from workbook.app import views

    dash = Dashboard()
    calls, servings = [], []

    def fake(*args, link, serving):
        servings.append(serving)
        return calls.append(dash.train.prepare.description) or "links"

    monkeypatch.setattr(views, "downloads", fake)
    for _ in range(10):
        dash.train.prepare_downloads()
    assert calls == ["Preparing..."] and dash.train.downloads.value == "links"
    assert dash.train.prepare.description == "Prepare downloads" and not dash.train.prepare.disabled
    dash.train.controls["days"].value = 21  # a new result needs new downloads
    assert dash.train.downloads.value == ""
    dash.train.prepare_downloads()
    assert len(calls) == 2 and servings == [None, None]
    dash.tabs.selected_index = 1  # the brief now has a serving answer (and the link the Serve values)
    dash.train.prepare_downloads()
    dash.train.prepare_downloads()
    assert len(calls) == 3 and servings[-1] is dash.serve.recommendation is not None


def test_serve_view_clears_its_answer_on_invalid_input():
    dash = Dashboard()
    dash.tabs.selected_index = 1
    assert "Serve on" in dash.serve.card.value
    dash.serve.controls["output_tokens"].max = 10_000_000
    dash.serve.controls["output_tokens"].value = 5_000_000
    assert dash.serve.status.value.count("Output tokens: must be between") == 1
    assert "Serve on" not in dash.serve.card.value and dash.serve.charts.layout.visibility == "hidden"
    dash.serve.controls["output_tokens"].value = 300
    assert "Serve on" in dash.serve.card.value and dash.serve.status.value == ""


def test_a_wider_answer_spread_serves_fewer_tokens_per_chip():
    # Reasoning answers spread far (MLPerf's DeepSeek-R1: p99 about 5x the mean): a long answer stays in flight longer
    # and reads a longer context, so a chip sustains fewer tokens/s. The slider sets the p99 as a multiple of the
    # output tokens; 1 keeps every answer the mean's length. Past 200,000 tokens the page names the control.
    dash = Dashboard()
    dash.tabs.selected_index = 1
    serve = dash.serve
    serve.controls["output_tokens"].value = 2000
    assert serve.scenario.output_tokens_p99 is None
    per_chip = (pl.col("capacity_tokens_per_s_per_replica") / pl.col("chips_per_replica")).max()
    even = serve.frame.filter(pl.col("feasible")).select(per_chip).item()
    serve.controls["answer_spread"].value = 5.0
    assert serve.scenario.output_tokens_p99 == 10_000
    assert "answers average 2,000 tokens and reach 10,000 at the 99th percentile" in serve.card.value
    spread = serve.frame.filter(pl.col("feasible")).select(per_chip).item()
    assert spread < even
    serve.controls["output_tokens"].value = 50_000  # p99 250,000: past what a scenario accepts
    assert serve.status.value.startswith("<") and "Answer p99 ÷ mean" in serve.status.value
    assert "Serve on" not in serve.card.value


def test_serve_table_lists_options_that_fit_on_no_replica():
    dash = Dashboard()
    dash.train.controls["params_b"].value = 2000.0  # too large even for a pipeline of 8 nodes of small-memory chips
    dash.tabs.selected_index = 1
    frame = dash.serve.frame
    assert frame is not None and frame["replicas"].null_count() > 0, dash.serve.status.value
    assert dash.serve.status.value == "" and "wb-serve-table" in dash.serve.table.value
    assert "do not fit even in a replica" in dash.serve.table.value
