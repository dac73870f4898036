"""The data layer: table schemas, loading with schema checks and user overrides, and the price rebuild."""

from workbook.catalog.loading import DATA_DIR, PRICE_KEY, Catalog, load, read_table, shipped_kinds

__all__ = ["DATA_DIR", "PRICE_KEY", "Catalog", "load", "read_table", "shipped_kinds"]
