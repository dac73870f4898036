"""Voila started the ways its users start it, with no JUPYTER_PATH: `voila notebooks/app.ipynb` from the repository
root (tests/e2e/test_browser.py drives that page), and with a base URL as in the README's JupyterHub service recipe
(`voila --Voila.base_url=/services/workbook/`). Both find the installed workbook template and draw the charts."""

from urllib.parse import urlparse

from tests.browser import NEEDS_CHROMIUM, launch_chromium, voila

pytestmark = NEEDS_CHROMIUM

BASE = "/services/workbook/"


def test_app_renders_under_a_jupyterhub_service_base_url():
    from playwright.sync_api import sync_playwright

    with voila("notebooks/app.ipynb", f"--Voila.base_url={BASE}") as url, sync_playwright() as p:
        browser = launch_chromium(p)
        page = browser.new_page(viewport={"width": 1500, "height": 1800})
        paths = []
        page.on("request", lambda request: paths.append(urlparse(request.url)))
        response = page.goto(url + BASE, timeout=90_000)
        assert response.status == 200
        page.wait_for_function("document.querySelectorAll('.vega-embed svg').length >= 4", timeout=120_000)
        assert page.locator(".wb-headline").first.inner_text().startswith("Train on ")
        browser.close()
    fetched = {url.path for url in paths if url.scheme in ("http", "https", "ws")}  # not in-page blob: URLs
    assert fetched and all(path.startswith(BASE) for path in fetched), sorted(fetched)
