"""Load figures for the Voila app (reported, never asserted): `python benchmarks/load.py [SESSIONS]`.

Opens SESSIONS (default 20) concurrent pages, each in its own headless Chromium, against the shipped voila.json
(idle culling shortened to 60 s so the release can be observed), waits until every page has rendered its
charts, moves the model-size slider in every page and times until its charts change, then closes the
pages and waits for the culler. Prints render and response times and server + kernel memory.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # to reuse the test helpers

from tests.browser import CHROMIUM, CHROMIUM_ARGS, voila  # noqa: E402

CULL = ["--MappingKernelManager.cull_idle_timeout=60", "--MappingKernelManager.cull_interval=10", *sys.argv[2:]]
SNAPSHOT = "() => { window.__before = Array.from(document.querySelectorAll('.vega-embed svg')).map(s => s.innerHTML); }"
CHANGED = """() => { const now = Array.from(document.querySelectorAll('.vega-embed svg')).map(s => s.innerHTML);
  return now.length === window.__before.length && now.some((h, i) => h !== window.__before[i]); }"""


def memory_mb() -> tuple[int, float]:
    """(kernel count, MB of RSS for the Voila server and all its kernels)."""
    out = subprocess.run(["ps", "-eo", "rss,args"], capture_output=True, text=True).stdout.splitlines()
    kernels = [int(line.split()[0]) for line in out if "ipykernel_launcher" in line]
    server = [int(line.split()[0]) for line in out if "bin/voila" in line]
    return len(kernels), (sum(kernels) + sum(server)) / 1024


def main(sessions: int = 20) -> None:
    from playwright.sync_api import sync_playwright

    with voila("notebooks/app.ipynb", *CULL) as url, sync_playwright() as p:
        time.sleep(10)  # let the warm kernel start
        baseline = memory_mb()
        # One browser per visitor: a browser allows 6 connections per host, which a few Voila pages exhaust.
        browsers = [p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS) for _ in range(sessions)]
        pages = [b.new_page() for b in browsers]
        start = time.perf_counter()
        for page in pages:
            page.goto(url, wait_until="commit", timeout=300_000)
        rendered = []
        for number, page in enumerate(pages, 1):
            page.wait_for_function("document.querySelectorAll('.vega-embed svg').length >= 4", timeout=600_000)
            rendered.append(time.perf_counter() - start)
            print(f"page {number} rendered after {rendered[-1]:.1f} s", flush=True)
        loaded = memory_mb()
        responses = []
        for page in pages:
            page.evaluate(SNAPSHOT)
            handle = page.locator(".widget-slider", has_text="Model size").locator(".noUi-handle")
            handle.focus()
            t0 = time.perf_counter()
            handle.press("ArrowRight")
            page.wait_for_function(CHANGED, polling="raf", timeout=120_000)
            responses.append(1000 * (time.perf_counter() - t0))
        for b in browsers:
            b.close()
        time.sleep(90)  # idle timeout 60 s + cull interval
        released = memory_mb()
    print(f"{sessions} concurrent sessions: all rendered after {max(rendered):.1f} s (median {statistics.median(rendered):.1f} s)")
    print(f"slider -> charts changed, one page at a time under load: median {statistics.median(responses):.0f} ms, "
          f"max {max(responses):.0f} ms")
    print(f"memory (server + kernels): baseline {baseline[1]:.0f} MB ({baseline[0]} kernel), with {sessions} sessions "
          f"{loaded[1]:.0f} MB ({loaded[0]} kernels, {(loaded[1] - baseline[1]) / sessions:.0f} MB per session), "
          f"after closing and culling {released[1]:.0f} MB ({released[0]} kernels)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
