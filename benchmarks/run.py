"""Performance figures (reported, never asserted): `make bench`.

Times the model layer: catalog load, the training and serving calibrations (fitted, and read back from the
on-disk cache), and `evaluate` over every option for a few representative scenarios (median of repeated calls,
warm caches); then the app's kernel side: building the dashboard (what each new visitor's kernel does) and one
update after a slider move on the Train and Serve tabs (no browser: benchmarks/browser.py times the page).
``benchmarks/suite.py`` times ``make test-fast``.
"""

from __future__ import annotations

import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import time

from workbook import cache, catalog
from workbook.catalog import loading
from workbook.serving import calibration as serving_calibration
from workbook.training import calibration, options, recommend
from workbook.training.scenario import ModelSpec, Scenario

REPEATS = 30
EVALUATE_TARGET_MS = 5  # issue 18


def timed(fn, repeats=REPEATS):
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1000, result


def load_from(folder: str) -> catalog.Catalog:
    """catalog.load() in a new process's state: nothing validated in memory, ``folder`` as the on-disk cache."""
    os.environ["WORKBOOK_CACHE_DIR"] = folder
    loading._VALIDATED.clear()
    return catalog.load()


def main() -> None:
    user_cache = os.environ.get("WORKBOOK_CACHE_DIR")
    with tempfile.TemporaryDirectory() as kept:
        validate_ms, _ = timed(lambda: load_from(tempfile.mkdtemp(dir=kept)), 5)  # empty cache: pandera checks
        load_from(kept)  # fills the on-disk cache
        disk_ms, _ = timed(lambda: load_from(kept), 5)  # a new kernel: validated tables read back from disk
        memo_ms, cat = timed(catalog.load, 5)  # the same process again: hashing the files only
    if user_cache is None:  # back to the user's cache for what follows (the CLI run below inherits it)
        del os.environ["WORKBOOK_CACHE_DIR"]
    else:
        os.environ["WORKBOOK_CACHE_DIR"] = user_cache
    print(
        f"catalog.load            {validate_ms:8.1f} ms validating every table; {disk_ms:.1f} ms from the on-disk "
        f"cache (a new kernel); {memo_ms:.1f} ms again in the same process"
    )
    for name, fit in (("calibration.fit", calibration.fit), ("serving calibrate", serving_calibration.calibrate)):
        fit_ms, _ = timed(lambda f=fit: f.__wrapped__(cat), 5)  # the fit itself, no cache
        fit(cat)  # on disk from here on
        disk_fit_ms, _ = timed(lambda f=fit: (cache._RESULTS.clear(), f(cat)), 5)  # a new process: read back
        print(f"{name:23s} {fit_ms:8.1f} ms fitting; {disk_fit_ms:.1f} ms from the on-disk cache (a new process)")
    cal = calibration.fit(cat)
    for label, scenario in {
        "7B, 140B tokens, 30 days": Scenario(model=ModelSpec.from_params(7e9), tokens=1.4e11, days=30),
        "70B, 2T tokens, 30 days": Scenario(model=ModelSpec.from_params(70e9), tokens=2e12, days=30),
        "405B, 15T tokens, 8,192 chips": Scenario(model=ModelSpec.from_params(405e9), tokens=15e12, chips=8192),
    }.items():
        # computed each time (the memo emptied first), then the same scenario again (from the memo)
        ms, frame = timed(lambda s=scenario: (options._EVALUATIONS.clear(), options.evaluate(s, cat, cal))[1])
        memo_ms, _ = timed(lambda s=scenario: options.evaluate(s, cat, cal))
        rec_ms, _ = timed(lambda f=frame: recommend.recommend(f))
        print(
            f"evaluate {label:30s} {ms:6.1f} ms for {frame.height} options ({ms / EVALUATE_TARGET_MS:.1f}x the "
            f"{EVALUATE_TARGET_MS} ms target); {memo_ms:.1f} ms repeated (memo); recommend {rec_ms:5.1f} ms"
        )
    app()
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "workbook", "train", "--params", "70e9", "--accelerator", "h100-sxm", "--json"],
        check=True,
        capture_output=True,
    )
    print(f"CLI train (cold process) {1000 * (time.perf_counter() - start):7.0f} ms")


def app() -> None:
    from workbook.app.shell import Dashboard

    options._EVALUATIONS.clear()  # a new kernel: nothing evaluated yet

    build_ms, board = timed(Dashboard, 5)
    sizes = itertools.cycle([30.0, 70.0, 140.0, 405.0])
    # a value not seen before (the memo emptied first), then back and forth between two (from the memo)
    train_ms, _ = timed(
        lambda: (options._EVALUATIONS.clear(), setattr(board.train.controls["params_b"], "value", next(sizes)))
    )
    back_and_forth = itertools.cycle([30.0, 70.0])
    again_ms, _ = timed(lambda: setattr(board.train.controls["params_b"], "value", next(back_and_forth)))
    board.tabs.selected_index = 1  # builds the Serve view
    rates = itertools.cycle([1.0, 10.0, 100.0])
    serve_ms, _ = timed(lambda: setattr(board.serve.controls["rps"], "value", next(rates)))
    print(
        f"app: Dashboard() {build_ms:6.0f} ms; Train update after a slider move {train_ms:5.1f} ms "
        f"({again_ms:.1f} ms moved back to a value seen before); Serve update {serve_ms:5.1f} ms; "
        f"evaluate memo holds {options._EVALUATIONS.estimated_bytes() / 1e6:.1f} MB "
        f"(at most {options.EVALUATIONS_KEPT_BYTES / 1e6:.0f} MB)"
    )


if __name__ == "__main__":
    main()
