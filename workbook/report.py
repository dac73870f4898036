"""The one-page brief: a self-contained HTML page (no script, no network; the chart is inline SVG) that prints on
one A4 or Letter page. The question, the answer with its confidence, runners-up, what was ruled out and why, cost
with its range, time including porting, energy and CO2e, the serving answer when one is given, the assumptions in
words with units, the data's as-of dates and the scenario link.

Used by the app's "Prepare downloads" and by ``python -m workbook report ... --out brief.html``.
"""

from __future__ import annotations

import datetime as dt
import html

import polars as pl

from workbook import catalog as catalog_mod
from workbook import present
from workbook.charts import training as charts
from workbook.model import throughput
from workbook.model.spec import preset_key
from workbook.present import count, days, energy, instance_place, usd
from workbook.serving.recommend import ceiling_words, replicas_words, split_words
from workbook.training import calibration as calibration_mod
from workbook.training import options
from workbook.training.recommend import (
    FRAMEWORK_NAMES,
    Recommendation,
    billed_terms,
    describe,
    recommend,
    rest_of_term,
)
from workbook.training.scenario import PLATFORM_LABELS, Scenario

BRIEF_CHART = "cost"  # the one chart on the page; the others are separate downloads
RULED_OUT_SHOWN = 3


def chart_specs(scenario: Scenario, catalog: catalog_mod.Catalog) -> tuple[pl.DataFrame, dict]:
    """The main options frame and the Train tab's charts for ``scenario`` (the app's selection)."""
    everything = options.evaluate_full(scenario, catalog, jobs_frame=options.job_frame(scenario, **charts.SWEEPS))
    built = charts.tab_charts(everything, scenario.constraints.deadline_days, scenario.model.params)
    return everything.filter(pl.col("sweep") == "main"), built


def question(s: Scenario) -> str:
    """The question in one line, with the model and the job."""
    m = s.model
    active = f" ({m.active_params / 1e9:,.1f}B active)" if m.is_moe else ""
    model = present.model_words(m) if preset_key(m) else f"a {m.params / 1e9:,.1f}B-parameter model{active}"
    target = f"on {count(s.chips, 'chip')}" if s.chips else f"in {days(s.target_days)}"
    return (
        f"Where should we train {model} on {s.tokens / 1e9:,.0f}B tokens "
        f"{target} ({FRAMEWORK_NAMES[s.framework]}, team on {PLATFORM_LABELS[s.current_platform]} today, "
        f"{s.precision.upper()}, {', '.join(s.pricing)} prices), "
        "and what will it cost?"
    )


def confidence(rec: Recommendation) -> str:
    """A clear winner when its cost range stays below every runner-up's; a close call otherwise."""
    if rec.best is None:
        return "no option meets the constraints"
    close = [o for o in rec.runners_up if rec.best["cost_usd_high"] >= o["cost_usd_low"]]
    if not close:
        return "clear winner: its cost range stays below the runners-up's"
    return f"close call: its cost range overlaps {close[0]['name']}'s"


def answer(rec: Recommendation) -> str:
    """The answer in words: where (cloud, region, instance), cost with its range (a commitment's whole-term bill
    and this run's amortised share), time including porting, energy and CO2e."""
    best = rec.best
    if best is None:
        return rec.reasons[0]
    where = f"Where: {best['cloud']} ({instance_place(best)})"
    cost = f"Cost {usd(best['cost_usd'])} (range {usd(best['cost_usd_low'])} to {usd(best['cost_usd_high'])})"
    if best["term_months"]:
        cost += (
            f": {billed_terms(best)}; this run's share, if other work uses the chips for {rest_of_term(best)}, is "
            f"{usd(best['amortised_cost_usd'])} (amortised)"
        )
    training = (
        f"{days(best['train_days'])} of training (range {days(best['train_days_low'])} to "
        f"{days(best['train_days_high'])})"
    )
    time = (
        f"Time: finishes in {days(best['finish_days'])}: about {best['start_delay_days']:.0f} days of porting "
        f"({best['migration_weeks']:g} engineer-weeks, {usd(best['migration_cost_usd'])} included), then {training}"
        if best["start_delay_days"] > 0
        else f"Time: {training}, with no porting"
    )
    return f"{where}. {cost}. {time}. Energy: {energy(best['energy_kwh'], best['co2e_kg'])}."


def assumptions(s: Scenario, cal: calibration_mod.Calibration) -> list[str]:
    """Every assumption in words with its unit."""
    a = s.assumptions
    mfu = f"{a.mfu_override:.0%} for every chip (your override)" if a.mfu_override else "calibrated per chip"
    goodput = (
        f"{a.goodput_override:.0%} (your override)"
        if a.goodput_override
        else f"{cal.goodput:.0%} of the job's chip time as publishers total it (range {cal.goodput_low:.0%}-"
        f"{cal.goodput_high:.0%}; the low end is how runs reported as chips x calendar days count) less interruptions, "
        f"{throughput.INTERRUPTIONS_PER_CHIP_DAY * 1000:.2g} per 1,000 chip-days (Llama 3)"
    )
    zero = "ZeRO stage per option by the planner" if a.zero_stage is None else f"ZeRO stage {a.zero_stage}"
    recompute = "recomputation per option by the planner" if a.recompute == "auto" else f"{a.recompute} recomputation"
    porting = (
        f"counted at {usd(a.usd_per_engineer_week)} per engineer-week" if a.include_migration_cost else "not counted"
    )
    return [
        f"Share of peak compute used (MFU): {mfu}; share of time spent training (goodput): {goodput}.",
        f"Memory: weights, gradients and optimizer state sharded across chips ({zero}; {recompute}), "
        f"{a.hbm_usable_fraction:.0%} of the memory each chip reports usable, "
        f"{a.framework_overhead_bytes / 1e9:g} GB per chip for the runtime.",
        f"Spot capacity loses {a.spot_preemption_overhead:.0%} extra chip-hours to preemptions. Porting work: "
        f"{porting}.",
        f"Energy: chip power x {a.host_power_factor:g} for the host x {a.pue:g} data-centre overhead (PUE); "
        f"{a.grid_kg_co2e_per_kwh:g} kg CO2e per kWh (world-average grid).",
        f"Mixture-of-experts efficiency (calibrated): {cal.moe_efficiency:.0%} of a dense model's.",
    ]


def _constraints(s: Scenario) -> str:
    c = s.constraints
    parts = [
        f"budget cap {usd(c.budget_usd)}" if c.budget_usd else "",
        f"only {', '.join(c.clouds)}" if c.clouds else "",
        "must run on 2+ clouds" if c.multi_cloud else "",
        f"stay on {FRAMEWORK_NAMES[s.framework]}" if c.framework_lock_in else "",
    ]
    shown = [p for p in parts if p]
    return "Constraints: " + ("; ".join(shown) if shown else "none beyond the deadline") + "."


def _ruled_out(rec: Recommendation) -> str:
    rows = rec.infeasible.to_dicts()
    if not rows:
        return "<p>Nothing was ruled out.</p>"
    shown = "; ".join(f"{r['name']}: {r['reason'] or 'no option'}" for r in rows[:RULED_OUT_SHOWN])
    more = f"; and {len(rows) - RULED_OUT_SHOWN:,} more" if len(rows) > RULED_OUT_SHOWN else ""
    return f"<p class='wb-small'>{html.escape(shown + more)}.</p>"


def _latency(best: dict, scenario) -> str:
    parts = []
    for label, value, target in (
        ("first token", best["ttft_ms"], scenario.ttft_ms),
        ("per token", best["tpot_ms"], scenario.tpot_ms),
    ):
        parts.append(f"{label} {value:,.0f} ms" + (f" (target {target:,.0f} ms)" if target is not None else ""))
    return "p99 latency at this load: " + ", ".join(parts)


def _month_range(best: dict) -> str:
    low, high = usd(best["usd_per_month_low"]), usd(best["usd_per_month_high"])
    return f"range {low} to {high}: prices and the model's error on published results" if low != high else "no range"


def serving_lines(serving) -> list[str]:
    """The serving answer in words: the model served, the pick, replicas x chips, monthly cost with its range, the
    price per million output tokens, the load against the headroom target, latency against the targets, runners-up,
    warnings."""
    best = serving.best
    model = f"Model served: {present.model_words(serving.scenario.model)}."
    if best is None:
        return [model, *serving.reasons]
    lines = [
        model,
        f"{replicas_words(best)} = {count(best['chips'], 'chip')} with "
        f"{best['stack_name']}; {present.per_million_tokens(best['usd_per_million_tokens'])}."
        + (f" {split_words(best)}." if best.get("disaggregated") else ""),
        f"{usd(best['usd_per_month'])} a month ({_month_range(best)}, {best['pricing_model']} prices).",
        f"Each replica runs at {best['utilisation']:.0%} of the load the latency targets allow it "
        f"({ceiling_words(best)}). {_latency(best, serving.scenario)}.",
    ]
    if serving.runners_up:
        lines.append(
            "Runners-up: "
            + "; ".join(
                f"{o['name']} ({o['cloud']}, {present.per_million_tokens(o['usd_per_million_tokens'])})"
                for o in serving.runners_up
            )
            + "."
        )
    return [*serving.warnings, *lines]


def _serving(serving) -> str:
    if serving is None:
        return ""
    lines = present.items(serving_lines(serving), "wb-lines wb-small")
    return f"<section><h2>Serving</h2><p><b>{html.escape(serving.headline)}</b></p>{lines}</section>"


def _link(link: str) -> str:
    if not link:
        return ""
    text = html.escape(link)
    if link.startswith("?"):
        return f"<p class='wb-small'>Scenario link (add to the workbook's address): <code>{text}</code></p>"
    return f"<p class='wb-small'>Scenario link: <a class='wb-link' href='{text}'>{text}</a></p>"


def render(scenario: Scenario, catalog: catalog_mod.Catalog | None = None, link: str = "", serving=None) -> str:
    """The brief as one HTML string. ``link`` reopens the scenario in the app; ``serving`` is the Serve tab's
    :class:`workbook.serving.ServingRecommendation` when that tab was used."""
    cat = catalog or catalog_mod.load()
    cal = calibration_mod.fit(cat)
    main, built = chart_specs(scenario, cat)
    import vl_convert as vlc  # the SVG engine loads only when a report is written (not in every CLI or app process)

    rec = recommend(main, scenario.framework, scenario.current_platform)
    chart = vlc.vegalite_to_svg(built[BRIEF_CHART].to_dict())
    runners = present.items(describe(o) for o in rec.runners_up) if rec.runners_up else "<p>None.</p>"
    mine = " Prices marked “your price” are from your negotiated price file." if main["user_price"].any() else ""
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Accelerator brief</title>
<style>{present.css()}</style></head><body class="wb-report">
<h1>Accelerator brief</h1><p class="wb-question">{html.escape(question(scenario))}</p>
<div class="wb-card"><div class="wb-headline">{html.escape(rec.headline)}</div>
<p>Confidence: {html.escape(confidence(rec))}. {html.escape(answer(rec))}</p>
<p class="wb-small">{html.escape(_constraints(scenario))}</p></div>
<div class="wb-brief-grid"><section class="wb-brief-chart">{chart}</section>
<section><h2>Runners-up</h2>{runners}</section>
<section><h2>Ruled out ({rec.infeasible.height})</h2>{_ruled_out(rec)}</section>{_serving(serving)}</div>
<h2>Assumptions</h2>{present.items(assumptions(scenario, cal), "wb-lines wb-small")}
<p class="wb-footnote">Data as of: prices {cat.prices_as_of:%Y-%m-%d} (newest row; most list prices about 2025-05),
accelerator specs {cat.accelerators["as_of"].max():%Y-%m-%d}; MFU and goodput calibrated on
{count(cat.reference_runs.height, "published training run")}.{mine} Every figure's source is in the workbook's
data/ folder.
Brief generated {dt.date.today():%Y-%m-%d}.</p>{_link(link)}</body></html>"""
