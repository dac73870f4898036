"""The widget layer: the only package that imports ipywidgets. Controls -> Scenario -> frames -> charts."""

import sys

# jsonschema imports rfc3987_syntax (installed with Jupyter) only to check IRI string formats, which no
# Vega-Lite spec uses; importing it builds a parser grammar that costs ~1.3 s of every app kernel's start.
# Marking it absent makes jsonschema skip that one format check (it handles the ImportError itself).
if "rfc3987_syntax" not in sys.modules:
    sys.modules["rfc3987_syntax"] = None

from workbook.app.shell import Dashboard  # noqa: E402  (after the import guard above)

__all__ = ["Dashboard"]
