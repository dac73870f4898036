"""The data layer: table schemas, loading with schema checks and user overrides, and the price rebuild."""

from workbook.catalog.loading import (
    DATA_DIR,
    Catalog,
    capacity_to_confirm,
    layer_prices,
    load,
    over_capacity,
    read_table,
    shipped_palette,
)

__all__ = [
    "DATA_DIR",
    "Catalog",
    "capacity_to_confirm",
    "layer_prices",
    "load",
    "over_capacity",
    "read_table",
    "shipped_palette",
]
