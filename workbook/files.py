"""Every file the workbook writes goes through here: written to a temporary file beside the target, checked,
then renamed over it (``os.replace`` is atomic on one filesystem). A run that fails or is rejected leaves the
previous file exactly as it was; a reader never sees a half-written file.

    atomic_write("report.html", html, field="--out")
    with replacing("data/prices.csv", field="--out", backup=True) as tmp:
        frame.write_csv(tmp)
        check(tmp)            # raise to keep the old file; return to put tmp in its place
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from workbook.errors import InputError

BACKUP_SUFFIX = ".bak"


def check_target(path: Path | str, field: str) -> Path:
    """Raise :class:`InputError` naming ``field`` unless ``path`` can be written as a file (an existing file or a
    new name in an existing folder). Callers check this before any work, so a bad path fails fast."""
    path = Path(path)
    if path.is_dir():
        raise InputError(field, f"{str(path)!r} is a folder; give the path of a file to write")
    if not path.parent.is_dir():
        raise InputError(field, f"folder {str(path.parent)!r} does not exist; create it first")
    if not os.access(path.parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise InputError(field, f"cannot write {str(path)!r} (permission denied)")
    return path


def _mode(path: Path) -> int:
    """Keep the target's permissions; a new file gets the usual 0666 minus the umask (mkstemp would give 0600)."""
    if path.exists():
        return path.stat().st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


@contextlib.contextmanager
def replacing(path: Path | str, field: str, backup: bool = False) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; when the block returns, the temporary file replaces ``path``
    (after copying the previous file to ``path + ".bak"`` when ``backup``). If the block raises, ``path`` is
    untouched and the temporary file is removed."""
    target = check_target(path, field)
    handle, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(handle)
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, _mode(target))
        if backup and target.is_file():
            _copy_atomic(target, target.with_name(target.name + BACKUP_SUFFIX))
        os.replace(tmp, target)
    except OSError as err:
        raise InputError(field, f"cannot write {str(target)!r} ({err.strerror or err})") from None
    finally:
        tmp.unlink(missing_ok=True)


def _copy_atomic(source: Path, target: Path) -> None:
    handle, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(handle)
    try:
        shutil.copy2(source, name)
        os.replace(name, target)
    finally:
        Path(name).unlink(missing_ok=True)


def atomic_write(path: Path | str, content: str | bytes, field: str) -> None:
    """Write ``content`` (text is UTF-8) to ``path`` atomically; errors raise :class:`InputError` naming ``field``."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    with replacing(path, field) as tmp:
        tmp.write_bytes(data)
