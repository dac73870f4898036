"""HTML for the page: recommendation card, option table, messages. Plain words, numbers for people."""

from __future__ import annotations

import html

import polars as pl

from workbook.training.recommend import Recommendation, days, usd

CARD_STYLE = (
    "border:1px solid #d0d7de;border-radius:8px;padding:12px 16px;background:#f6f8fa;font-size:14px;line-height:1.45"
)


def message(text: str, kind: str = "error") -> str:
    color = {"error": "#b00020", "info": "#555"}[kind]
    return f'<div class="wb-message wb-{kind}" style="color:{color};font-size:14px">{html.escape(text)}</div>'


def _option_line(option: dict) -> str:
    return (
        f"<b>{html.escape(option['name'])}</b> on {html.escape(option['cloud'])} ({option['pricing_model']}): "
        f"{option['chips']:,} chips{_layout(option)}, {days(option['train_days'])}, <b>{usd(option['cost_usd'])}</b>"
    )


def _layout(option: dict) -> str:
    """' as TP8 x PP16 x DP128' (the planned parallel layout), or nothing when there is none."""
    return f" as {html.escape(option['layout'])}" if option.get("layout") else ""


def recommendation(rec: Recommendation) -> str:
    """The card a manager reads first: the answer, why, the runners-up, and what was ruled out."""
    parts = [
        f'<div class="wb-card" style="{CARD_STYLE}">',
        '<div class="wb-headline" '
        f'style="font-size:18px;font-weight:600;margin-bottom:6px">{html.escape(rec.headline)}</div>',
    ]
    parts.append(
        "<ul style='margin:4px 0 8px 18px;padding:0'>"
        + "".join(f"<li>{html.escape(r)}</li>" for r in rec.reasons)
        + "</ul>"
    )
    if rec.runners_up:
        parts.append("<div><b>Runners-up:</b> " + "; ".join(_option_line(o) for o in rec.runners_up) + "</div>")
    if rec.infeasible.height:
        items = "".join(
            f"<li>{html.escape(r['name'])}: {html.escape(r['reason'] or '')}</li>" for r in rec.infeasible.to_dicts()
        )
        parts.append(
            f"<details style='margin-top:6px'><summary>Ruled out ({rec.infeasible.height})</summary>"
            f"<ul style='margin:4px 0 0 18px;padding:0'>{items}</ul></details>"
        )
    parts.append("</div>")
    return "".join(parts)


def option_table(frame: pl.DataFrame, limit: int = 60) -> str:
    """All options, cheapest first, formatted ($1.2M, 18.5 days); infeasible ones last with the reason."""
    rows = []
    for r in frame.head(limit).to_dicts():
        ok = r["feasible"]
        cost = usd(r["cost_usd"]) if r["cost_usd"] is not None else "–"
        band = f"{usd(r['cost_usd_low'])}–{usd(r['cost_usd_high'])}" if r["cost_usd"] is not None else ""
        cells = [
            r["name"],
            r["cloud"] or "–",
            r["pricing_model"],
            f"{r['chips']:,}" if r["chips"] else "–",
            r.get("layout") or "–",
            days(r["train_days"]) if r["train_days"] else "–",
            cost,
            band,
            f"{r['memory_per_chip_gb']:.0f} / {r['hbm_gb']:.0f} GB" if r["memory_per_chip_gb"] is not None else "–",
            "ok" if ok else (r["infeasible_reason"] or ""),
        ]
        style = "" if ok else " style='color:#888'"
        rows.append(f"<tr{style}>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
    head = [
        "Accelerator",
        "Cloud",
        "Pricing",
        "Chips",
        "Layout",
        "Time",
        "Cost",
        "Cost range",
        "Memory / chip",
        "Status",
    ]
    more = (
        f"<div style='color:#666'>{frame.height - limit} more options not shown</div>" if frame.height > limit else ""
    )
    return (
        "<table class='wb-table' style='border-collapse:collapse;font-size:13px'>"
        "<thead><tr>" + "".join(f"<th style='text-align:left;padding:2px 8px'>{h}</th>" for h in head) + "</tr></thead>"
        "<tbody>" + "".join(rows).replace("<td>", "<td style='padding:2px 8px'>") + "</tbody></table>" + more
    )


def claims_table(checks) -> str:
    """The seed articles' claims with what the data says and the verdict."""
    rows = "".join(
        f"<tr><td style='padding:4px 8px;vertical-align:top'><b>{html.escape(c.claim)}</b></td>"
        f"<td style='padding:4px 8px;vertical-align:top'>{html.escape(c.verdict)}</td>"
        f"<td style='padding:4px 8px;vertical-align:top;color:#555'>{html.escape(c.finding)}</td></tr>"
        for c in checks
    )
    return (
        "<table class='wb-claims' style='border-collapse:collapse;font-size:13px'><thead><tr>"
        "<th style='text-align:left;padding:4px 8px'>Claim</th><th style='text-align:left;padding:4px 8px'>Verdict</th>"
        "<th style='text-align:left;padding:4px 8px'>What the data and model say</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>"
    )


def accuracy(lines: list[str]) -> str:
    return (
        "<div class='wb-accuracy' style='font-size:13px'><p>Every estimate comes from MFU calibrated on published "
        "throughput benchmarks and a goodput fitted on published whole training runs. Predicting those runs' "
        "chip-hours with this same model gives:</p><ul>"
        + "".join(f"<li>{html.escape(line)}</li>" for line in lines)
        + "</ul><p>Details, every run and a leave-one-family-out check: notebooks/validation.ipynb.</p></div>"
    )


def serving_card(best: pl.DataFrame, frame: pl.DataFrame, scenario) -> str:
    """The serving answer in plain words: where, how many chips, what a million tokens costs, and why."""
    if best.height == 0:
        blocked = frame.unique("accelerator_id", keep="first").head(5)
        why = "".join(
            f"<li>{html.escape(r['name'])}: {html.escape(r['infeasible_reason'] or '')}</li>"
            for r in blocked.to_dicts()
        )
        return (
            f'<div class="wb-card" style="{CARD_STYLE}"><div class="wb-headline" '
            'style="font-size:18px;font-weight:600">'
            f"No accelerator meets these targets</div><ul>{why}</ul></div>"
        )
    top = best.row(0, named=True)
    reasons = [
        f"{top['replicas']} replica(s) of {top['chips_per_replica']} chip(s) (batch up to {top['batch']}) serve "
        f"{scenario.output_tokens_per_s:,.0f} output tokens/s at {top['utilisation']:.0%} load; "
        f"first token in {top['ttft_ms']:.0f} ms, then {top['tpot_ms']:.1f} ms per token (decode is "
        f"{top['decode_bound']}-bound).",
        f"At full load the same chips would cost {top['usd_per_million_tokens_at_full_load']:.3f} $ "
        "per million tokens; "
        f"your traffic pays for {1 - top['utilisation']:.0%} idle headroom.",
        f"Memory per chip: {top['memory_per_chip_gb']:.0f} GB of {top['hbm_gb']:.0f} GB "
        f"(weights {top['weights_gb']:.0f}, KV cache {top['kv_cache_gb']:.0f}).",
    ]
    if best.height > 1:
        second = best.row(1, named=True)
        reasons.append(
            f"{1 - top['usd_per_million_tokens'] / second['usd_per_million_tokens']:.0%} cheaper per token than "
            f"{second['name']} on {second['cloud']} ({second['usd_per_million_tokens']:.3f} $/M)."
        )
    items = "".join(f"<li>{html.escape(r)}</li>" for r in reasons)
    return (
        f'<div class="wb-card" style="{CARD_STYLE}"><div class="wb-headline" style="font-size:18px;font-weight:600">'
        f"Serve on {html.escape(top['name'])} ({html.escape(top['cloud'])}, {top['pricing_model']}): "
        f"{top['chips']:,} chips, "
        f"{top['usd_per_million_tokens']:.3f} $ per million output tokens "
        f"({usd(top['usd_per_hour'] * 730)} a month)</div>"
        f"<ul style='margin:4px 0 0 18px;padding:0'>{items}</ul></div>"
    )


def serving_table(frame: pl.DataFrame, limit: int = 40) -> str:
    head = ["Accelerator", "Cloud", "Pricing", "Chips", "TTFT", "ms/token", "$ / M tokens", "Memory / chip", "Status"]
    rows = []
    for r in frame.head(limit).to_dicts():
        cells = [
            r["name"],
            r["cloud"] or "–",
            r["pricing_model"],
            f"{r['chips']:,}",
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
        "<span class='wb-share' style='font-size:13px;margin-right:12px'><a class='wb-link' "
        f"href='{href}' target='_blank'>"
        f"Link to this scenario</a> <button class='wb-copy' onclick=\"{script}\">Copy link</button></span>"
    )


def _data_link(label: str, filename: str, mime: str, payload: bytes) -> str:
    import base64

    encoded = base64.b64encode(payload).decode()
    style = "margin-right:10px"
    return f"<a download='{filename}' href='data:{mime};base64,{encoded}' style='{style}'>{html.escape(label)}</a>"


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
    return "<span class='wb-downloads' style='font-size:13px'>" + "".join(parts) + "</span>"
