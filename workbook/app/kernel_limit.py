"""A cap on the kernels one Voila server runs at once (each page view is a kernel of ~140 MB, BROWSER.md).

Voila and jupyter-server start a kernel for every page request with no limit: thirty pages opened at once
took a test machine from 353 MB to 7.4 GB in 44 s. ``voila.json`` names this class as Voila's kernel manager;
past ``max_kernels`` (running + starting, the warm pool included) a new page gets HTTP 503 with
``BUSY_MESSAGE`` at once instead of a hang. Idle kernels are culled (``cull_idle_timeout`` in voila.json), which
frees their seats. Set the cap with ``--CappedKernelManager.max_kernels=N`` or in voila.json. Limits per client
(one visitor opening many pages) belong to the reverse proxy: see the README's security section.
"""

from __future__ import annotations

from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager
from tornado import web
from traitlets import Int

BUSY_MESSAGE = "The workbook is busy: too many people are using it right now. Please try again in a minute."


class CappedKernelManager(AsyncMappingKernelManager):
    max_kernels = Int(
        24, config=True, help="Most kernels (page views) at once, warm pool included; a page past it gets 503."
    )

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._starting = 0  # starts in flight: concurrent requests must not all slip under the cap

    async def start_kernel(self, *args, **kwargs):
        if kwargs.get("kernel_id") is None and len(self.list_kernel_ids()) + self._starting >= self.max_kernels:
            self.log.warning("kernel cap reached (%d): answering 503", self.max_kernels)
            raise web.HTTPError(503, BUSY_MESSAGE, reason=BUSY_MESSAGE)
        self._starting += 1
        try:
            return await super().start_kernel(*args, **kwargs)
        finally:
            self._starting -= 1
