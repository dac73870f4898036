"""HTML for the page: recommendation card, option table, messages. Plain words, numbers for people.

The markup and the number formats come from :mod:`workbook.present`; the styles are its CSS classes.
"""

from __future__ import annotations

import html
import math

import polars as pl

from workbook import present
from workbook.catalog import capacity_to_confirm
from workbook.present import UNNAMED_REGIONS, days, usd
from workbook.training.recommend import Recommendation

message = present.message  # the views' one-line notices (errors, info)


def _option_line(option: dict) -> str:
    return (
        f"<b>{html.escape(option['name'])}</b> on {html.escape(option['cloud'])} ({_pricing(option)}): "
        f"{present.count(option['chips'], 'chip')}{_layout(option)}, {days(option['train_days'])}, "
        f"<b>{usd(option['cost_usd'])}</b>"
    )


def _layout(option: dict) -> str:
    """' as TP8 x PP16 x DP128' (the planned parallel layout), or nothing when there is none."""
    return f" as {html.escape(option['layout'])}" if option.get("layout") else ""


def recommendation(rec: Recommendation) -> str:
    """The card a manager reads first: the answer, why, the runners-up, and what was ruled out."""
    parts = [present.items(rec.reasons)]
    if rec.runners_up:
        parts.append("<div><b>Runners-up:</b> " + "; ".join(_option_line(o) for o in rec.runners_up) + "</div>")
    if rec.infeasible.height:
        ruled_out = present.items(f"{r['name']}: {r['reason'] or ''}" for r in rec.infeasible.to_dicts())
        parts.append(f"<details><summary>Ruled out ({rec.infeasible.height})</summary>{ruled_out}</details>")
    return present.card(rec.headline, "".join(parts))


def _pricing(option: dict) -> str:
    return (option["pricing_model"] or "–") + (" · your price" if option.get("user_price") else "")


def _where(option: dict) -> str:
    """Cloud and, where the quote names one, its region: "nebius · us-central1"."""
    cloud = option["cloud"] or "–"
    return cloud if option.get("region") in UNNAMED_REGIONS else f"{cloud} · {present.regions(option['region'])}"


def option_table(frame: pl.DataFrame, limit: int = 60) -> str:
    """All options, cheapest first, formatted ($1.2M, 18.5 days); infeasible ones last with the reason. Nine
    columns (cost with its range, cloud with its region) so it fits beside the controls at 1280 px. A click on a
    column header sorts by it (the amounts, not their text); a :func:`table_heading` box filters the rows."""
    shown = frame.head(limit).to_dicts()
    rows = [
        [
            r["name"],
            _where(r),
            _pricing(r),
            (f"{r['chips']:,}" + (f" ({r['layout']})" if r.get("layout") else "")) if r["chips"] else "–",
            days(r["finish_days"]) if r["finish_days"] else "–",
            f"{usd(r['cost_usd'])} ({usd(r['cost_usd_low'])} to {usd(r['cost_usd_high'])})"
            if r["cost_usd"] is not None
            else "–",
            present.energy(r["energy_kwh"], r["co2e_kg"]) if r["chips"] else "–",
            f"{r['memory_per_chip_gb']:.0f} / {r['hbm_gb']:.0f} GB" if r["memory_per_chip_gb"] is not None else "–",
            _status(r),
        ]
        for r in shown
    ]
    head = [
        "Accelerator",
        "Cloud · region",
        "Pricing",
        "Chips (layout)",
        "Finish (porting + training)",
        "Cost (range)",
        "Energy (CO2e)",
        "Memory / chip (used / total)",
        "Status",
    ]
    keys = [  # what each column sorts by (a click on its header): names as text, amounts as numbers
        [
            r["name"],
            _where(r),
            _pricing(r),
            r["chips"] or None,
            r["finish_days"] or None,
            r["cost_usd"],
            r["energy_kwh"] if r["chips"] else None,
            r["memory_per_chip_gb"],
            ("0 " if r["feasible"] else "1 ") + _status(r),
        ]
        for r in shown
    ]
    hidden = frame.height - len(shown)
    more = f"<div class='wb-more'>{present.count(hidden, 'more option')} not shown</div>" if hidden else ""
    muted = [not r["feasible"] for r in shown]
    return present.table(head, rows, muted=muted, sort_keys=keys, filter_name="options") + more


def table_heading(title: str, filter_name: str) -> str:
    """A table's heading with its filter box: typing "tpu", "spot" or "aws" leaves only the rows of the table with
    this ``filter_name`` ("options": :func:`option_table`, "serving": :func:`serving_table`) that hold the words."""
    box = present.table_filter(filter_name)
    return f"<div class='wb-table-heading'><h3>{html.escape(title)}</h3>{box}</div>"


def claims_table(checks) -> str:
    """The seed articles' claims with what the data says and the verdict."""
    head = ["Claim", "Verdict", "What the data and model say"]
    return present.table(head, ([c.claim, c.verdict, c.finding] for c in checks), css_class="wb-claims")


def accuracy(words: list[str], engineer_lines: list[str] = ()) -> str:
    """How accurate the training estimates are: plain words first, the engineers' figures folded below."""
    details = (
        "<details><summary>For engineers: errors as |ln(predicted / published)|</summary>"
        + present.items(engineer_lines, "wb-lines")
        + "</details>"
        if engineer_lines
        else ""
    )
    return (
        "<div class='wb-accuracy'><p>Every estimate comes from MFU calibrated on published throughput benchmarks "
        "and a goodput fitted on published whole training runs, separately for runs that give the job's own "
        "GPU-hours and runs reported as chips x calendar days (each compared with its own kind). Checked against "
        "those runs:</p>"
        + present.items(words, "wb-lines")
        + details
        + "<p>Details, every run and the held-out check: notebooks/validation.ipynb.</p></div>"
    )


def serving_card(rec, model_label: str = "") -> str:
    """The serving answer (:func:`workbook.serving.recommend_serving`) in plain words: where, how many chips,
    what a million tokens and a month cost, warnings first (above the headroom target, at a latency's edge, near the
    cloud's capacity)."""
    label = f"<div class='wb-note'>{html.escape(model_label)}</div>" if model_label else ""
    warnings = "".join(f"<div class='wb-warning'>{html.escape(w)}</div>" for w in rec.warnings)
    ruled_out = ""
    if rec.infeasible.height:
        blocked = present.items(f"{r['name']}: {r['reason'] or ''}" for r in rec.infeasible.to_dicts())
        ruled_out = f"<details><summary>Ruled out ({rec.infeasible.height})</summary>{blocked}</details>"
    return present.card(rec.headline, label + warnings + present.items(rec.reasons) + ruled_out)


def _replicas_cell(option: dict) -> str:
    """Replicas x chips each, the pipeline's nodes when a replica spans several, and the chips billed where whole
    instances hold more than the fleet uses."""
    if option["replicas"] is None:
        return "–"
    stages = option.get("pipeline_parallel") or 1
    nodes = f" ({stages} nodes)" if stages > 1 else ""
    replicas = f"{option['replicas']:,} x {option['chips_per_replica']}{nodes}"
    if option.get("disaggregated"):
        replicas = f"prefill {option['prefill_replicas']:,} x {option['prefill_chips_per_replica']}, decode {replicas}"
    rented = option.get("rented_chips") or 0
    return replicas + (f", {rented:,} rented" if rented > option["chips"] else "")


def serving_table(frame: pl.DataFrame, limit: int = 40) -> str:
    head = [
        "Accelerator",
        "Software",
        "Cloud",
        "Pricing",
        "Chips",
        "Load",
        "p99 latency (first token, per token)",
        "$ / M output tokens",
        "Memory / chip (used / total)",
        "Status",
    ]
    shown = frame.head(limit).to_dicts()
    rows = [
        [
            r["name"],
            r["stack_name"],
            r["cloud"] or "–",
            _pricing(r),
            _replicas_cell(r),
            f"{r['utilisation']:.0%}" if r["feasible"] else "–",
            _latency_cell(r),
            "–" if r["usd_per_million_tokens"] is None else present.token_price(r["usd_per_million_tokens"]),
            f"{r['memory_per_chip_gb']:.0f} / {r['hbm_gb']:.0f} GB" if r["memory_per_chip_gb"] is not None else "–",
            _status(r),
        ]
        for r in shown
    ]
    muted = [not r["feasible"] for r in shown]
    return present.table(head, rows, css_class="wb-table wb-serve-table", muted=muted, filter_name="serving")


def _latency_cell(option: dict) -> str:
    """p99 first token and per token; a dash for either where no load can run (an infinite queue)."""
    ttft, tpot = option["ttft_ms"], option["tpot_ms"]
    first = f"{ttft:,.0f} ms" if ttft is not None and math.isfinite(ttft) else "–"
    per_token = f"{tpot:,.1f} ms" if tpot is not None and math.isfinite(tpot) else "–"
    return f"{first}, {per_token}"


def _status(option: dict) -> str:
    """A training plan's or serving fleet's status: ok, ok with an order to confirm (as the card warns for the pick:
    :func:`workbook.catalog.capacity_to_confirm`), or why the option is ruled out."""
    if not option["feasible"]:
        return option["infeasible_reason"] or ""
    if capacity_to_confirm(option["chips"], option.get("capacity_max_chips")):
        return "ok; a large order: confirm the provider can deliver it"
    return "ok"


def share_link(query: str, app_url: str = "") -> str:
    """A link to this scenario and a button that copies the link's own (absolute) address: the anchor resolves it
    against the page, so it works behind proxies. "Link copied" shows for a few seconds; where the clipboard API
    is missing (a plain-http page) a hidden text area and the copy command are used. With ``app_url`` (the page is
    not the app, e.g. JupyterLab) the link opens the app at that address, and says so."""
    href = html.escape(app_url + "?" + query, quote=True)
    label = f"Link to this scenario in the app at {html.escape(app_url)}" if app_url else "Link to this scenario"
    script = html.escape(
        "var b=this,u=b.parentNode.querySelector('a.wb-link').href;"
        "function done(t){b.textContent=t;setTimeout(function(){b.textContent='Copy link'},4000)}"
        "function old(){var t=document.createElement('textarea');t.value=u;document.body.appendChild(t);t.select();"
        "var ok=document.execCommand('copy');t.remove();done(ok?'Link copied':'Copy failed: right-click the link')}"
        "if(navigator.clipboard){navigator.clipboard.writeText(u).then(function(){done('Link copied')},old)}"
        "else{old()}",
        quote=True,
    )
    return (
        f"<span class='wb-share'><a class='wb-link' href='{href}' target='_blank'>"
        f"{label}</a> <button class='wb-copy' onclick=\"{script}\">Copy link</button></span>"
    )


def _data_link(label: str, filename: str, mime: str, payload: bytes) -> str:
    import base64

    encoded = base64.b64encode(payload).decode()
    return f"<a class='wb-link' download='{filename}' href='data:{mime};base64,{encoded}'>{html.escape(label)}</a>"


def downloads(frame: pl.DataFrame, scenario, catalog, link: str = "", serving=None) -> str:
    """Data links named by what they are: the option table (CSV), each chart (PNG, SVG), the one-page brief."""
    import vl_convert as vlc

    from workbook import report
    from workbook.charts import training as charts

    _, built = report.chart_specs(scenario, catalog)
    parts = [
        _data_link(
            "Option table (CSV)",
            "options.csv",
            "text/csv",
            frame.with_columns(pl.col("price_as_of").cast(pl.String)).write_csv().encode(),
        ),
        _data_link(
            "One-page brief (HTML)",
            "accelerator-brief.html",
            "text/html",
            report.render(scenario, catalog, link=link, serving=serving).encode(),
        ),
    ]
    for name, chart in built.items():
        spec = chart.to_dict()
        title = charts.TITLES[name]
        parts.append(_data_link(f"{title} (PNG)", f"{name}.png", "image/png", vlc.vegalite_to_png(spec, scale=2)))
        parts.append(_data_link(f"{title} (SVG)", f"{name}.svg", "image/svg+xml", vlc.vegalite_to_svg(spec).encode()))
    return "<span class='wb-downloads'>" + "".join(parts) + "</span>"
