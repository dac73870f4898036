"""Where the workbook keeps files it can rebuild (validated tables, chart specs, fitted calibrations, the charts'
JavaScript bundle).

``WORKBOOK_CACHE_DIR`` overrides the default ``~/.cache/accelerator-workbook``. Read at call time, so a test or a
server can point it elsewhere. Everything in it is a cache: deleting the folder only costs the time to rebuild.

:func:`per_catalog` keeps what is computed from a catalog alone (the training and serving calibrations): once per
process in memory and across processes on disk, keyed by the content of every table of the catalog and by
:func:`code_version`, so a changed table, a changed line of the package, another package version or another
polars version computes it again, and nothing stale is ever returned.

:class:`Memo` keeps the last few results of a pure function of frames in memory (``options.evaluate_full``: a slider
moved back, the downloads of the result on screen, a new visitor's default scenario).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import io
import json
import os
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import Path

import polars as pl

import workbook

RESULTS_KEPT = 32  # fitted results kept in memory per process (one per catalog content: uploads, leave-one-out)


def directory() -> Path:
    return Path(os.environ.get("WORKBOOK_CACHE_DIR", Path.home() / ".cache" / "accelerator-workbook"))


def write_atomic(path: Path, write) -> None:
    """``write(tmp_path)`` then rename into place, so a concurrent reader never sees half a file; a cache that
    cannot be written (read-only home) is skipped."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write(tmp)
        tmp.replace(path)
    except OSError:
        tmp.unlink(missing_ok=True)


@functools.cache
def code_version() -> str:
    """Digest of every module of the package, its version and polars' version: any code change is a new key."""
    root = Path(workbook.__file__).parent
    digest = hashlib.sha256(f"{workbook.__version__}|{pl.__version__}".encode())
    for module in sorted(root.rglob("*.py")):
        digest.update(module.relative_to(root).as_posix().encode())
        digest.update(module.read_bytes())
    return digest.hexdigest()[:16]


def frame_digest(frame: pl.DataFrame) -> bytes:
    """SHA-256 of a frame's schema and of each row's value hash: equal frames give equal digests however their
    buffers are laid out (a frame read back from Arrow and the same frame freshly built differ in their bytes)."""
    digest = hashlib.sha256(f"{frame.schema!r}|{frame.height}".encode())
    if frame.width:
        buffer = io.BytesIO()
        rows = frame.select(pl.struct(pl.all()).hash(seed=0)).rechunk()
        rows.write_ipc(buffer, compression="uncompressed")
        digest.update(buffer.getvalue())
    return digest.digest()


_DIGESTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # catalog -> content digest (catalogs are frozen)


def content_digest(catalog) -> str:
    """Digest of every table of a (frozen) catalog dataclass, computed once per catalog object."""
    if catalog not in _DIGESTS:
        digest = hashlib.sha256()
        for field in dataclasses.fields(catalog):
            digest.update(field.name.encode())
            digest.update(frame_digest(getattr(catalog, field.name)))
        _DIGESTS[catalog] = digest.hexdigest()[:32]
    return _DIGESTS[catalog]


def _write(result, stem: Path) -> None:
    """One Arrow file per frame field, then ``<stem>.json`` with the other fields (written last: its presence
    means every frame is there)."""
    scalars = {}
    for field in dataclasses.fields(result):
        value = getattr(result, field.name)
        if isinstance(value, pl.DataFrame):
            write_atomic(stem.with_name(f"{stem.name}.{field.name}.arrow"), value.write_ipc)
        else:
            scalars[field.name] = value
    write_atomic(stem.with_name(f"{stem.name}.json"), lambda tmp: tmp.write_text(json.dumps(scalars)))


def _read(kind: type, stem: Path):
    """The result stored under ``stem``, or None when absent or unreadable (then it is computed again)."""
    try:
        scalars = json.loads(stem.with_name(f"{stem.name}.json").read_text())
        values = {}
        for field in dataclasses.fields(kind):
            if field.name in scalars:
                values[field.name] = scalars[field.name]
            else:
                values[field.name] = pl.read_ipc(stem.with_name(f"{stem.name}.{field.name}.arrow").read_bytes())
        return kind(**values)
    except (OSError, ValueError, TypeError, pl.exceptions.PolarsError):
        return None


_RESULTS: dict[str, object] = {}  # key -> result, for this process


def per_catalog(name: str, kind: type) -> Callable:
    """Decorate ``fn(catalog) -> kind`` (a dataclass of frames and JSON-able values) so that it runs once per
    catalog content and code version: kept in memory, and on disk under ``<cache>/results`` for new processes."""

    def decorate(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def cached(catalog):
            key = f"{name}-{code_version()}-{content_digest(catalog)}"
            if key in _RESULTS:
                return _RESULTS[key]
            stem = directory() / "results" / key
            result = _read(kind, stem)
            if result is None:
                result = fn(catalog)
                _write(result, stem)
            if len(_RESULTS) >= RESULTS_KEPT:
                _RESULTS.clear()
            _RESULTS[key] = result
            return result

        return cached

    return decorate


class Memo:
    """The most recently used results by key, in this process, up to ``max_bytes`` in all (polars' estimate; the
    least recently used dropped first, the newest always kept).

    A result is a polars frame, handed out as a fresh (shallow, copy-free) clone each time, so a caller that
    changes its copy in place (``insert_column``) cannot change what the next caller gets.
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._results: OrderedDict[Hashable, pl.DataFrame] = OrderedDict()

    def get(self, key: Hashable, compute: Callable[[], pl.DataFrame]) -> pl.DataFrame:
        if key in self._results:
            self._results.move_to_end(key)
        else:
            self._results[key] = compute()
            while len(self._results) > 1 and self.estimated_bytes() > self.max_bytes:
                self._results.popitem(last=False)
        return self._results[key].clone()

    def __len__(self) -> int:
        return len(self._results)

    def clear(self) -> None:
        self._results.clear()

    def estimated_bytes(self) -> int:
        """Memory the kept results hold (clones handed out share it)."""
        return sum(frame.estimated_size() for frame in self._results.values())
