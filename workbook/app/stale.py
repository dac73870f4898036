"""No stale answers: while the inputs are invalid, the previous answer must not stay on screen beside the message
(13B sliders next to the 70B answer). The card and table are cleared, the share link and downloads removed and the
charts hidden (kept embedded, so they come back at once) until a valid scenario is computed."""

from __future__ import annotations

import ipywidgets as w

from workbook.app import views

STALE_CARD = (
    '<div class="wb-card wb-stale">No answer for these inputs: fix what the message above names, and the answer, '
    "charts and table come back.</div>"
)
STALE_TABLE = "<div class='wb-table wb-stale'>(no options: the inputs are not valid)</div>"


def show_stale(card: w.HTML, table: w.HTML, charts: w.Widget, *cleared: w.HTML) -> None:
    card.value, table.value = STALE_CARD, STALE_TABLE
    charts.layout.visibility = "hidden"
    for widget in cleared:
        widget.value = ""


def show_fresh(charts: w.Widget) -> None:
    charts.layout.visibility = None


def messages(errors: list[str], notices: list[str]) -> str:
    """Every current message at once: input errors first, then notes kept from links and uploads (HTML)."""
    return "".join(views.message(text) for text in errors) + "".join(notices)
