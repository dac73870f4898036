"""Browser figures for the Voila app, side by side with a bare one-chart page and the static page (reported, never
asserted): `make bench`.

For the app (notebooks/app.ipynb) and the floor (benchmarks/bare.ipynb: one slider, one chart, the same chart widget
and Vega bundle, no workbook model), each served by its own Voila with the shipped voila.json in the same run:
* page load -> first chart, cold (fresh server, first visitor) and warm (later visitors, preheated kernel);
* slider move -> every chart re-rendered in the page (median and p90 over repeated moves);
* per kernel (one per visitor): RSS and CPU-seconds (kernel start, imports, data, first update, serving the page).
Then the ratios app / floor and the issue-18 targets. For the static page (`python -m workbook static`, written to
a temporary folder): file open -> charts drawn, and control move -> both charts redrawn (measured inside the page).
Runs headless Chromium via playwright.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # to reuse the test helpers

from tests.browser import CHROMIUM, CHROMIUM_ARGS, voila  # noqa: E402
from tests.static_page import move_ms, opened  # noqa: E402

SNAPSHOT = "() => { window.__before = Array.from(document.querySelectorAll('.vega-embed svg')).map(s => s.innerHTML); }"
ALL_CHANGED = """() => { const now = Array.from(document.querySelectorAll('.vega-embed svg')).map(s => s.innerHTML);
  return now.length === window.__before.length && now.every((h, i) => h !== window.__before[i]); }"""
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
WARM_VISITS = 3
TARGETS = {"slider_ratio": 5.0, "warm_s": 1.5, "rss_mb": 150.0, "cpu_s": 1.5}  # issue 18


def kernels(url: str) -> dict[int, tuple[float, float]]:
    """pid -> (RSS MB, CPU-seconds so far) of each kernel of the Voila server at ``url`` (other servers on the
    machine, such as other people's tests, are left out)."""
    port = url.rsplit(":", 1)[1]
    rows = [
        line.split(None, 3)
        for line in subprocess.run(
            ["ps", "-eo", "pid,ppid,rss,args"], capture_output=True, text=True
        ).stdout.splitlines()[1:]
    ]
    servers = {pid for pid, _, _, args in rows if f"--port={port}" in args and "voila" in args}
    found = {}
    for pid, ppid, rss, args in rows:
        if ppid not in servers or "ipykernel_launcher" not in args:
            continue
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        found[int(pid)] = (int(rss) / 1024, (int(fields[11]) + int(fields[12])) / CLOCK_TICKS)  # utime + stime
    return found


def first_chart_seconds(browser, url, charts: int) -> float:
    page = browser.new_page(viewport={"width": 1500, "height": 1800})
    start = time.perf_counter()
    page.goto(url, timeout=120_000)
    page.wait_for_function(f"document.querySelectorAll('.vega-embed svg').length >= {charts}", timeout=120_000)
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


def measure(notebook: str, charts: int, sliders: list[str]) -> dict:
    """One Voila server for ``notebook``: cold and warm first chart, slider latency, per-kernel RSS and CPU."""
    from playwright.sync_api import sync_playwright

    with voila(notebook) as url, sync_playwright() as p:  # the shipped voila.json: warm kernel, culling
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        cold = first_chart_seconds(browser, url, charts)
        warm = []
        for _ in range(WARM_VISITS):
            time.sleep(8)  # let the pool start the next kernel
            warm.append(first_chart_seconds(browser, url, charts))
        page = browser.new_page(viewport={"width": 1500, "height": 1800})
        page.goto(url)
        page.wait_for_function(f"document.querySelectorAll('.vega-embed svg').length >= {charts}", timeout=120_000)
        moves = [ms for label in sliders for ms in slider_move_ms(page, label, 15)]
        time.sleep(8)  # the pool's next kernel finishes its start
        per_kernel = list(kernels(url).values())
        browser.close()
    return {
        "cold_s": cold,
        "warm_s": statistics.median(warm),
        "slider_ms": statistics.median(moves),
        "slider_p90_ms": sorted(moves)[int(0.9 * len(moves))],
        "moves": len(moves),
        "rss_mb": statistics.median(r for r, _ in per_kernel),
        "cpu_s": statistics.median(c for _, c in per_kernel),
        "kernels": len(per_kernel),
    }


def static_page() -> dict:
    from workbook.static import write

    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        path = write(folder)
        build_s = time.perf_counter() - start
        size_mb = path.stat().st_size / 1e6
        start = time.perf_counter()
        with opened(Path(path)) as (page, requests):
            open_s = time.perf_counter() - start
            moves = []
            for i in range(30):  # every move changes a value: model size 34B <-> 180B, target days 14 <-> 60
                control = "wb-params" if i % 2 == 0 else "wb-days"
                value = {"wb-params": (4, 6), "wb-days": (1, 3)}[control][(i // 2) % 2]
                moves.append(move_ms(page, control, value))
                time.sleep(0.1)
            moves = [ms for ms in moves if ms is not None]
            outside = [u for u in requests if not u.startswith(("file://", "blob:null/"))]
    return {
        "build_s": build_s,
        "size_mb": size_mb,
        "open_s": open_s,
        "slider_ms": statistics.median(moves),
        "slider_p90_ms": sorted(moves)[int(0.9 * len(moves))],
        "moves": len(moves),
        "outside": len(outside),
    }


def main() -> None:
    print(f"load average at start: {os.getloadavg()[0]:.2f} (2 cores shared)")
    bare = measure("benchmarks/bare.ipynb", 1, ["Model size"])
    app = measure("notebooks/app.ipynb", 4, ["Model size", "Target days"])
    print(f"load average after the Voila runs: {os.getloadavg()[0]:.2f}")
    rows = [
        ("page load -> first chart, cold", "cold_s", "s"),
        ("page load -> first chart, warm (median)", "warm_s", "s"),
        ("slider -> all charts redrawn, median", "slider_ms", "ms"),
        ("slider -> all charts redrawn, p90", "slider_p90_ms", "ms"),
        ("kernel RSS per visitor (median)", "rss_mb", "MB"),
        ("kernel CPU-seconds per visitor (median)", "cpu_s", "s"),
    ]
    print(f"{'':42s} {'bare page':>11s} {'app':>11s} {'app/bare':>9s}")
    for label, key, unit in rows:
        print(f"{label:42s} {bare[key]:9.2f} {unit:2s}{app[key]:9.2f} {unit:2s}{app[key] / bare[key]:8.1f}x")
    print(
        f"({app['moves']} app moves, {bare['moves']} bare moves; "
        f"{app['kernels']} app and {bare['kernels']} bare kernels)"
    )
    checks = [
        ("slider latency <= 5x the bare page", app["slider_ms"] / bare["slider_ms"], TARGETS["slider_ratio"], "x"),
        ("warm page -> first chart <= 1.5 s", app["warm_s"], TARGETS["warm_s"], " s"),
        ("kernel RSS <= 150 MB per visitor", app["rss_mb"], TARGETS["rss_mb"], " MB"),
        ("CPU <= 1.5 s per visitor", app["cpu_s"], TARGETS["cpu_s"], " s"),
    ]
    for label, value, target, unit in checks:
        print(f"target {label:38s} {value:8.2f}{unit}  {'met' if value <= target else 'NOT met'}")
    static = static_page()
    print(
        f"static page: {static['size_mb']:.1f} MB, built in {static['build_s']:.0f} s; Chromium start + file open -> "
        f"charts {static['open_s']:.2f} s; control -> both charts redrawn median {static['slider_ms']:.1f} ms, p90 "
        f"{static['slider_p90_ms']:.1f} ms over {static['moves']} moves; requests leaving the file: {static['outside']}"
    )
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
