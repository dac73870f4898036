"""Helpers to open the static page (``python -m workbook static``) in headless Chromium and time a control move."""

from __future__ import annotations

import contextlib

from tests.browser import launch_chromium

# Set a control, then count animation frames until every chart's SVG differs from before the move: the time from
# the input event to the first painted frame that shows all charts redrawn (measured inside the page).
MOVE = """async ([id, value]) => {
  const svgs = () => Array.from(document.querySelectorAll('#wb-charts svg')).map((s) => s.innerHTML);
  const before = svgs();
  const el = document.getElementById(id);
  const start = performance.now();
  el.value = String(value);
  el.dispatchEvent(new Event('input', { bubbles: true }));
  for (let frames = 0; frames < 600; frames++) {
    await new Promise((resolve) => requestAnimationFrame(resolve));
    const now = svgs();
    if (now.length === before.length && now.every((html, i) => html !== before[i])) return performance.now() - start;
  }
  return null;
}"""


@contextlib.contextmanager
def opened(path, viewport=(1500, 1300)):
    """Yield (page, requests) for the page at ``path``, after its charts are drawn; every request URL is recorded."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = launch_chromium(p)
        page = browser.new_page(viewport={"width": viewport[0], "height": viewport[1]})
        requests, errors = [], []
        page.on("request", lambda r: requests.append(r.url))
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(path.resolve().as_uri())
        page.wait_for_selector("body[data-ready=true]", timeout=60_000)
        page.errors = errors
        try:
            yield page, requests
        finally:
            browser.close()


def move_ms(page, control: str, value) -> float | None:
    """Milliseconds from setting ``control`` (an element id) to all charts redrawn; None if they never changed."""
    return page.evaluate(MOVE, [control, value])
