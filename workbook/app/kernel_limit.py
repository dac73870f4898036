"""A cap on the kernels one Voila server runs at once (each page view is a kernel of ~140 MB, BROWSER.md).

Voila and jupyter-server start a kernel for every page request with no limit: thirty pages opened at once
took a test machine from 353 MB to 7.4 GB in 44 s. ``voila.json`` names this class as Voila's kernel manager;
past ``max_kernels`` (running + starting, the warm pool included) a new page gets HTTP 503 with
``BUSY_MESSAGE`` at once instead of a hang (template ``503.html``). Idle kernels are culled (``cull_idle_timeout``
in voila.json), which frees their seats and refills Voila's warm pool if the cap refused its refill. Set the cap
with ``--CappedKernelManager.max_kernels=N`` or in voila.json. Limits per client (one visitor opening many pages)
belong to the reverse proxy: see the README's security section.
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

    async def shutdown_kernel(self, kernel_id, *args, **kwargs):
        await super().shutdown_kernel(kernel_id, *args, **kwargs)
        self._refill_pools()

    def _refill_pools(self) -> None:
        """A seat is free: drop warm-pool starts the cap refused and start them again (Voila refills its pool only
        when a warm kernel is taken, so without this the pool would stay empty after the first busy moment)."""
        for name, pool in getattr(self, "_pools", {}).items():  # Voila's preheat subclass keeps its pools here
            pool[:] = [task for task in pool if not (task.done() and (task.cancelled() or task.exception()))]
            if not pool:
                self.fill_if_needed(delay=0, notebook_name=name)
