"""Load figures for the Voila app (reported, never asserted): `python benchmarks/load.py [options] [voila args]`.

Serves the app with the shipped voila.json (idle culling shortened to 60 s so the release can be observed) and
sends SESSIONS visitors at it at once (or one every --stagger seconds). Most visitors speak the Jupyter protocol
(benchmarks/visitor.py: page, all widget states, a slider move, the charts' new data); --browsers of them are
real headless Chromium pages (charts drawn, slider moved, charts redrawn), so a real page is checked under the
same load. --misbehaving more clients (default 1) open the page and then repeat the chart-bundle request many
times a second without ever reading their socket (benchmarks/visitor.py ``misbehave``); the others' latencies are
reported next to the server's peak memory (sampled every second), which such a client used to push up without
bound. Every session stays open until all have moved their slider; then memory is read, the sessions are
closed, and memory is read again after the culler has run.

Why most visitors are not browsers: this machine has 2 cores, and twenty Chromium processes on it starve the
server and each other; the browser's widget manager then misses its 4 s deadline for the widget states, falls
back to one request per widget, and the page stays blank. Real visitors' browsers run on their own machines.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # to reuse the test helpers

from benchmarks.visitor import Gate, Visit, misbehave, visit  # noqa: E402
from tests.browser import CHROMIUM, CHROMIUM_ARGS, voila  # noqa: E402

CULL = ["--MappingKernelManager.cull_idle_timeout=60", "--MappingKernelManager.cull_interval=10"]
DRAWN = "document.querySelectorAll('.vega-embed svg').length >= 4"
SNAPSHOT = "() => { window.__before = Array.from(document.querySelectorAll('.vega-embed svg')).map(s => s.innerHTML); }"
CHANGED = """() => { const now = Array.from(document.querySelectorAll('.vega-embed svg')).map(s => s.innerHTML);
  return now.length === window.__before.length && now.some((h, i) => h !== window.__before[i]); }"""


def memory_mb(port: int) -> tuple[int, float, float]:
    """(kernel count, MB of RSS for the Voila server on ``port`` and its kernels, MB of RSS for that server alone).
    Only this server's processes: other Voila servers and kernels on a shared machine are not counted."""
    rows = subprocess.run(["ps", "-eo", "pid=,ppid=,rss=,args="], capture_output=True, text=True).stdout.splitlines()
    procs = [(int(pid), int(ppid), int(rss), args) for pid, ppid, rss, args in (r.split(None, 3) for r in rows)]
    server = [(pid, rss) for pid, _, rss, args in procs if "bin/voila" in args and f"--port={port}" in args]
    pids = {pid for pid, _ in server}
    kernels = [rss for _, ppid, rss, args in procs if ppid in pids and "ipykernel_launcher" in args]
    server_kb = sum(rss for _, rss in server)
    return len(kernels), (sum(kernels) + server_kb) / 1024, server_kb / 1024


async def sample_server_peak(port: int, stop: asyncio.Event) -> float:
    """Peak RSS of the Voila server process (MB), sampled every second until ``stop``."""
    peak = 0.0
    while not stop.is_set():
        peak = max(peak, (await asyncio.to_thread(memory_mb, port))[2])
        await asyncio.sleep(1)
    return peak


async def browser_visit(browser, url: str, gate: Gate) -> Visit:
    """A real page: time until its four charts are drawn, then a slider move until they are redrawn."""
    result, start = Visit(), time.perf_counter()
    page = await browser.new_page()
    try:
        await page.goto(url, wait_until="commit", timeout=600_000)
        await page.wait_for_function(DRAWN, timeout=600_000)
        result.states_s, result.charts_ok = time.perf_counter() - start, True
        await page.evaluate(SNAPSHOT)
        handle = page.locator(".widget-slider", has_text="Model size").locator(".noUi-handle")
        await handle.focus()
        sent = time.perf_counter()
        await handle.press("ArrowRight")
        await page.wait_for_function(CHANGED, polling="raf", timeout=120_000)
        result.response_ms = 1000 * (time.perf_counter() - sent)
    except Exception as error:  # reported, not raised: the other visitors go on
        result.error = f"{type(error).__name__}: {str(error).splitlines()[0]}"
    gate.arrive()
    await gate.open.wait()
    await page.close()
    return result


async def after(seconds: float, coro):
    await asyncio.sleep(seconds)
    return await coro


async def visitors(
    url: str, sessions: int, browsers: int, stagger: float, misbehaving: int
) -> tuple[list[Visit], list[Visit], tuple, float, list[int]]:
    """Run every visitor; return (browser visits, protocol visits, memory while all sessions were open, the
    server's peak MB, bundle requests each misbehaving client sent)."""
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        # One Chromium per browser visitor: a browser allows 6 connections per host, which a few pages exhaust.
        chromiums = [
            await p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            for _ in range(browsers)
        ]
        gate, stop = Gate(sessions), asyncio.Event()
        port = urlsplit(url).port
        peak = asyncio.ensure_future(sample_server_peak(port, stop))
        flooding = asyncio.gather(*(misbehave(url, gate) for _ in range(misbehaving)))
        runs = [after(i * stagger, browser_visit(chromiums[i], url, gate)) for i in range(browsers)]
        runs += [after(i * stagger, visit(url, gate)) for i in range(browsers, sessions)]
        everyone = asyncio.gather(*runs)
        await gate.open.wait()
        loaded = memory_mb(port)
        results = await everyone
        requests = await flooding
        stop.set()
        for chromium in chromiums:
            await chromium.close()
    return results[:browsers], results[browsers:], loaded, await peak, requests


def spread(values: list[float], unit: str, digits: int = 1) -> str:
    if not values:
        return "none"
    return f"median {statistics.median(values):.{digits}f} {unit}, max {max(values):.{digits}f} {unit}"


def report(kind: str, visits: list[Visit]) -> None:
    if not visits:
        return
    ok = [v for v in visits if v.charts_ok and v.response_ms is not None]
    print(
        f"{kind}: {len(ok)}/{len(visits)} rendered and answered a slider move; "
        f"charts ready {spread([v.states_s for v in ok], 's')}; slider -> new charts "
        f"{spread([v.response_ms for v in ok], 'ms', 0)}"
    )
    replies = [v.state_reply_s for v in visits if v.state_reply_s is not None]
    if replies:
        late = sum(r > 4 for r in replies)
        print(
            f"  widget states answered {spread(replies, 's', 2)} ({late} beyond the browser's 4 s deadline); "
            f"page served {spread([v.page_s for v in visits if v.page_s is not None], 's')}"
        )
    for v in visits:
        if v.error:
            print(f"  failed: {v.error}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=20, help="concurrent visitors (default 20)")
    parser.add_argument(
        "--browsers", type=int, default=2, help="how many of them are headless Chromium pages (default 2)"
    )
    parser.add_argument("--stagger", type=float, default=0.0, help="seconds between arrivals (default 0: all at once)")
    parser.add_argument(
        "--misbehaving", type=int, default=1, help="extra clients flooding bundle requests unread (default 1)"
    )
    args, voila_args = parser.parse_known_args()
    if not 0 <= args.browsers <= args.sessions or args.sessions < 1 or args.stagger < 0 or args.misbehaving < 0:
        parser.error("need 1 <= sessions, 0 <= browsers <= sessions, stagger >= 0, misbehaving >= 0")
    with voila("notebooks/app.ipynb", *CULL, *voila_args) as url:
        time.sleep(15)  # let the preheated kernel run the notebook
        baseline = memory_mb(urlsplit(url).port)
        start = time.perf_counter()
        browser_visits, protocol_visits, loaded, peak, flood = asyncio.run(
            visitors(url, args.sessions, args.browsers, args.stagger, args.misbehaving)
        )
        wall = time.perf_counter() - start
        time.sleep(90)  # idle timeout 60 s + cull interval
        released = memory_mb(urlsplit(url).port)
    arrival = "at once" if args.stagger == 0 else f"one every {args.stagger:g} s"
    print(
        f"{args.sessions} concurrent sessions arriving {arrival} ({args.browsers} in headless Chromium), "
        f"all done after {wall:.1f} s; {args.misbehaving} misbehaving client(s) sent "
        f"{', '.join(map(str, flood)) or 'no'} bundle requests without reading"
    )
    report("protocol visitors", protocol_visits)
    report("Chromium visitors", browser_visits)
    print(
        f"memory (server + kernels): baseline {baseline[1]:.0f} MB ({baseline[0]} kernel); with every session open "
        f"{loaded[1]:.0f} MB ({loaded[0]} kernels, {(loaded[1] - baseline[1]) / args.sessions:.0f} MB per session); "
        f"after closing and culling {released[1]:.0f} MB ({released[0]} kernels)"
    )
    print(f"Voila server process alone: {baseline[2]:.0f} MB at baseline, peak {peak:.0f} MB during the run")


if __name__ == "__main__":
    main()
