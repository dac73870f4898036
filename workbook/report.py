"""A one-page, self-contained HTML report of a training scenario (no script, no network: charts are inline SVG).

Used by the app's "Prepare downloads" and by ``python -m workbook report ... --out report.html``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import html

import polars as pl

from workbook import catalog as catalog_mod
from workbook import present
from workbook.charts import training as charts
from workbook.present import days, usd
from workbook.training import calibration as calibration_mod
from workbook.training import options
from workbook.training.recommend import Recommendation, recommend
from workbook.training.scenario import Scenario


def chart_specs(scenario: Scenario, catalog: catalog_mod.Catalog) -> tuple[pl.DataFrame, dict]:
    """The main options frame and the Train tab's charts for ``scenario`` (the app's selection)."""
    everything = options.evaluate_full(scenario, catalog, jobs_frame=options.job_frame(scenario, **charts.SWEEPS))
    built = charts.tab_charts(everything, scenario.constraints.deadline_days, scenario.model.params)
    return everything.filter(pl.col("sweep") == "main"), built


def _scenario_rows(s: Scenario) -> list[tuple[str, str]]:
    m = s.model
    rows = [
        (
            "Model",
            f"{m.params / 1e9:,.1f}B parameters"
            + (f" ({m.active_params / 1e9:,.1f}B active)" if m.active_params < m.params else ""),
        ),
        ("Training tokens", f"{s.tokens / 1e9:,.0f}B"),
        ("Framework", s.framework),
        ("Precision", s.precision),
        ("Target", f"{s.days:g} days" if s.days else f"{s.chips} chips"),
        ("Pricing", ", ".join(s.pricing)),
    ]
    c = s.constraints
    rows += [
        (label, value)
        for label, value in (
            ("Budget cap", usd(c.budget_usd) if c.budget_usd else None),
            ("Clouds", ", ".join(c.clouds) or None),
            ("Must run on 2+ clouds", "yes" if c.multi_cloud else None),
            ("Stay on our framework", "yes" if c.framework_lock_in else None),
        )
        if value
    ]
    return rows


def _table(frame: pl.DataFrame, limit: int = 25) -> str:
    head = ("Accelerator", "Cloud", "Pricing", "Chips", "Time", "Cost", "Range", "Status")
    shown = frame.head(limit).to_dicts()
    rows = (
        (
            r["name"],
            r["cloud"] or "-",
            r["pricing_model"],
            f"{r['chips']:,}",
            days(r["train_days"]),
            usd(r["cost_usd"]) if r["cost_usd"] is not None else "-",
            f"{usd(r['cost_usd_low'])}-{usd(r['cost_usd_high'])}" if r["cost_usd"] is not None else "",
            "ok" if r["feasible"] else r["infeasible_reason"],
        )
        for r in shown
    )
    return present.table(head, rows, muted=[not r["feasible"] for r in shown])


def _assumptions(s: Scenario, cal: calibration_mod.Calibration) -> str:
    items = [f"{f.name} = {getattr(s.assumptions, f.name)}" for f in dataclasses.fields(s.assumptions)]
    items.append(f"goodput (calibrated) = {cal.goodput:.3f} (IQR {cal.goodput_low:.3f}-{cal.goodput_high:.3f})")
    items.append(f"mixture-of-experts efficiency (calibrated) = {cal.moe_efficiency:.3f}")
    return present.items(items, "wb-lines")


def render(scenario: Scenario, catalog: catalog_mod.Catalog | None = None) -> str:
    """The report as one HTML string."""
    cat = catalog or catalog_mod.load()
    cal = calibration_mod.fit(cat)
    main, built = chart_specs(scenario, cat)
    rec: Recommendation = recommend(main, scenario.framework, scenario.current_platform)
    import vl_convert as vlc  # the SVG engine loads only when a report is written (not in every CLI or app process)

    svgs = "".join(f"<div>{vlc.vegalite_to_svg(chart.to_dict())}</div>" for chart in built.values())
    scenario_table = "".join(
        f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in _scenario_rows(scenario)
    )
    runs = html.escape(", ".join(sorted(set(cat.reference_runs["run_id"].head(6)))))
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Accelerator Workbook report</title>
<style>{present.css()}</style></head><body class="wb-report">
<h1>Accelerator Workbook</h1><p class="wb-question">Which accelerator should we train this model on,
how many chips, how long, what will it cost, and why?</p>
<h2>Scenario</h2><table class="wb-table">{scenario_table}</table>
<h2>Recommendation</h2>{present.card(rec.headline, present.items(rec.reasons))}
<h2>Charts</h2><div class="wb-charts">{svgs}</div>
<h2>Options</h2>{_table(main)}
<h2>Assumptions</h2>{_assumptions(scenario, cal)}
<p class="wb-footnote">Prices as of {cat.prices_as_of:%Y-%m-%d} (newest row; catalog rows are about 2025-05);
accelerator specs as of
{cat.accelerators["as_of"].max():%Y-%m-%d}. MFU calibrated on published runs: {runs} and others
(data/reference_runs.csv). Report generated {dt.date.today():%Y-%m-%d}.</p></body></html>"""
