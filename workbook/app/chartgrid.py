"""ChartGrid: Vega-Lite charts whose data is swapped in place (no re-embedding on each change).

altair's JupyterChart re-embeds a chart whenever its spec changes (~40 ms a chart in the browser
here, docs/design.md) and every JupyterChart carries its own ~0.9 MB offline JavaScript bundle. The
workbook's charts have fixed templates and only their named datasets change, so one widget holds all
of them: it embeds each template once and, on a data change, replaces the datasets in the running
Vega views (``view.data(name, rows)``). The JavaScript (``chartgrid.js``) is bundled with vega-embed,
Vega-Lite and Vega by vl-convert: offline, no CDN, built once per version and cached on disk. The
widget's own module is a small loader (``chartgrid_loader.js``) that asks the kernel for that bundle
with a custom message and imports it; see there why. The bundle is not a synced trait, so the page's
first request for every widget's state stays small (~0.2 MB instead of ~1.1 MB).
"""

from __future__ import annotations

import functools
import hashlib
import os
from importlib.metadata import version
from pathlib import Path

import altair as alt
import anywidget
import traitlets

JS_SOURCE = Path(__file__).with_name("chartgrid.js")
LOADER = Path(__file__).with_name("chartgrid_loader.js")
MAX_PAGE_VIEWS = 4  # bundles one kernel sends at most (Voila: one page view per kernel)
_PAGES_SERVED: set[str] = set()  # page views this kernel has sent the bundle to (all ChartGrids share one bundle)
CACHE_DIR = Path(os.environ.get("WORKBOOK_CACHE_DIR", Path.home() / ".cache" / "accelerator-workbook"))


@functools.cache
def bundle() -> tuple[str, str]:
    """(version key, the charts' JavaScript with its dependencies), from the on-disk cache when it is there
    (vl-convert, ~8 MB per kernel, is imported only to build it)."""
    source = JS_SOURCE.read_text(encoding="utf-8")
    key = f"{alt.__version__}-{version('vl-convert-python')}-{hashlib.sha256(source.encode()).hexdigest()[:12]}"
    path = CACHE_DIR / f"chartgrid-{key}.js"
    if path.is_file():
        return key, path.read_text(encoding="utf-8")
    import vl_convert as vlc
    from altair.utils._importers import vl_version_for_vl_convert

    bundled = vlc.javascript_bundle(source, vl_version=vl_version_for_vl_convert())
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(bundled, encoding="utf-8")
    tmp.replace(path)  # atomic: concurrent kernels never read a half-written bundle
    return key, bundled


class ChartGrid(anywidget.AnyWidget):
    """``specs``: chart name -> Vega-Lite spec with named datasets; ``datasets``: chart name -> {dataset: rows}."""

    _esm = LOADER
    _bundle_key = traitlets.Unicode().tag(sync=True)
    specs = traitlets.Dict().tag(sync=True)
    datasets = traitlets.Dict().tag(sync=True)
    columns = traitlets.Int(2).tag(sync=True)

    def __init__(self, specs: dict, **kwargs):
        key, _ = bundle()  # built or read from the cache once per kernel
        super().__init__(specs=specs, datasets={name: {} for name in specs}, _bundle_key=key, **kwargs)
        self.on_msg(self._on_message)

    def _on_message(self, _widget, content, _buffers) -> None:
        """The page asks for the JavaScript bundle once (per page and version). It goes back as a JSON string, not a
        binary buffer: a 0.9 MB buffer sent to a client on the legacy (pre-v1) kernel websocket protocol made the
        Jupyter server spin and grow without bound (measured: +110 MB/s).

        Each page view names itself (a random id made once per page); the bundle goes once to each page view and
        to at most ``MAX_PAGE_VIEWS`` of them per kernel (a Voila kernel serves one page view; a notebook kernel
        may see a few page reloads). Further requests are ignored: a client that repeats the ~250-byte request
        cannot make the kernel and the server queue 0.9 MB per request (measured before: 120 -> 641 MB in 6 s)."""
        if not (isinstance(content, dict) and content.get("request") == "bundle"):
            return
        page = str(content.get("page", ""))[:64]
        if page in _PAGES_SERVED or len(_PAGES_SERVED) >= MAX_PAGE_VIEWS:
            return
        _PAGES_SERVED.add(page)
        key, js = bundle()
        self.send({"bundle": key, "javascript": js})
