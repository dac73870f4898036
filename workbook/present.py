"""Numbers and names for people, as text and as HTML: one home for how the app, the report and the CLI say things.

Text: :func:`model_words` (Llama 3.1 405B (405.9B parameters)), :func:`usd` ($1.2M), :func:`days` (18.5 days),
:func:`count` (1 chip, 1,024 chips; :func:`grouped` over a column), :func:`gigabytes` (0.5 GB, 86 GB),
:func:`price_basis` ("your price"), :func:`per_million_tokens`, :func:`energy` (MWh and t CO2e).
HTML: :func:`table`, :func:`table_filter`, :func:`items`, :func:`card`, :func:`message`; they carry CSS classes
(``wb-*``) whose styles live in one stylesheet, ``STYLESHEET``, which the Voila template and the HTML report both
include.
"""

from __future__ import annotations

import html
import math
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

import polars as pl

from workbook import shipped
from workbook.model.spec import PRESET_NAMES, ModelSpec, preset_key

# One stylesheet, the Voila template's: in a checkout under share/, in an installed wheel where the template was
# installed (<prefix>/share/jupyter/voila/templates/workbook, hatchling shared-data).
_TEMPLATE_CSS = "share/jupyter/voila/templates/workbook/static/workbook.css"
STYLESHEET = next(
    (p for p in (shipped.CHECKOUT / _TEMPLATE_CSS, Path(sys.prefix) / _TEMPLATE_CSS) if p.exists()),
    Path(sys.prefix) / _TEMPLATE_CSS,
)


def model_words(spec: ModelSpec) -> str:
    """ "Llama 3.1 405B (405.9B parameters)", "DeepSeek-V3 / R1 (671.0B parameters, 37.0B active)"; a shape of no
    preset by its size alone, "70.0B parameters" or "100.0B parameters (10.0B active)"."""
    size = f"{spec.params / 1e9:,.1f}B parameters"
    active = f"{spec.active_params / 1e9:,.1f}B active" if spec.is_moe else ""
    key = preset_key(spec)
    if key is not None:
        return f"{PRESET_NAMES[key]} ({size}{', ' + active if active else ''})"
    return size + (f" ({active})" if active else "")


def usd(value: float | None) -> str:
    """$1.2B, $1.2M, $850k, $4,200: money for people."""
    if value is None:
        return "n/a"
    if abs(value) >= 1e9:
        return f"${value / 1e9:.1f}B"
    if abs(value) >= 1e6:
        return f"${value / 1e6:.1f}M"
    if abs(value) >= 1e4:
        return f"${value / 1e3:.0f}k"
    return f"${value:,.0f}"


def gigabytes(value: float) -> str:
    """86 GB, 0.5 GB: memory for people (a tenth of a GB below 10, so a small KV cache does not read 0 GB)."""
    return f"{value:,.0f} GB" if value >= 9.95 else f"{value:.1f} GB"


def grouped(number: pl.Expr) -> pl.Expr:
    """A whole number as text with thousands separators, over a column (18,004,073), as :func:`count` writes it."""
    digits = number.cast(pl.Int64).cast(pl.String).str.reverse()
    return digits.str.replace_all(r"(\d{3})", "${1},").str.strip_chars_end(",").str.reverse()


def counted(number: pl.Expr, word: str) -> pl.Expr:
    """:func:`count` over a column: "1 chip", "1,024 chips"."""
    return pl.format("{} {}", grouped(number), pl.when(number == 1).then(pl.lit(word)).otherwise(pl.lit(word + "s")))


def days(value: float) -> str:
    """A duration given in days, as people say it: 18.5 days, 240 days; under a day in hours (5.2 hours), under an
    hour in minutes (12 minutes), so a short job does not read 0.0 days."""
    if value < 1 / 24:
        return count(max(1, round(value * 24 * 60)), "minute")
    if value < 1:
        return f"{value * 24:.1f} hours"
    return f"{value:.1f} days" if value < 100 else f"{value:,.0f} days"


# A price row that covers several regions lists them with this separator (data/prices.csv: "us-east-2;ap-south-2").
REGION_SEPARATOR = ";"


def regions(value: str) -> str:
    """A price row's regions for people: "us-east-2, ap-south-2" (the data's "us-east-2;ap-south-2")."""
    return value.replace(REGION_SEPARATOR, ", ")


UNNAMED_REGIONS = (None, "any", "unknown", "ALL")  # price rows whose region names no place a buyer can choose


def instance_place(option: dict) -> str:
    """The instance a price quotes and, where the quote names them, its regions: "p5.48xlarge in us-east-1",
    "gpu_1x_gh200" (a quote for every region, or none stated)."""
    where = "" if option.get("region") in UNNAMED_REGIONS else f" in {regions(option['region'])}"
    return f"{option['instance_type']}{where}"


def regions_column(value: pl.Expr) -> pl.Expr:
    """:func:`regions` over a column."""
    return value.str.replace_all(REGION_SEPARATOR, ", ", literal=True)


def count(n: int, word: str, plural: str | None = None) -> str:
    """1 chip, 1,024 chips, 2 replicas: a whole number with its noun in the right number."""
    return f"{n:,} {word if n == 1 else plural or word + 's'}"


def price_basis(option: dict, pick: str = "median") -> str:
    """Where an option's price comes from: "your price" (a negotiated file), "median of 3 list-price quotes"
    (``pick``: how the price was chosen among the quotes, e.g. "the cheapest") or "the only list-price quote"."""
    if option.get("user_price"):
        return "your price"
    if option["price_rows"] == 1:
        return "the only list-price quote"
    return f"{pick} of {count(option['price_rows'], 'list-price quote')}"


def typical_words(option: dict) -> str:
    """ "; typical $3.25": the median of the quotes an option's price was chosen from; nothing where it had one."""
    if option["price_rows"] == 1 or option.get("user_price"):
        return ""
    return f"; typical ${option['usd_per_chip_hour_typical']:.2f}"


# A quote this much older than the newest in the data is told as such: cloud GPU list prices move by a quarter to a
# half within a year (AWS cut P4d, P5 and P5en rates 25-45% in June 2025), so an older one may be far off (judgement).
STALE_PRICE_YEARS = 2.0


def stale_words(option: dict) -> str:
    """ " The price dates from 2022-12, ...": where the option's price is a list quote over :data:`STALE_PRICE_YEARS`
    older than the newest quote in the data; nothing otherwise."""
    age = option.get("price_age_years")
    if age is None or age < STALE_PRICE_YEARS or option.get("user_price"):
        return ""
    return (
        f" The price dates from {option['price_as_of']:%Y-%m}, {age:.0f} years before the newest quote in the data, "
        "and GPU list prices have moved since (AWS cut its P4 and P5 rates by 25-45% in June 2025): confirm it "
        "before committing."
    )


def rent_words(option: dict) -> str:
    """How an option's chips are rented: "p5.48xlarge is rented whole, 8 chips each", "Google TPU7x is rented in whole
    4-chip VM hosts"."""
    if option["kind"] == "tpu":
        return f"{option['name']} is rented in whole {option['rent_unit']}-chip VM hosts"
    return f"{option['instance_type']} is rented whole, {count(option['rent_unit'], 'chip')} each"


def rented_words(option: dict) -> str:
    """Where an option's instance (a TPU's slice hosts) is rented whole and its chips do not fill them: how many are
    billed."""
    rented = option.get("rented_chips")
    if rented is None or rented <= option["chips"]:
        return ""
    unit, chips = option["rent_unit"], option["chips"]
    takes = f"{count(chips, 'chip')} {'takes' if chips == 1 else 'take'}"
    held = count(rented // unit, "host" if option["kind"] == "tpu" else "instance")
    return f" {rent_words(option)}: {takes} {held}, and all {rented:,} chips are billed."


def whole_instances(chips: int, option: dict) -> int:
    """``chips`` in whole instances of the option's quote (``rent_unit``: 1 where it is billed per chip)."""
    unit = option.get("rent_unit") or 1
    return math.ceil(chips / unit) * unit


def token_price(value: float | None) -> str:
    """$0.055, $0.28, $7.78, $13.1, $142: a price per million tokens with three significant figures from $1 (two
    below it, and cents at least), so that neighbours in a ranking ($0.055 and $0.062, $13.1 and $13.4) do not read
    the same."""
    if value is None:
        return "n/a"
    if value >= 99.95:
        return f"${value:,.0f}"
    if value >= 9.995:
        return f"${value:.1f}"
    shown = float(f"{value:.2g}")  # two significant figures, rounded first: 0.0999 reads $0.10
    decimals = max(2, 1 - math.floor(math.log10(shown))) if shown > 0 else 2
    return f"${value:,.{decimals}f}"


def milliseconds(value: float) -> str:
    """A latency in ms as a reader can check it against a target: whole ms from 100 up (1,785), three significant
    figures below (48.6, 8.5, 0.5), never rounded to 0."""
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def per_million_tokens(value: float | None) -> str:
    """$0.28 per million output tokens."""
    return "n/a" if value is None else f"{token_price(value)} per million output tokens"


def energy(kwh: float | None, co2e_kg: float | None = None) -> str:
    """1,240 MWh (510 t CO2e), 42 kWh (16 kg CO2e): training energy and emissions as a manager reads them (under
    1 MWh in kWh and under 1 t in kg, so a small job does not read 0.0 MWh)."""
    if kwh is None:
        return "n/a"
    text = _scaled(kwh, "kWh", "MWh")
    return text if co2e_kg is None else f"{text} ({_scaled(co2e_kg, 'kg', 't')} CO2e)"


def _scaled(value: float, unit: str, thousand: str) -> str:
    """A quantity in ``unit`` below 1,000 of it, else in ``thousand`` (1,000 of it): a decimal below ten."""
    number, word = (value / 1e3, thousand) if value >= 1e3 else (value, unit)
    return f"{number:,.0f} {word}" if number >= 9.95 else f"{number:.1f} {word}"


def css() -> str:
    """The stylesheet's text, for pages that must be self-contained (the HTML report)."""
    return STYLESHEET.read_text(encoding="utf-8")


def escape(value: object) -> str:
    return html.escape(str(value))


def items(texts: Iterable[str], css_class: str = "wb-reasons") -> str:
    """A bulleted list of plain-text items."""
    return f"<ul class='{css_class}'>" + "".join(f"<li>{escape(t)}</li>" for t in texts) + "</ul>"


def card(headline: str, body: str) -> str:
    """The answer box: a headline in plain text over HTML ``body``."""
    return f"<div class='wb-card'><div class='wb-headline'>{escape(headline)}</div>{body}</div>"


def message(text: str, kind: str = "error") -> str:
    """A one-line notice; ``kind`` is ``error`` or ``info``."""
    if kind not in ("error", "info"):
        raise ValueError(f"message kind {kind!r} is not one of error, info")
    return f"<div class='wb-message wb-{kind}'>{escape(text)}</div>"


# Sorts the clicked header's column by the cells' data-sort values (numbers as numbers, blanks last); a second
# click reverses. An attribute handler: a widget's HTML runs no <script>, and nothing is fetched (works offline).
_SORT = html.escape(
    "var h=this,b=h.closest('table').tBodies[0],i=h.cellIndex,d=h.getAttribute('aria-sort')==='ascending'?-1:1;"
    "Array.from(h.parentNode.cells).forEach(function(c){c.removeAttribute('aria-sort')});"
    "h.setAttribute('aria-sort',d>0?'ascending':'descending');"
    "function k(r){var v=r.cells[i].dataset.sort;return v===undefined?r.cells[i].textContent:v}"
    "Array.from(b.rows).sort(function(x,y){var a=k(x),c=k(y);"
    "if(a===''||c==='')return (a==='')-(c==='');var p=Number(a),q=Number(c);"
    "return d*(isNaN(p)||isNaN(q)?a.localeCompare(c):p-q)}).forEach(function(r){b.appendChild(r)})",
    quote=True,
)


# Shows only the rows of the target table whose text holds every word typed (case-insensitive; empty: all rows), by
# writing a CSS rule into the style element after the box. The rule outlives the table's HTML, so a table redrawn
# after a control change stays filtered by the words still in the box; a sort keeps hidden rows hidden.
_FILTER = html.escape(
    "var w=this.value.toLowerCase().split(/\\s+/).filter(Boolean),r=this.dataset.target+' tbody tr';"
    "this.nextElementSibling.textContent=w.length?w.map(function(x){"
    "return r+':not([data-filter*=\"'+CSS.escape(x)+'\"])'}).join(',')+'{display:none}':''",
    quote=True,
)


def table_filter(name: str, placeholder: str = "Filter: tpu, spot, aws ...") -> str:
    """A search box that filters the rows of the :func:`table` with this ``filter_name`` as one types (in the
    page: no request, works offline). Keep it outside the table's own HTML so that redrawing the table leaves the
    box and its words in place."""
    target = f'table[data-filter-name="{name}"]'
    return (
        f"<input type='search' class='wb-filter' aria-label='Filter the rows' placeholder='{escape(placeholder)}' "
        f"data-target='{escape(target)}' oninput=\"{_FILTER}\"><style></style>"
    )


def table(
    head: Sequence[str],
    rows: Iterable[Sequence[object]],
    css_class: str = "wb-table",
    muted: Iterable[bool] | None = None,
    sort_keys: Iterable[Sequence[object]] | None = None,
    filter_name: str | None = None,
) -> str:
    """An HTML table of plain-text cells; rows flagged in ``muted`` (e.g. infeasible options) are greyed. With
    ``sort_keys`` (one value per cell: a number, a text, or None for a blank that sorts last) a click on a column
    header sorts the rows by that column, a second click the other way. With ``filter_name`` each row carries its
    text (lower case) for the :func:`table_filter` of that name."""
    rows = list(rows)
    flags = list(muted) if muted is not None else [False] * len(rows)
    keys = list(sort_keys) if sort_keys is not None else [[None] * len(row) for row in rows]

    def cell(value: object, key: object) -> str:
        if sort_keys is None or key == value:  # a cell with no key sorts by its text
            return f"<td>{escape(value)}</td>"
        text = "" if key is None else f"{key:.8g}" if isinstance(key, float) else escape(key)
        return f"<td data-sort='{text}'>{escape(value)}</td>"

    def opening(row: Sequence[object], flag: bool) -> str:
        muted_class = " class='wb-muted'" if flag else ""
        text = f" data-filter='{escape(' '.join(map(str, row)).lower())}'" if filter_name else ""
        return f"<tr{muted_class}{text}>"

    body = "".join(
        opening(row, flag) + "".join(map(cell, row, key)) + "</tr>"
        for row, flag, key in zip(rows, flags, keys, strict=True)
    )
    sortable = "" if sort_keys is None else f" class='wb-sortable' title='Sort by this column' onclick=\"{_SORT}\""
    header = "".join(f"<th{sortable}>{escape(h)}</th>" for h in head)
    named = f" data-filter-name='{escape(filter_name)}'" if filter_name else ""
    return f"<table class='{css_class}'{named}><thead><tr>{header}</tr></thead><tbody>{body}</tbody></table>"
