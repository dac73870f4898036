"""Where the workbook keeps files it can rebuild (validated tables, the charts' JavaScript bundle).

``WORKBOOK_CACHE_DIR`` overrides the default ``~/.cache/accelerator-workbook``. Read at call time, so a test or a
server can point it elsewhere. Everything in it is a cache: deleting the folder only costs the time to rebuild.
"""

from __future__ import annotations

import os
from pathlib import Path


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
