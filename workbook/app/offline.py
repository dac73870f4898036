"""Offline charts: altair's JupyterChart with its JavaScript bundled locally, built once per version.

``alt.JupyterChart.enable_offline()`` bundles vega-embed with vl-convert in every kernel (~1.2 s CPU,
~90 MB). The bundle only depends on the altair and vl-convert versions, so it is built once and
cached on disk; later kernels read the file (BROWSER.md: kernel RSS 228 -> 140 MB, first chart
3.8 -> 2.6 s). No asset is ever fetched from a CDN.
"""

from __future__ import annotations

import os
from pathlib import Path

import altair as alt

CACHE_DIR = Path(os.environ.get("WORKBOOK_CACHE_DIR", Path.home() / ".cache" / "accelerator-workbook"))


def bundle_path() -> Path:
    import vl_convert

    return CACHE_DIR / f"jupyterchart-altair-{alt.__version__}-vlc-{vl_convert.__version__}.js"


def enable_offline_charts() -> Path:
    """Point JupyterChart at the cached offline bundle, building the cache on first use."""
    path = bundle_path()
    if alt.JupyterChart._is_offline:
        return path
    if path.is_file():
        alt.JupyterChart._esm = path.read_text(encoding="utf-8")
        alt.JupyterChart._is_offline = True
        return path
    alt.JupyterChart.enable_offline()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(alt.JupyterChart._esm, encoding="utf-8")
    tmp.replace(path)  # atomic: concurrent kernels never read a half-written bundle
    return path
