"""JupyterLab in headless Chromium: the engineer notebook's live section shows sliders, moving one redraws the chart,
and hovering a bar shows its tooltip. Lab serves a copy of the notebook, so nothing rewrites the saved one.
And Lab's Voila preview, started as `make lab` starts Lab (at the repository root), renders the app page."""

import re
import shutil
import sys
import time

import pytest

from tests.browser import NEEDS_CHROMIUM, ROOT, fetch, free_port, launch_chromium, served

pytestmark = NEEDS_CHROMIUM

LIVE = ".jp-OutputArea-output:has(.noUi-handle)"


def lab(root, **env):
    """JupyterLab serving ``root``; ``env`` adds to the server's environment (e.g. JUPYTERLAB_SETTINGS_DIR)."""
    port = free_port()
    lab_flags = ["--no-browser", f"--port={port}", "--ServerApp.ip=127.0.0.1", f"--ServerApp.root_dir={root}"]
    quiet = ["--IdentityProvider.token=", "--allow-root", "--LabApp.news_url=None"]
    # cwd = root, as `make lab`: Voila's server extension reads voila.json from there
    return served([sys.executable, "-m", "jupyter", "lab", *lab_flags, *quiet], root, port, env)


def _open_and_run_all(page, address: str) -> None:
    """Open a notebook in Lab (retrying while the server starts) and run every cell once its panel is ready."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    deadline = time.time() + 90
    while True:  # the server may still be starting
        try:
            page.goto(address, timeout=60_000)
            break
        except Exception:
            if time.time() > deadline:
                raise
            time.sleep(1)

    page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=120_000)
    for attempt in range(3):  # a click before the notebook panel is ready can be lost: retry until cells run
        page.locator(".jp-Notebook").first.click()
        page.get_by_role("menuitem", name="Run", exact=True).click()
        page.get_by_text("Run All Cells", exact=True).click()
        try:
            page.locator(".jp-InputPrompt", has_text=re.compile(r"\[(\*|\d+)\]")).first.wait_for(timeout=60_000)
            break
        except PlaywrightTimeout:
            if attempt == 2:
                raise


@pytest.fixture(scope="module")
def browser():
    """One Chromium for the module: Playwright's sync API cannot be started again while a module fixture holds it."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = launch_chromium(p)
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def live(tmp_path_factory, browser):
    root = tmp_path_factory.mktemp("lab")
    shutil.copy(ROOT / "notebooks" / "explore.ipynb", root / "explore.ipynb")
    with lab(root) as url:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        _open_and_run_all(page, url + "/lab/tree/explore.ipynb")
        page.locator(LIVE).first.wait_for(state="attached", timeout=300_000)
        page.locator(LIVE).first.scroll_into_view_if_needed()
        page.locator(LIVE).first.locator(".vega-embed svg.marks").first.wait_for(timeout=120_000)
        # Run All has finished when the last cell (a new chip, section 12) has printed its table.
        page.locator(".jp-OutputArea-output", has_text="my-chip").first.wait_for(state="attached", timeout=300_000)
        yield page
        page.close()


def _chart(page) -> str:
    return page.locator(LIVE).first.locator(".vega-embed svg.marks").first.inner_html()


def test_live_output_is_the_widget_not_the_picture(live):
    output = live.locator(LIVE).first
    assert output.locator(".widget-slider").count() == 2
    assert "Params (B)" in output.inner_text() and "Target days" in output.inner_text()
    assert output.locator(".vega-embed svg.marks").count() == 1


def test_hovering_a_bar_shows_its_tooltip(live):
    # Before the slider test: each key press there queues a redraw that replaces the chart for a while after.
    bars = live.locator(LIVE).first.locator(".vega-embed .mark-rect path").all()
    assert bars
    widest = max(bars, key=lambda bar: (bar.bounding_box() or {"width": 0})["width"])
    box = widest.bounding_box()
    live.mouse.move(0, 0)  # from outside the chart, so the hover is a fresh mouse-over
    # Near the bar's left end and off its centre line, where the low-high range rule is drawn over it.
    widest.hover(position={"x": box["width"] * 0.1, "y": box["height"] * 0.25})
    tooltip = live.locator("#vg-tooltip-element")
    tooltip.wait_for(state="visible", timeout=10_000)
    assert "Cost" in tooltip.inner_text() and "Accelerator" in tooltip.inner_text()


def test_moving_the_model_size_slider_redraws_the_chart(live):
    before = _chart(live)
    handle = live.locator(LIVE).first.locator(".widget-slider", has_text="Params (B)").locator(".noUi-handle")
    handle.focus()
    for _ in range(12):
        handle.press("ArrowRight")
    deadline = time.time() + 90
    while _chart(live) == before and time.time() < deadline:
        time.sleep(0.2)
    readout = live.locator(LIVE).first.locator(".widget-readout").first.inner_text()
    errors = live.locator("[data-mime-type='application/vnd.jupyter.stderr']").all_inner_texts()
    assert _chart(live) != before, f"the cost chart did not change (slider readout {readout}; stderr {errors})"


def test_labs_voila_preview_renders_the_app():
    with lab(ROOT) as url:
        status, page = fetch(url + "/voila/render/notebooks/app.ipynb")
    assert status == 200, page[-2000:]
    assert "<title>Accelerator Workbook</title>" in page
    assert "application/vnd.jupyter.widget-view+json" in page and "Traceback" not in page
    assert "font-awesome" not in page  # the workbook template (from voila.json), found where the install put it


# The text colour and the first opaque background behind the card, and the WCAG contrast ratio between them.
CONTRAST = """el => {
  const rgb = c => c.match(/[\\d.]+/g).map(Number);
  let box = el, background = null;
  while (box && !background) {
    const c = rgb(getComputedStyle(box).backgroundColor);
    if (c.length < 4 || c[3] > 0) background = c.slice(0, 3);
    box = box.parentElement;
  }
  const linear = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
  const lum = c => { const [r, g, b] = c.map(linear); return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
  const text = rgb(getComputedStyle(el).color).slice(0, 3);
  const [hi, lo] = [lum(text), lum(background)].sort((a, b) => b - a);
  return {text, background, ratio: (hi + 0.05) / (lo + 0.05)};
}"""


def test_the_dashboard_in_labs_dark_theme_is_readable_and_links_to_the_app(tmp_path, browser):
    """The app notebook run in JupyterLab's dark theme: the card and the option table read light on dark (contrast
    at least 4.5, WCAG AA), and the scenario link opens the app, not the Lab page."""
    from workbook.app import links

    settings = tmp_path / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "themes.jupyterlab-settings").write_text('{"theme": "JupyterLab Dark"}')
    shutil.copy(ROOT / "notebooks" / "app.ipynb", tmp_path / "app.ipynb")  # a copy: Lab may save what it ran
    with lab(tmp_path, JUPYTERLAB_SETTINGS_DIR=str(tmp_path / "settings")) as url:
        page = browser.new_page(viewport={"width": 1400, "height": 1200})
        _open_and_run_all(page, url + "/lab/tree/app.ipynb")
        assert page.evaluate("document.body.dataset.jpThemeName") == "JupyterLab Dark"
        card = page.locator(".jp-OutputArea-output .wb-card").first
        card.wait_for(timeout=180_000)
        page.locator(".jp-OutputArea-output table.wb-table").first.wait_for(state="attached", timeout=60_000)
        for element in (card, page.locator(".wb-headline").first, page.locator("table.wb-table td").first):
            seen = element.evaluate(CONTRAST)
            assert seen["ratio"] >= 4.5, seen
        assert sum(seen["background"]) < 3 * 128, seen  # the dark theme's background, not a white panel
        href = page.locator(".wb-share a.wb-link").get_attribute("href")
        assert href.startswith(links.DEFAULT_APP_URL + "?") and "mode=train" in href, href
        assert "in the app at" in page.locator(".wb-share a.wb-link").inner_text()
        page.close()
