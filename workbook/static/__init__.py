"""A self-contained interactive page (no server, no network, no Python in the browser) over a precomputed grid of
scenarios: ``python -m workbook static --out site/``. See :mod:`workbook.static.grid` for what is precomputed and
:mod:`workbook.static.page` for how the page is assembled."""

from workbook.static.grid import Grid
from workbook.static.page import write

__all__ = ["Grid", "write"]
