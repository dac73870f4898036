"""Issue 19 in a real browser: the served surface is the shipped app only, one visitor's repeated requests cost
nothing, invalid input clears the answer, an oversized upload is refused in the page, a full server says busy."""

import time
import urllib.error
import urllib.request

import pytest

from tests.browser import NEEDS_CHROMIUM, launch_chromium, voila

pytestmark = NEEDS_CHROMIUM
LOCAL = {"127.0.0.1", "localhost", ""}
BIG_FRAME_BYTES = 500_000  # the chart bundle is ~0.9 MB; every other kernel message is far smaller


@pytest.fixture(scope="module")
def server():
    with voila() as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = launch_chromium(p)
        yield browser
        browser.close()


def _open(browser, url):
    """A fresh page (so a fresh kernel) with a log of every request's host and every big websocket frame."""
    page = browser.new_page(viewport={"width": 1500, "height": 1800})
    page.hosts, page.big_frames, page.sent_bytes = [], [], []
    page.on("request", lambda request: page.hosts.append(request.url.split("/")[2].split(":")[0]))

    def watch(ws):
        ws.on("framereceived", lambda payload: len(payload) > BIG_FRAME_BYTES and page.big_frames.append(len(payload)))
        ws.on("framesent", lambda payload: page.sent_bytes.append(len(payload)))

    page.on("websocket", watch)
    page.goto(url, timeout=120_000)
    page.wait_for_function("document.querySelectorAll('.vega-embed svg').length >= 4", timeout=120_000)
    return page


@pytest.mark.parametrize("query", ["?template=classic", "?template=reveal", "?theme=dark", "?template=nope&theme=x"])
def test_template_and_theme_from_the_url_are_ignored(server, browser, query):
    page = _open(browser, server + "/" + query)
    try:
        assert set(page.hosts) <= LOCAL, set(page.hosts)
        css = page.evaluate("Array.from(document.querySelectorAll('link[rel=stylesheet]')).map(l => l.href)")
        assert any("/voila/templates/workbook/static/" in href for href in css), css
        assert page.evaluate("document.body.dataset.jpThemeName") == "JupyterLab Light"
        assert page.locator(".wb-headline").inner_text().startswith("Train on")
    finally:
        page.close()


RESEND = """async (times) => {
  const [socket, frame] = window.__bundleRequest;
  for (let i = 0; i < times; i++) socket.send(frame);
}"""
CAPTURE = """(() => {
  const send = WebSocket.prototype.send;
  WebSocket.prototype.send = function (data) {
    const text = typeof data === 'string' ? data : new TextDecoder().decode(data);
    if (text.includes('"request":"bundle"')) window.__bundleRequest = [this, data];
    return send.call(this, data);
  };
})()"""


def test_repeated_bundle_requests_are_ignored(server, browser):
    context = browser.new_context()
    context.add_init_script(CAPTURE)
    page = context.new_page()
    page.big_frames = []
    page.on(
        "websocket", lambda ws: ws.on("framereceived", lambda p: len(p) > BIG_FRAME_BYTES and page.big_frames.append(1))
    )
    try:
        page.goto(server + "/", timeout=120_000)
        page.wait_for_function("document.querySelectorAll('.vega-embed svg').length >= 4", timeout=120_000)
        assert page.evaluate("Array.isArray(window.__bundleRequest)")
        assert len(page.big_frames) == 1  # both chart grids share one bundle
        page.evaluate(RESEND, 30)
        page.wait_for_timeout(5000)
        assert len(page.big_frames) == 1, "the kernel sent the bundle again"
        assert page.locator(".wb-headline").inner_text().startswith("Train on")
    finally:
        context.close()


def test_invalid_input_marks_the_answer_stale_until_fixed(server, browser):
    page = _open(browser, server + "/")
    try:
        budget = page.locator(".widget-text", has_text="Budget cap").locator("input")
        budget.fill("2000000")
        budget.press("Enter")
        page.locator(".wb-card.wb-stale").wait_for(timeout=30_000)
        # The shell removes the share link in its own widget update, which may reach the page just after the card's.
        page.wait_for_function("document.querySelectorAll('.wb-link').length === 0", timeout=10_000)
        assert page.locator(".wb-headline").count() == 0
        assert "Budget cap ($M, 0 = none): must be between" in page.locator(".wb-message").first.inner_text()
        grid = page.locator(".vega-embed").first.evaluate("e => getComputedStyle(e).visibility")
        assert grid == "hidden"
        budget.fill("0")
        budget.press("Enter")
        page.locator(".wb-headline", has_text="Train on").wait_for(timeout=30_000)
        # the message is cleared in the same update, sent just after the card
        page.wait_for_function("document.querySelectorAll('.wb-message').length === 0", timeout=10_000)
        page.locator(".wb-share a.wb-link").wait_for(timeout=10_000)  # and the share link is back
    finally:
        page.close()


def test_oversized_upload_is_refused_in_the_page(server, browser):
    from workbook.app.upload import MAX_UPLOAD_BYTES

    page = _open(browser, server + "/")
    try:
        page.get_by_text("Advanced: MFU, goodput").click()
        size = MAX_UPLOAD_BYTES + 2**20
        page.locator(".wb-upload input[type=file]").set_input_files(
            files=[{"name": "huge.csv", "mimeType": "text/csv", "buffer": b"a," * (size // 2)}]
        )
        note = page.locator(".wb-upload-note")
        note.wait_for(timeout=10_000)
        assert "huge.csv is 6.0 MiB: the limit is 5.0 MiB, so it was not sent" in note.inner_text()
        page.locator(".wb-message", has_text="above the 5.0 MiB limit").wait_for(timeout=30_000)
        assert max(page.sent_bytes) < 100_000  # the file never went over the socket
        assert page.locator(".wb-headline").inner_text().startswith("Train on")
    finally:
        page.close()


def test_a_full_server_answers_busy_at_once():
    with voila("notebooks/app.ipynb", "--CappedKernelManager.max_kernels=1") as url:
        deadline = time.time() + 120
        while True:  # the seat is taken by the warm kernel Voila starts at launch; wait until it serves a page
            try:
                assert urllib.request.urlopen(url + "/", timeout=120).status == 200
                break
            except urllib.error.HTTPError as err:
                assert err.code == 503 and time.time() < deadline
                time.sleep(2)
        started = time.time()
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(url + "/?template=classic", timeout=60)
        body = err.value.read().decode()
        assert err.value.code == 503 and time.time() - started < 10
        assert "The workbook is busy" in body and "try again in a minute" in body and "://" not in body
