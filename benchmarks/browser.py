"""Browser figures for the Voila app (reported, never asserted): `make bench-browser`.

* page load -> first chart, cold (fresh server, first visitor) and warm (later visitors);
* slider move -> all four charts re-rendered in the page (median and p90 over repeated moves);
* kernel memory (RSS of the kernel process behind one page).
Runs Voila with the shipped voila.json (as `make app` does), on a free port, and headless Chromium via playwright.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # to reuse the test helpers

from tests.browser import CHROMIUM, CHROMIUM_ARGS, voila  # noqa: E402

SNAPSHOT = "() => { window.__before = Array.from(document.querySelectorAll('.vega-embed svg')).map(s => s.innerHTML); }"
ALL_CHANGED = """() => { const now = Array.from(document.querySelectorAll('.vega-embed svg')).map(s => s.innerHTML);
  return now.length === window.__before.length && now.every((h, i) => h !== window.__before[i]); }"""


def kernel_rss_mb() -> list[float]:
    out = subprocess.run(["ps", "-eo", "rss,args"], capture_output=True, text=True).stdout
    return [int(line.split()[0]) / 1024 for line in out.splitlines() if "ipykernel_launcher" in line]


def first_chart_seconds(browser, url) -> float:
    page = browser.new_page(viewport={"width": 1500, "height": 1800})
    start = time.perf_counter()
    page.goto(url, timeout=120_000)
    page.wait_for_selector(".vega-embed svg", timeout=120_000)
    elapsed = time.perf_counter() - start
    page.close()
    return elapsed


def slider_move_ms(page, label: str, moves: int) -> list[float]:
    handle = page.locator(".widget-slider", has_text=label).locator(".noUi-handle")
    samples = []
    for i in range(moves):
        page.evaluate(SNAPSHOT)
        handle.focus()
        start = time.perf_counter()
        handle.press("ArrowRight" if i % 2 == 0 else "ArrowLeft")
        page.wait_for_function(ALL_CHANGED, polling="raf", timeout=30_000)
        samples.append(1000 * (time.perf_counter() - start))
        time.sleep(0.3)
    return samples


def main() -> None:
    from playwright.sync_api import sync_playwright

    with voila("notebooks/app.ipynb") as url, sync_playwright() as p:  # the shipped voila.json: warm kernel, culling
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        cold = first_chart_seconds(browser, url)
        time.sleep(8)  # let the pool start the next kernel
        warm = [first_chart_seconds(browser, url) for _ in range(3) if not time.sleep(8)]
        page = browser.new_page(viewport={"width": 1500, "height": 1800})
        page.goto(url)
        page.wait_for_function("document.querySelectorAll('.vega-embed svg').length >= 4", timeout=120_000)
        moves = slider_move_ms(page, "Model size", 15) + slider_move_ms(page, "Target days", 15)
        rss = kernel_rss_mb()
        browser.close()
    print(f"page load -> first chart: cold {cold:.2f} s, warm median {statistics.median(warm):.2f} s")
    print(
        f"slider move -> all 4 charts re-rendered: median {statistics.median(moves):.0f} ms, "
        f"p90 {sorted(moves)[int(0.9 * len(moves))]:.0f} ms over {len(moves)} moves"
    )
    print(f"kernel RSS: {', '.join(f'{r:.0f} MB' for r in rss)}")


if __name__ == "__main__":
    main()
