"""Sharing in a real headless Chromium against Voila: every control of both tabs survives the page's own link
opened in a fresh browser context, Copy link fills the clipboard and says so, and an uploaded negotiated price
that undercuts the runner-up makes it the answer, marked "your price".

The controls are enumerated from the page (every ipywidgets slider, checkbox, dropdown, toggle group and number
box in each tab), so a control added later is covered with no change here; the link's parameters are counted
against them, so a control the link forgets fails the test."""

from __future__ import annotations

import time
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.browser import NEEDS_CHROMIUM, launch_chromium, voila

pytestmark = NEEDS_CHROMIUM

KINDS = ".widget-slider, .widget-checkbox, .widget-dropdown, .widget-toggle-buttons, .widget-text"

# Each control of the visible tab panel: its label, kind, value as the page shows it, and whether it is disabled.
CONTROLS = """(kinds) => {
  const panel = Array.from(document.querySelectorAll('.widget-tab-contents > .widget-box'))
    .find(p => p.offsetParent !== null);
  const kind = el => ['slider', 'checkbox', 'dropdown', 'toggle-buttons', 'text']
    .find(k => el.classList.contains('widget-' + k));
  const label = el => Array.from(el.querySelectorAll('.widget-label, .widget-label-basic span'))
    .map(l => l.textContent.replace(/\u200b/g, '').trim()).find(t => t) || '';
  const value = el => {
    const k = kind(el);
    if (k === 'checkbox') return el.querySelector('input').checked ? 'on' : 'off';
    if (k === 'slider') return el.querySelector('.widget-readout').textContent.trim();
    if (k === 'dropdown') { const s = el.querySelector('select'); return s.options[s.selectedIndex].textContent; }
    if (k === 'toggle-buttons') return Array.from(el.querySelectorAll('button.mod-active'))
      .map(b => b.textContent.trim()).join();
    return el.querySelector('input').value;
  };
  return Array.from(panel.querySelectorAll(kinds)).map((el, index) => ({
    index, label: label(el), kind: kind(el), value: value(el),
    disabled: !!el.querySelector('[disabled]') || el.classList.contains('mod-disabled')}));
}"""

# The cards of both tabs, as text (the hidden tab's too).
CARDS = "Array.from(document.querySelectorAll('.wb-card')).map(c => c.textContent)"


@pytest.fixture(scope="module")
def app():
    from playwright.sync_api import sync_playwright

    with voila() as url, sync_playwright() as p:
        browser = launch_chromium(p)
        yield url, browser
        browser.close()


def _open(browser, url, **context):
    page = browser.new_context(viewport={"width": 1500, "height": 1800}, **context).new_page()
    page.goto(url, timeout=120_000)
    page.wait_for_function("document.querySelectorAll('.vega-embed svg').length >= 4", timeout=120_000)
    page.locator(".wb-share a.wb-link").wait_for(timeout=60_000)
    return page


def _controls(page) -> list[dict]:
    return page.evaluate(CONTROLS, KINDS)


def _values(page) -> dict[str, str]:
    controls = _controls(page)
    values = {c["label"]: c["value"] for c in controls}
    assert len(values) == len(controls), "two controls share a label: the comparison would mix them up"
    return values


def _panel_control(page, index: int):
    panel = page.locator(".widget-tab-contents > .widget-box:visible").first
    return panel.locator(KINDS).nth(index)


def _change(page, control: dict, option: int = -1) -> None:
    """Give one control a value other than its current one, as a user would (a dropdown: its ``option``-th choice,
    or its first where that is the current one)."""
    el = _panel_control(page, control["index"])
    kind = control["kind"]
    if kind == "checkbox":
        el.locator("input").click()
    elif kind == "dropdown":
        select = el.locator("select")
        options = select.locator("option").all_inner_texts()
        current = options.index(control["value"])
        pick = option % len(options)
        select.select_option(index=pick if current != pick else 0)
    elif kind == "toggle-buttons":
        el.locator("button:not(.mod-active)").last.click()
    elif kind == "text":
        box = el.locator("input")
        box.fill(str(float(control["value"] or 0) + 1).removesuffix(".0"))
        box.press("Enter")
    else:  # sliders move down; the later a slider, the further (active parameters stay below the model size)
        handle = el.locator(".noUi-handle")
        handle.focus()
        before = handle.get_attribute("aria-valuenow")
        for _ in range(3 + control["index"]):
            handle.press("ArrowLeft")
        if handle.get_attribute("aria-valuenow") == before:  # it starts at its least (the answers' spread): up
            for _ in range(3 + control["index"]):
                handle.press("ArrowRight")


def _open_accordions(page) -> None:
    """Unfold the visible tab's folded sections (Advanced), where controls are too."""
    panel = page.locator(".widget-tab-contents > .widget-box:visible").first
    for fold in panel.locator(".jupyter-widget-Collapse").all():
        if "lm-mod-hidden" in (fold.locator(".jupyter-widget-Collapse-contents").get_attribute("class") or ""):
            fold.locator(".jupyter-widget-Collapse-header").click()


LOCKING = ("Model",)  # a published architecture sets the model's sizes and locks their controls: changed last


def _change_every_control(page, menu_option: int = -1) -> dict[str, str]:
    """Change every control of the visible tab (the ones others enable, later; the model menu, which locks the
    sizes, last, to its ``menu_option``-th choice); return the defaults."""
    _open_accordions(page)
    before = _controls(page)
    assert len(before) >= 10, before  # the page was found and enumerated
    for control in sorted(before, key=lambda c: (c["label"] in LOCKING, c["kind"] == "slider", c["index"])):
        if not control["disabled"] or control["kind"] in ("slider", "dropdown"):
            current = next(c for c in _controls(page) if c["index"] == control["index"])
            if current["disabled"]:  # still disabled once everything before it changed: wait for the kernel
                page.wait_for_function(f"!({CONTROLS})({KINDS!r})[{control['index']}].disabled", timeout=60_000)
            option = menu_option if control["label"] in LOCKING else -1
            _change(page, {**control, "value": current["value"]}, option)
    return {c["label"]: c["value"] for c in before}


def _settled_link(page, quiet_s: float = 6, timeout_s: float = 240) -> str:
    """The page's link once, for ``quiet_s``, it has not changed and no tab has been working out an answer (the
    kernel has worked through every change: one answer can take longer than ``quiet_s`` on a loaded machine, and
    the page sends a slider's later moves only once the kernel is done with its first)."""
    link = page.locator(".wb-share a.wb-link")
    deadline, last, since = time.time() + timeout_s, None, time.time()
    while time.time() < deadline:
        href = link.get_attribute("href") if link.count() else None
        if href != last or page.locator(".wb-working").count():
            last, since = href, time.time()
        elif href and time.time() - since > quiet_s:
            return link.evaluate("a => a.href")  # absolute, as the anchor resolves it
        time.sleep(0.5)
    raise AssertionError(f"the link kept changing or never appeared (last {last!r})")


def _tab(page, name: str) -> None:
    page.get_by_role("tab", name=name).click()
    page.locator(".widget-tab-contents > .widget-box:visible").first.wait_for(timeout=60_000)


def _visible_card(page) -> str:
    """The card of the tab showing, once computed (the Serve tab is built when first opened)."""
    card = page.locator(".widget-tab-contents > .widget-box:visible .wb-card").first
    card.wait_for(timeout=120_000)
    return card.inner_text()


def test_link_round_trips_every_control_of_both_tabs(app):
    url, browser = app
    sender = _open(browser, url)
    train_defaults = _change_every_control(sender)
    _tab(sender, "Serve")
    _visible_card(sender)
    serve_defaults = _change_every_control(sender, menu_option=-2)  # the Serve tab starts on the Train tab's model
    link = _settled_link(sender)
    serve_values = _values(sender)
    _tab(sender, "Train")
    train_values = _values(sender)
    _tab(sender, "Serve")
    cards = sender.evaluate(CARDS)
    assert len(cards) == 2 and all(cards), cards

    unchanged = [k for k, v in train_values.items() if train_defaults[k] == v]
    unchanged += [k for k, v in serve_values.items() if serve_defaults[k] == v]
    assert not unchanged, f"controls the test could not change: {unchanged}"
    params = parse_qs(urlsplit(link).query)
    assert params.pop("mode") == ["serve"]
    carried_serve = [p for p in params if p.startswith("serve_")]
    assert len(carried_serve) == len(serve_values), (sorted(carried_serve), sorted(serve_values))
    assert len(params) - len(carried_serve) == len(train_values), (sorted(params), sorted(train_values))

    receiver = _open(browser, link)  # a fresh context: no cookies, storage or history
    _visible_card(receiver)
    assert receiver.locator(".widget-tab-contents > .widget-box:visible .wb-serve-table").count() == 1
    _settled_link(receiver)
    assert _values(receiver) == serve_values
    assert receiver.evaluate(CARDS) == cards
    _tab(receiver, "Train")
    assert _values(receiver) == train_values
    assert "Link:" not in receiver.inner_text("body")  # nothing in the link was refused
    sender.context.close()
    receiver.context.close()


def test_copy_link_fills_the_clipboard_and_says_so(app):
    url, browser = app
    page = _open(browser, url + "/?params_b=13&days=60", permissions=["clipboard-read", "clipboard-write"])
    link = page.locator(".wb-share a.wb-link")
    href = _settled_link(page)
    assert "params_b=13" in href and href.startswith(url)
    page.locator(".wb-share button.wb-copy").click()
    page.locator(".wb-share button.wb-copy", has_text="Link copied").wait_for(state="visible", timeout=10_000)
    assert page.evaluate("navigator.clipboard.readText()") == href
    style = link.evaluate(
        "a => ({line: getComputedStyle(a).textDecorationLine, colour: getComputedStyle(a).color, "
        "text: getComputedStyle(a.closest('.wb-share').parentElement).color, cursor: getComputedStyle(a).cursor})"
    )
    assert "underline" in style["line"] and style["colour"] != style["text"] and style["cursor"] == "pointer", style
    page.context.close()


def test_an_uploaded_negotiated_price_makes_the_runner_up_win(app, tmp_path):
    from workbook import catalog
    from workbook.app import state
    from workbook.training import options
    from workbook.training.recommend import recommend

    url, browser = app
    scenario = state.scenario_from({"days": 60})
    before = recommend(options.evaluate(scenario, catalog.load()))
    assert before.best is not None and before.runners_up, "the default scenario no longer has a runner-up"
    runner = before.runners_up[0]
    mine = tmp_path / "negotiated.csv"
    mine.write_text(  # a quarter of the runner-up's list price, in every region of its cloud
        "accelerator_id,cloud,pricing_model,usd_per_chip_hour,as_of,source\n"
        f"{runner['accelerator_id']},{runner['cloud']},{runner['pricing_model']},"
        f"{runner['usd_per_chip_hour'] / 4:.2f},2026-01-01,our contract\n"
    )
    after = recommend(options.evaluate(scenario, catalog.load(price_overrides=mine)))
    assert after.best["accelerator_id"] == runner["accelerator_id"], "a quarter of its price no longer wins"

    page = _open(browser, url + "/?days=60")
    headline = page.locator(".wb-headline").first
    assert before.best["name"] in headline.inner_text() and "your price" not in headline.inner_text()
    _open_accordions(page)
    page.locator(".wb-upload input[type=file]").set_input_files(str(mine))
    page.locator(".wb-message", has_text="Using your prices from negotiated.csv").wait_for(timeout=90_000)
    page.locator(".wb-headline", has_text="your price").wait_for(timeout=60_000)
    text = headline.inner_text()
    assert text.startswith(f"Train on {runner['name']} ({runner['cloud']}") and "your price" in text, text
    assert page.locator(".wb-table tbody tr", has_text="your price").count() >= 1
    page.context.close()


SORT_KEYS = """(column) => Array.from(document.querySelectorAll('table.wb-table:not(.wb-serve-table) tbody tr'))
  .map(r => r.cells[column].dataset.sort)"""


def test_option_table_sorts_by_a_clicked_column(app):
    url, browser = app
    page = _open(browser, url)
    headers = page.locator("table.wb-table:not(.wb-serve-table) thead th")
    column = headers.all_inner_texts().index("Chips (layout)")
    before = page.evaluate(SORT_KEYS, column)
    numbers = [float(k) for k in before if k]
    assert len(numbers) > 10 and numbers != sorted(numbers), "cheapest first is no longer a different order"
    for clicks, direction in ((1, 1), (2, -1)):
        headers.nth(column).click()
        keys = page.evaluate(SORT_KEYS, column)
        shown = [float(k) for k in keys if k]
        assert shown == sorted(numbers, reverse=direction < 0), clicks
        assert all(keys[: len(shown)]), "blank cells (no plan) sort last"
        expected = "ascending" if direction > 0 else "descending"
        assert headers.nth(column).get_attribute("aria-sort") == expected
    page.context.close()
