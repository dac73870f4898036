"""PriceUpload: a CSV file picker that checks the file's size in the browser before sending anything.

ipywidgets' FileUpload sends any file; past the server's websocket message limit (10 MiB) the socket closes
with code 1009 and the upload vanishes with no message. This widget refuses a file above ``max_bytes`` in the
page (and tells the kernel, which says so in the status line), and sends the others as one binary buffer.
The kernel checks the size again: a client that skips the page's check gets the same refusal.
``value`` has FileUpload's shape (``({"name", "content", "size"},)``) but is not synced: the file's bytes
travel once, in the message, not back and forth as widget state.
"""

from __future__ import annotations

from pathlib import Path

import anywidget
import traitlets

MAX_UPLOAD_BYTES = 5 * 2**20  # the shipped prices.csv is ~0.3 MB; 5 MiB stays under the 10 MiB websocket limit
NAME_CHARS = 200


def mib(size: int) -> str:
    return f"{size / 2**20:.1f} MiB"


class PriceUpload(anywidget.AnyWidget):
    _esm = Path(__file__).with_name("upload.js")
    description = traitlets.Unicode("Price overrides CSV").tag(sync=True)
    max_bytes = traitlets.Int(MAX_UPLOAD_BYTES).tag(sync=True)
    value = traitlets.Tuple()  # ({"name", "content", "size"},) of the last accepted file
    rejected = traitlets.Dict()  # {"name", "size"} of the last file refused for its size

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.on_msg(self._on_message)

    def _on_message(self, _widget, content, buffers) -> None:
        if not isinstance(content, dict):
            return
        name = str(content.get("name", "file"))[:NAME_CHARS]
        self.rejected = {}  # a second refusal of the same file is a change too
        if content.get("upload") and buffers:
            size = len(buffers[0])
            if size > self.max_bytes:
                self.rejected = {"name": name, "size": size}
                return
            self.value = ({"name": name, "content": memoryview(buffers[0]), "size": size},)
        elif content.get("too_large"):
            size = content.get("size")
            self.rejected = {"name": name, "size": size if isinstance(size, int) else self.max_bytes + 1}
