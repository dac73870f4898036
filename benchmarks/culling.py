"""Do closed pages give their kernels back, and do open ones keep theirs? (reported, never asserted)

Serves the app with the shipped voila.json plus the culling settings given here, opens three pages in headless
Chromium, moves a slider on two and closes them (their kernels' idle clocks start then), leaves the third open and
untouched; it then reports when the closed pages' kernels were
shut down (polling the server's kernel processes every 2 s) and whether the open page, idle for longer than the cull
timeout, still answers a slider move. Usage: python benchmarks/culling.py [--timeout 60] [--interval 15] [--watch 180]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # to reuse the test and benchmark helpers

from benchmarks.browser import kernels, slider_move_ms  # noqa: E402
from tests.browser import CHROMIUM, CHROMIUM_ARGS, voila  # noqa: E402

PAGES = 3
CLOSED = 2


def main() -> None:
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser()
    parser.add_argument("--timeout", type=int, default=60, help="MappingKernelManager.cull_idle_timeout, seconds")
    parser.add_argument("--interval", type=int, default=15, help="MappingKernelManager.cull_interval, seconds")
    parser.add_argument("--watch", type=int, default=180, help="seconds to watch after closing the pages")
    args = parser.parse_args()
    flags = (
        f"--MappingKernelManager.cull_idle_timeout={args.timeout}",
        f"--MappingKernelManager.cull_interval={args.interval}",
        "--MappingKernelManager.cull_connected=False",
    )
    print(f"settings: {' '.join(flags)}; load average {os.getloadavg()[0]:.1f}")
    with voila("notebooks/app.ipynb", *flags) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        pages = []
        for _ in range(PAGES):
            page = browser.new_page(viewport={"width": 1500, "height": 1800})
            page.goto(url, timeout=180_000)
            page.wait_for_function("document.querySelectorAll('.vega-embed svg').length >= 4", timeout=180_000)
            pages.append(page)
        time.sleep(10)  # the pool refills
        before = kernels(url)
        print(f"{PAGES} pages open: {len(before)} kernels (one per page plus the preheated one)")
        for page in pages[:CLOSED]:  # the worst case: the reader moved a slider just before closing the tab
            slider_move_ms(page, "Model size", 1)
            page.close()
        closed_at = time.perf_counter()
        released = None
        while time.perf_counter() - closed_at < args.watch:
            now = kernels(url)
            if released is None and len(before) - len(set(before) & set(now)) >= CLOSED:
                released = time.perf_counter() - closed_at
                rss = sum(before[pid][0] for pid in set(before) - set(now))
                print(f"{CLOSED} closed pages' kernels shut down {released:.0f} s after closing ({rss:.0f} MB freed)")
            time.sleep(2)
        if released is None:
            print(f"the closed pages' kernels were still running {args.watch} s after closing")
        open_page = pages[-1]
        try:
            ms = slider_move_ms(open_page, "Model size", 2)
            print(f"the open page, idle {args.watch} s, still answers a slider move: {max(ms):.0f} ms")
        except Exception as err:  # report, do not crash: this is the finding
            print(f"the open page, idle {args.watch} s, no longer answers: {type(err).__name__}")
        print(f"kernels left: {len(kernels(url))}; load average {os.getloadavg()[0]:.1f}")
        browser.close()


if __name__ == "__main__":
    main()
