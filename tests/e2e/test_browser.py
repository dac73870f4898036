"""The Voila app in a real headless Chromium: it renders, and moving sliders changes charts and the answer."""

import time

import pytest

from tests.browser import NEEDS_CHROMIUM, launch_chromium, voila

pytestmark = NEEDS_CHROMIUM


@pytest.fixture(scope="module")
def page():
    from playwright.sync_api import sync_playwright

    with voila() as url, sync_playwright() as p:
        browser = launch_chromium(p)
        page = browser.new_page(viewport={"width": 1500, "height": 1800})
        errors = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(url, timeout=90_000)
        page.wait_for_function("document.querySelectorAll('.vega-embed svg').length >= 4", timeout=90_000)
        page.errors = errors
        yield page
        browser.close()


def _headline(page):
    return page.locator(".wb-headline").inner_text()


def _chart_svgs(page):
    return page.evaluate("Array.from(document.querySelectorAll('.vega-embed svg')).map(s => s.innerHTML)")


def _move(page, label, presses):
    handle = page.locator(".widget-slider:visible", has_text=label).locator(".noUi-handle")  # the open tab's
    handle.focus()
    for _ in range(presses):
        handle.press("ArrowRight")


def _card(page):
    """The whole recommendation card: with nothing feasible the headline stays, the reasons (days, chips) change."""
    return page.locator(".wb-card").first.inner_text()


def _wait_change(page, before_card, before_svgs, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if _card(page) != before_card and _chart_svgs(page) != before_svgs:
            return True
        time.sleep(0.1)
    return False


def test_controls_charts_and_card_render_without_errors(page):
    body = page.inner_text("body")
    assert "Accelerator Workbook" in body and "Traceback" not in body
    for label in ("Model size", "Target days", "Framework", "Precision", "Pricing", "Budget cap"):
        assert label in body
    assert page.locator(".vega-embed svg").count() == 4
    assert _headline(page).startswith("Train on ")
    assert page.locator(".wb-table tbody tr").count() > 10
    assert not page.errors


CELLS = """Array.from(document.querySelectorAll('[data-chart]')).filter(d => d.offsetParent).map(d => {
  const cell = d.getBoundingClientRect(), svg = d.querySelector('svg').getBoundingClientRect();
  return {name: d.dataset.chart, left: Math.round(cell.left), cell: cell.width, chart: svg.width,
          grid: d.parentElement.clientWidth}; })"""


CLIPPED = """Array.from(document.querySelectorAll('[data-chart] svg'))
  .filter(s => s.parentElement.offsetParent).map(s => {
  const box = s.getBBox(), width = Number(s.getAttribute('width')), height = Number(s.getAttribute('height'));
  return {chart: s.closest('[data-chart]').dataset.chart,
          box: [box.x, box.y, box.x + box.width, box.y + box.height], width, height};
}).filter(c => c.box[0] < -1 || c.box[1] < -1 || c.box[2] > c.width + 1 || c.box[3] > c.height + 1)"""

WIDTHS = (820, 1280, 1440, 1920, 2560)
MIN_CELL_PX, GAP_PX = 480, 16  # workbook/app/chartgrid.js: two charts per row where each cell gets 480 px


def _clipped(page):
    """Visible charts whose drawing (titles, legends, labels) reaches outside their own SVG."""
    page.wait_for_timeout(300)
    return page.evaluate(CLIPPED)


def _fitted_cells(page, timeout_s=15):
    """The visible chart cells once the layout has settled after a resize (the page's panels reflow, then each chart
    is re-fitted to its cell): two reads 0.3 s apart agree and every chart fills 80-100% of its cell; or the last
    read when the time is up."""
    deadline, before = time.time() + timeout_s, None
    while True:
        cells = page.evaluate(CELLS)
        filled = cells and all(0.8 * c["cell"] <= c["chart"] <= c["cell"] + 1 for c in cells)
        if (filled and cells == before) or time.time() > deadline:
            return cells
        before = cells
        time.sleep(0.3)


def test_charts_fill_their_cells_at_every_width_on_both_tabs(page):
    """At each window width every chart is 80-100% of its grid cell, two per row where cells get their minimum
    width, one below, nothing clipped and no sideways scroll; the Serve tab, opened by a click on its tab (drawn
    while hidden), is laid out as the Train tab is."""
    columns = {}
    try:
        for tab in ("Train", "Serve"):
            page.get_by_role("tab", name=tab).click()
            if tab == "Serve":  # its charts are drawn when the app starts, while the tab is hidden
                page.wait_for_function("document.querySelectorAll('.vega-embed svg').length >= 8", timeout=60_000)
            for width in WIDTHS:
                page.set_viewport_size({"width": width, "height": 1800})
                cells = _fitted_cells(page)
                assert len(cells) == 4, (tab, width, cells)
                for c in cells:
                    assert c["chart"] <= c["cell"] + 1, (tab, width, c)  # never wider than its cell
                    assert c["chart"] >= 0.8 * c["cell"], (tab, width, c)  # fills it
                per_row = 2 if cells[0]["grid"] >= 2 * MIN_CELL_PX + GAP_PX else 1
                columns[tab, width] = len({c["left"] for c in cells})
                assert columns[tab, width] == per_row, (tab, width, cells)
                assert not _clipped(page), (tab, width)
                sideways = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
                assert sideways <= 0, (tab, width, sideways)
    finally:
        page.set_viewport_size({"width": 1500, "height": 1800})
        page.get_by_role("tab", name="Train").click()
    assert columns[("Train", 820)] == 1 and columns[("Train", 2560)] == 2, columns  # both layouts were checked
    assert all(columns["Serve", width] == columns["Train", width] for width in WIDTHS), columns


VISIBLE_ROWS = "rows => rows.filter(r => r.getClientRects().length).map(r => r.innerText.toLowerCase())"


FILTERED = """word => { const rows = Array.from(document.querySelectorAll('table[data-filter-name=options] tbody tr'));
  const held = r => r.dataset.filter.includes(word), shown = r => r.getClientRects().length > 0;
  return rows.some(r => !held(r)) && rows.every(r => shown(r) === held(r)); }"""


def test_option_table_filter_narrows_rows_and_survives_sort_and_redraw(page):
    page.get_by_role("tab", name="Train").click()
    rows = page.locator("table[data-filter-name=options] tbody tr")
    box = page.locator("input.wb-filter:visible")
    all_rows = rows.evaluate_all(VISIBLE_ROWS)
    assert len(all_rows) > 10
    try:
        for words in ("tpu", "aws", "spot", "TPU spot"):
            box.fill(words)
            shown = rows.evaluate_all(VISIBLE_ROWS)
            expected = [r for r in all_rows if all(w in r for w in words.lower().split())]
            assert 0 < len(shown) < len(all_rows) or not expected, (words, shown)
            assert shown == expected, words
        box.fill("tpu")
        page.locator("table[data-filter-name=options] th", has_text="Cost").click()  # sorting keeps the filter
        assert all("tpu" in r for r in rows.evaluate_all(VISIBLE_ROWS))
        before = (_card(page), _chart_svgs(page))
        _move(page, "Model size", 5)  # the table is redrawn; the words in the box still apply
        assert _wait_change(page, *before)
        # the redrawn table (its rows depend on where the slider landed) shows exactly its rows that hold "tpu"
        page.wait_for_function(FILTERED, arg="tpu", timeout=30_000)
    finally:
        box.fill("")
    # cleared: every row is back (once a redraw still under way after the slider move has landed)
    page.wait_for_function(
        """() => { const rows = Array.from(document.querySelectorAll('table[data-filter-name=options] tbody tr'));
                   return rows.length > 10 && rows.every(r => r.getClientRects().length); }""",
        timeout=30_000,
    )


def test_model_size_slider_changes_charts_and_recommendation(page):
    before = (_card(page), _chart_svgs(page))
    _move(page, "Model size", 40)
    assert _wait_change(page, *before), "recommendation and charts did not change after moving the model-size slider"


def test_duration_slider_changes_charts_and_recommendation(page):
    before = (_card(page), _chart_svgs(page))
    _move(page, "Target days", 60)
    assert _wait_change(page, *before), "recommendation and charts did not change after moving the duration slider"
    assert "Traceback" not in page.inner_text("body")


def test_serve_tab_renders_and_responds(page):
    page.get_by_role("tab", name="Serve").click()
    page.wait_for_function("document.querySelectorAll('.vega-embed svg').length >= 8", timeout=60_000)
    card = page.locator(".wb-headline", has_text="Serve on")
    card.wait_for(timeout=30_000)
    before_card = card.inner_text()
    before = page.evaluate("Array.from(document.querySelectorAll('.wb-serve-table')).map(t => t.innerText)")
    handle = page.locator(".widget-slider", has_text="Requests per second").locator(".noUi-handle")
    handle.focus()
    for _ in range(60):
        handle.press("ArrowRight")
    deadline = time.time() + 30
    while time.time() < deadline:
        after = page.evaluate("Array.from(document.querySelectorAll('.wb-serve-table')).map(t => t.innerText)")
        if after != before and card.inner_text() != before_card:
            break
        time.sleep(0.2)
    assert card.inner_text() != before_card and "Traceback" not in page.inner_text("body")
    assert not _clipped(page)  # charts first drawn with no data must grow to fit their new legends and titles


def test_no_request_leaves_the_machine(page):
    hosts = page.evaluate("performance.getEntriesByType('resource').map(r => new URL(r.name).hostname)")
    assert hosts and set(hosts) <= {"127.0.0.1", "localhost", ""}, set(hosts)


TABLES_CUT = """Array.from(document.querySelectorAll('table.wb-table')).filter(t => t.offsetParent).map(t => {
  let box = t.parentElement;  // the nearest ancestor that clips (widget panels hide their overflow)
  while (box !== document.body && getComputedStyle(box).overflowX === 'visible') box = box.parentElement;
  return {table: t.className, right: t.getBoundingClientRect().right, edge: box.getBoundingClientRect().right};
}).filter(c => c.right > c.edge + 1)"""


def test_tables_fit_and_the_page_never_scrolls_sideways(page):
    for tab in ("Train", "Serve"):
        page.get_by_role("tab", name=tab).click()
        page.locator(".wb-serve-table" if tab == "Serve" else ".wb-table").first.wait_for(timeout=60_000)
        try:
            for width in (820, 1280, 1440, 1920, 2560):
                page.set_viewport_size({"width": width, "height": 1800})
                page.wait_for_timeout(400)
                assert page.locator("table.wb-table:visible").count() == 1, (tab, width)  # something to check
                sideways = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
                assert sideways <= 0, (tab, width, sideways)
                assert page.evaluate(TABLES_CUT) == [], (tab, width)
        finally:
            page.set_viewport_size({"width": 1500, "height": 1800})
    page.get_by_role("tab", name="Train").click()
