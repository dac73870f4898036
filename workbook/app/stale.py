"""No stale answers: while the inputs are invalid, the previous answer must not stay on screen beside the message
(13B sliders next to the 70B answer). The card and table are cleared, the share link and downloads removed and the
charts hidden (kept embedded, so they come back at once) until a valid scenario is computed. While a new answer is
being worked out, the tab is marked as working (its answer dimmed) so the one on screen is not read as final."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

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


WORKING = "wb-working"  # the class a tab carries while its answer is recomputed (the stylesheet dims the answer)


@contextmanager
def working(tab: w.Widget) -> Iterator[None]:
    """Mark ``tab`` as working out a new answer for the duration (the page shows it as the kernel sends it)."""
    tab.add_class(WORKING)
    try:
        yield
    finally:
        tab.remove_class(WORKING)


def show_fresh(charts: w.Widget) -> None:
    charts.layout.visibility = None


def messages(errors: list[str], notices: list[str]) -> str:
    """Every current message at once: input errors first, then notes kept from links and uploads (HTML)."""
    return "".join(views.message(text) for text in errors) + "".join(notices)
