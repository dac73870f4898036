"""One app visitor spoken at the Jupyter protocol level (no browser), for the load benchmark.

It does what the page's JavaScript does: fetch the page (Voila runs the notebook for it), open the kernel's
websocket, ask for every widget's state over the ``jupyter.widget.control`` comm (the message the browser's
widget manager sends, and must see answered within 4 s before it falls back to one request per widget),
ask the chart widget for its JavaScript bundle (as its loader does), then move the model-size slider and
wait for the chart widget's new datasets. Times each step.

``misbehave`` is the visitor issue 19 found hurting everyone: it opens the page like the others, then repeats
the ~250-byte "send me the chart bundle" request many times a second and never reads its socket, for as long
as the others' sessions are open. Before the fix each request made the kernel send the 0.9 MB bundle again,
and the server buffered it for the client that does not read (120 -> 641 MB in 6 s).
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone

from jupyter_server.services.kernels.connection.base import deserialize_msg_from_ws_v1, serialize_msg_to_ws_v1
from tornado.httpclient import AsyncHTTPClient, HTTPRequest
from tornado.websocket import websocket_connect

SLIDER = "Model size (B params)"
CHARTS = "workbook.app.chartgrid.ChartGrid"


@dataclass
class Visit:
    """Seconds from the visitor's arrival to each step (None: not reached) and what went wrong."""

    page_s: float | None = None
    states_s: float | None = None  # all widget states and the chart bundle received: the page can render
    state_reply_s: float | None = None  # request_states -> reply (the browser gives up after 4 s)
    charts_ok: bool = False  # the chart widget arrived with data for every chart
    response_ms: float | None = None  # slider value sent -> new chart data received
    error: str = ""


PROTOCOL = "v1.kernel.websocket.jupyter.org"  # the kernel websocket protocol JupyterLab and Voila pages speak


def _send(ws, msg_type: str, content: dict, session: str, metadata: dict | None = None) -> None:
    header = {
        "msg_id": uuid.uuid4().hex,
        "msg_type": msg_type,
        "session": session,
        "username": "load",
        "version": "5.3",
        "date": datetime.now(timezone.utc).isoformat(),
    }
    parts = [json.dumps(part).encode() for part in (header, {}, metadata or {}, content)]
    ws.write_message(serialize_msg_to_ws_v1(parts, "shell"), binary=True)


def _decode(frame: bytes) -> dict:
    """A server frame in the v1 protocol: channel, header, parent header, metadata, content, then buffers."""
    _, parts = deserialize_msg_from_ws_v1(frame)
    header, _, _, content = (json.loads(part) for part in parts[:4])
    return {"header": header, "content": content}


class Gate:
    """Visitors keep their sessions open until every visitor has moved its slider (or failed)."""

    def __init__(self, visitors: int):
        self.left, self.open = visitors, asyncio.Event()

    def arrive(self) -> None:
        self.left -= 1
        if self.left <= 0:
            self.open.set()


async def _connect(url: str, timeout_s: float, result: Visit, start: float):
    """Fetch the page (Voila runs the notebook), open its kernel's websocket; return (websocket, session)."""
    client = AsyncHTTPClient(max_clients=1000)  # tornado's default queues all but 10 requests
    response = await client.fetch(HTTPRequest(url, request_timeout=timeout_s))
    result.page_s = time.perf_counter() - start
    kernel = re.search(r'"kernelId": "([0-9a-f-]+)"', response.body.decode()).group(1)
    cookies = "; ".join(c.split(";")[0] for c in response.headers.get_list("Set-Cookie"))
    session = uuid.uuid4().hex
    ws_url = url.replace("http", "ws", 1).rstrip("/") + f"/api/kernels/{kernel}/channels?session_id={session}"
    ws = await websocket_connect(
        HTTPRequest(ws_url, headers={"Cookie": cookies}, request_timeout=timeout_s),
        max_message_size=256 * 1024 * 1024,
        subprotocols=[PROTOCOL],
    )
    return ws, session


async def visit(url: str, gate: Gate, timeout_s: float = 600) -> Visit:
    result, ws = Visit(), None
    start = time.perf_counter()
    try:
        ws, session = await _connect(url, timeout_s, result, start)
        await _drive(ws, session, start, result, timeout_s)
    except Exception as error:  # a benchmark reports failures, it does not stop at the first
        result.error = f"{type(error).__name__}: {error}"
    gate.arrive()
    await gate.open.wait()
    if ws is not None:
        ws.close()
    return result


def _bundle_request(charts: str) -> dict:
    return {"comm_id": charts, "data": {"method": "custom", "content": {"request": "bundle", "page": "load-test"}}}


async def _states(ws, session: str, deadline: float) -> dict:
    """Every widget's state, as the page's widget manager asks for it."""
    control = uuid.uuid4().hex
    _send(
        ws,
        "comm_open",
        {"comm_id": control, "target_name": "jupyter.widget.control", "data": {}},
        session,
        {"version": "1.0.0"},
    )
    _send(ws, "comm_msg", {"comm_id": control, "data": {"method": "request_states"}}, session)
    reply = await _receive(
        ws, deadline, lambda m: m["header"]["msg_type"] == "comm_msg" and m["content"]["comm_id"] == control
    )
    return reply["content"]["data"]["states"]


async def misbehave(url: str, gate: Gate, per_s: float = 50, timeout_s: float = 600) -> int:
    """Open the page, then repeat the chart-bundle request ``per_s`` times a second without reading the socket
    until every other visitor is done; return how many requests were sent."""
    result, ws, sent = Visit(), None, 0
    start = time.perf_counter()
    try:
        ws, session = await _connect(url, timeout_s, result, start)
        states = await _states(ws, session, start + timeout_s)
        charts = next(k for k, s in states.items() if s["state"].get("_anywidget_id") == CHARTS)
        while not gate.open.is_set():  # never reads again: whatever the kernel sends piles up server-side
            _send(ws, "comm_msg", _bundle_request(charts), session)
            sent += 1
            await asyncio.sleep(1 / per_s)
    except Exception as error:  # the misbehaving client's own failures do not matter to the others
        print(f"misbehaving client stopped: {type(error).__name__}: {error}")
    if ws is not None:
        ws.close()
    return sent


async def _receive(ws, deadline: float, predicate) -> dict:
    while True:
        left = deadline - time.perf_counter()
        if left <= 0:
            raise TimeoutError("no answer from the kernel")
        frame = await asyncio.wait_for(ws.read_message(), timeout=left)
        if frame is None:
            raise ConnectionError("websocket closed by the server")
        msg = _decode(frame)
        if predicate(msg):
            return msg


async def _drive(ws, session: str, start: float, result: Visit, timeout_s: float) -> None:
    deadline = start + timeout_s
    sent = time.perf_counter()
    states = await _states(ws, session, deadline)
    result.state_reply_s = time.perf_counter() - sent
    charts = next(k for k, s in states.items() if s["state"].get("_anywidget_id") == CHARTS)
    _send(ws, "comm_msg", _bundle_request(charts), session)
    await _receive(
        ws,
        deadline,
        lambda m: (
            m["header"]["msg_type"] == "comm_msg"
            and m["content"]["comm_id"] == charts
            and "bundle" in m["content"]["data"].get("content", {})
        ),
    )
    result.states_s = time.perf_counter() - start
    slider = next(k for k, s in states.items() if s["state"].get("description") == SLIDER)
    datasets = states[charts]["state"]["datasets"]
    result.charts_ok = bool(datasets) and all(datasets.values())
    value = states[slider]["state"]["value"] * 1.5
    sent = time.perf_counter()
    _send(
        ws,
        "comm_msg",
        {"comm_id": slider, "data": {"method": "update", "state": {"value": value}, "buffer_paths": []}},
        session,
    )
    await _receive(
        ws,
        deadline,
        lambda m: (
            m["header"]["msg_type"] == "comm_msg"
            and m["content"]["comm_id"] == charts
            and "datasets" in m["content"]["data"].get("state", {})
        ),
    )
    result.response_ms = 1000 * (time.perf_counter() - sent)
