"""HTML for the page: recommendation card, option table, messages. Plain words, numbers for people.

The markup and the number formats come from :mod:`workbook.present`; the styles are its CSS classes.
"""

from __future__ import annotations

import html

import polars as pl

from workbook import present
from workbook.present import days, usd
from workbook.training.recommend import Recommendation

message = present.message  # the views' one-line notices (errors, info)

# Inline card style of the serving card, kept until that card moves to present.card (the serving engineer's).
CARD_STYLE = (
    "border:1px solid #d0d7de;border-radius:8px;padding:12px 16px;background:#f6f8fa;font-size:14px;line-height:1.45"
)


def _option_line(option: dict) -> str:
    return (
        f"<b>{html.escape(option['name'])}</b> on {html.escape(option['cloud'])} ({option['pricing_model']}): "
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


def option_table(frame: pl.DataFrame, limit: int = 60) -> str:
    """All options, cheapest first, formatted ($1.2M, 18.5 days); infeasible ones last with the reason."""
    shown = frame.head(limit).to_dicts()
    rows = [
        [
            r["name"],
            r["cloud"] or "–",
            r["region"] or "–",
            r["pricing_model"],
            f"{r['chips']:,}" if r["chips"] else "–",
            r.get("layout") or "–",
            days(r["finish_days"]) if r["finish_days"] else "–",
            usd(r["cost_usd"]) if r["cost_usd"] is not None else "–",
            f"{usd(r['cost_usd_low'])}–{usd(r['cost_usd_high'])}" if r["cost_usd"] is not None else "",
            f"{r['memory_per_chip_gb']:.0f} / {r['hbm_gb']:.0f} GB" if r["memory_per_chip_gb"] is not None else "–",
            "ok" if r["feasible"] else (r["infeasible_reason"] or ""),
        ]
        for r in shown
    ]
    head = ["Accelerator", "Cloud", "Region", "Pricing", "Chips", "Layout", "Finish (porting + training)", "Cost"]
    head += ["Cost range", "Memory / chip", "Status"]
    hidden = frame.height - len(shown)
    more = f"<div class='wb-more'>{present.count(hidden, 'more option')} not shown</div>" if hidden else ""
    return present.table(head, rows, muted=[not r["feasible"] for r in shown]) + more


def claims_table(checks) -> str:
    """The seed articles' claims with what the data says and the verdict."""
    head = ["Claim", "Verdict", "What the data and model say"]
    return present.table(head, ([c.claim, c.verdict, c.finding] for c in checks), css_class="wb-claims")


def accuracy(lines: list[str]) -> str:
    return (
        "<div class='wb-accuracy'><p>Every estimate comes from MFU calibrated on published "
        "throughput benchmarks and a goodput fitted on published whole training runs. Predicting those runs' "
        "chip-hours with this same model gives:</p>"
        + present.items(lines, "wb-lines")
        + "<p>Details, every run and a leave-one-family-out check: notebooks/validation.ipynb.</p></div>"
    )


def serving_card(rec, model_label: str = "") -> str:
    """The serving answer (:func:`workbook.serving.recommend_serving`) in plain words: where, how many chips,
    what a million tokens and a month cost, warnings first (above the headroom target, at a latency's edge)."""
    label = f"<div style='color:#555;margin-bottom:4px'>{html.escape(model_label)}</div>" if model_label else ""
    warnings = "".join(
        f"<div class='wb-warning' style='color:#9a6700;font-weight:600'>{html.escape(w)}</div>" for w in rec.warnings
    )
    items = "".join(f"<li>{html.escape(r)}</li>" for r in rec.reasons)
    ruled_out = ""
    if rec.infeasible.height:
        blocked = "".join(
            f"<li>{html.escape(r['name'])}: {html.escape(r['reason'] or '')}</li>" for r in rec.infeasible.to_dicts()
        )
        ruled_out = (
            f"<details style='margin-top:6px'><summary>Ruled out ({rec.infeasible.height})</summary>"
            f"<ul style='margin:4px 0 0 18px;padding:0'>{blocked}</ul></details>"
        )
    return (
        f'<div class="wb-card" style="{CARD_STYLE}">{label}<div class="wb-headline" '
        f'style="font-size:18px;font-weight:600">{html.escape(rec.headline)}</div>{warnings}'
        f"<ul style='margin:4px 0 0 18px;padding:0'>{items}</ul>{ruled_out}</div>"
    )


def serving_table(frame: pl.DataFrame, limit: int = 40) -> str:
    head = [
        "Accelerator",
        "Software",
        "Cloud",
        "Pricing",
        "Chips",
        "Load",
        "TTFT",
        "ms/token",
        "$ / M tokens",
        "Memory / chip",
        "Status",
    ]
    rows = []
    for r in frame.head(limit).to_dicts():
        cells = [
            r["name"],
            r["stack_name"],
            r["cloud"] or "–",
            r["pricing_model"],
            f"{r['replicas']:,} x {r['chips_per_replica']}",
            f"{r['utilisation']:.0%}" if r["feasible"] else "–",
            f"{r['ttft_ms']:.0f} ms",
            f"{r['tpot_ms']:.1f}",
            "–" if r["usd_per_million_tokens"] is None else f"{r['usd_per_million_tokens']:.3f}",
            f"{r['memory_per_chip_gb']:.0f} / {r['hbm_gb']:.0f} GB" if r["memory_per_chip_gb"] is not None else "–",
            "ok" if r["feasible"] else r["infeasible_reason"],
        ]
        style = "" if r["feasible"] else " style='color:#888'"
        rows.append(
            f"<tr{style}>" + "".join(f"<td style='padding:2px 8px'>{html.escape(str(c))}</td>" for c in cells) + "</tr>"
        )
    return (
        "<table class='wb-table wb-serve-table' style='border-collapse:collapse;font-size:13px'><thead><tr>"
        + "".join(f"<th style='text-align:left;padding:2px 8px'>{h}</th>" for h in head)
        + "</tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )


def share_link(query: str) -> str:
    """A link to this scenario and a button that copies its full URL (relative to the page: works behind proxies)."""
    href = html.escape("?" + query, quote=True)
    script = html.escape(
        f"navigator.clipboard.writeText(new URL('?{query}', location.href).href);this.textContent='Link copied';",
        quote=True,
    )
    return (
        f"<span class='wb-share'><a class='wb-link' href='{href}' target='_blank'>"
        f"Link to this scenario</a> <button class='wb-copy' onclick=\"{script}\">Copy link</button></span>"
    )


def _data_link(label: str, filename: str, mime: str, payload: bytes) -> str:
    import base64

    encoded = base64.b64encode(payload).decode()
    return f"<a download='{filename}' href='data:{mime};base64,{encoded}'>{html.escape(label)}</a>"


def downloads(frame: pl.DataFrame, scenario, catalog) -> str:
    """Data links for the option table (CSV), the charts (PNG and SVG) and the one-page HTML report."""
    import vl_convert as vlc

    from workbook import report

    _, built = report.chart_specs(scenario, catalog)
    parts = [
        _data_link(
            "Table (CSV)",
            "options.csv",
            "text/csv",
            frame.with_columns(pl.col("price_as_of").cast(pl.String)).write_csv().encode(),
        )
    ]
    for name, chart in built.items():
        spec = chart.to_dict()
        parts.append(_data_link(f"{name} PNG", f"{name}.png", "image/png", vlc.vegalite_to_png(spec, scale=2)))
        parts.append(_data_link("SVG", f"{name}.svg", "image/svg+xml", vlc.vegalite_to_svg(spec).encode()))
    parts.append(
        _data_link("Report (HTML)", "accelerator-report.html", "text/html", report.render(scenario, catalog).encode())
    )
    return "<span class='wb-downloads'>" + "".join(parts) + "</span>"
