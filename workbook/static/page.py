"""Assemble the static page: ``page.html`` with the controls, the grid's data (gzip + base64, inflated by the
browser's own DecompressionStream), ``page.js`` and the app's chart JavaScript bundle, all inline.

The charts are the app's templates (``charts.training.TEMPLATES``: cost by option, cost vs time) drawn by the
app's ChartGrid module, so the page and the app draw the same charts from the same datasets.
"""

from __future__ import annotations

import base64
import gzip
import html
import json
from pathlib import Path

from workbook import catalog as catalog_mod
from workbook.app.chartgrid import bundle
from workbook.charts import training as charts
from workbook.charts.common import VENDOR_PREFIX, template_specs
from workbook.static import grid as grid_mod

HERE = Path(__file__).parent
CHARTS = ("cost", "frontier")
DEFAULT_APP_URL = "http://localhost:8866/"  # `make app`; pass the address your team serves the app at
FILE_NAME = "index.html"


def _options(values, labels=None) -> str:
    return "".join(
        f'<option value="{html.escape(str(v))}">{html.escape(str((labels or {}).get(v, v)))}</option>' for v in values
    )


def _script_json(value) -> str:
    """JSON safe inside an inline <script>: no '</' can close the element early."""
    return json.dumps(value, separators=(",", ":")).replace("</", "<\\/")


def _grid_text(g: grid_mod.Grid, clouds: int) -> str:
    def span(values, unit=""):
        return f"{len(values)} ({values[0]:g}{unit} to {values[-1]:g}{unit})"

    return (
        f"Grid: {g.size():,} training scenarios = model sizes {span(g.params_b, 'B')} x tokens per parameter "
        f"{', '.join(f'{t:g}' for t in g.tokens_per_param)} x {len(g.frameworks)} frameworks x "
        f"{len(g.precisions)} precisions x target days {', '.join(map(str, g.days))}; each with every pricing model "
        f"and {clouds} clouds. Serving: {len(g.serve_precisions)} weight precisions x traffic "
        f"{', '.join(f'{r:g}' for r in g.requests_per_s)} requests/s. Dense model, default assumptions "
        "(calibrated MFU and goodput, migration cost counted at $6,000 per engineer-week)."
    )


def render(
    g: grid_mod.Grid | None = None, catalog: catalog_mod.Catalog | None = None, app_url: str = DEFAULT_APP_URL
) -> str:
    """The page as one HTML string."""
    g = g or grid_mod.Grid()
    data = grid_mod.build(g, catalog)
    data["specs"] = template_specs({name: charts.TEMPLATES[name] for name in CHARTS})
    data["vendor_prefix"] = VENDOR_PREFIX  # option labels drop it, as the app's do
    data["app_url"] = app_url
    packed = base64.b64encode(gzip.compress(json.dumps(data, separators=(",", ":")).encode(), 9)).decode()
    clouds = [c for c in data["clouds"] if c is not None]
    labels = {"pytorch": "PyTorch", "jax": "JAX", "tensorflow": "TensorFlow"}

    def middle(values, prefer):
        return values.index(prefer) if prefer in values else len(values) // 2

    replacements = {
        "__MAX_PARAMS__": str(len(g.params_b) - 1),
        "__DEFAULT_PARAMS__": str(middle(list(g.params_b), 70)),
        "__MAX_TOKENS__": str(len(g.tokens_per_param) - 1),
        "__MAX_DAYS__": str(len(g.days) - 1),
        "__DEFAULT_DAYS__": str(middle(list(g.days), 30)),
        "__MAX_RPS__": str(len(g.requests_per_s) - 1),
        "__DEFAULT_RPS__": str(middle(list(g.requests_per_s), 1)),
        "__FRAMEWORKS__": _options(g.frameworks, labels),
        "__PRECISIONS__": _options(g.precisions, {p: p.upper() for p in g.precisions}),
        "__SERVE_PRECISIONS__": _options(g.serve_precisions, {p: p.upper() for p in g.serve_precisions}),
        "__PRICING__": _options(data["pricing"]),
        "__CLOUDS__": _options(["any", *sorted(clouds)]),
        "__GRID__": html.escape(_grid_text(g, len(clouds))),
        "__ASOF__": html.escape(
            f"Data as of: prices {data['as_of']['prices']} (newest row), accelerator specs {data['as_of']['specs']}. "
            "Every figure's source is in the workbook's data/ folder. Costs: chips x hours x median price of the "
            "cloud's quotes, plus framework migration; ranges from the MFU and goodput ranges and the price spread."
        ),
        "__DATA__": packed,
        "__PAGE_JS__": (HERE / "page.js").read_text(encoding="utf-8"),
        "__BUNDLE__": _script_json(bundle()[1]),
    }
    page = (HERE / "page.html").read_text(encoding="utf-8")
    for key, value in replacements.items():
        page = page.replace(key, value)
    return page


def write(
    out_dir: Path | str,
    g: grid_mod.Grid | None = None,
    catalog: catalog_mod.Catalog | None = None,
    app_url: str = DEFAULT_APP_URL,
) -> Path:
    """Write ``index.html`` into ``out_dir`` (created if missing); return its path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / FILE_NAME
    path.write_text(render(g, catalog, app_url), encoding="utf-8")
    return path
