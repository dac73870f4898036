"""The shipped Voila configuration: the page cannot run code, list files, or reach Jupyter's other surfaces."""

import asyncio
import json
import re
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest
from tornado.websocket import websocket_connect

from tests.browser import ROOT, voila


@pytest.fixture(scope="module")
def server():
    with voila() as url:
        page = urllib.request.urlopen(url + "/", timeout=120).read().decode()
        yield url, page


def _status(url: str, method: str = "GET") -> int:
    request = urllib.request.Request(url, method=method, data=b"{}" if method == "POST" else None)
    try:
        return urllib.request.urlopen(request, timeout=30).status
    except urllib.error.HTTPError as err:
        return err.code


@pytest.mark.parametrize(
    "path, method",
    [
        ("/api/contents", "GET"),
        ("/api/contents/notebooks/app.ipynb", "GET"),
        ("/lab", "GET"),
        ("/tree", "GET"),
        ("/api/terminals", "GET"),
        ("/api/terminals", "POST"),
        ("/terminals/1", "GET"),
        ("/api/kernels", "GET"),
        ("/api/kernels", "POST"),
        ("/api/sessions", "GET"),
        ("/notebooks/app.ipynb", "GET"),
        ("/files/voila.json", "GET"),
        ("/voila/files/voila.json", "GET"),
        ("/voila/files/data/prices.csv", "GET"),
    ],
)
def test_other_jupyter_surfaces_are_refused(server, path, method):
    url, _ = server
    assert _status(url + path, method) in (403, 404, 405)


def test_page_has_no_source_code(server):
    _, page = server
    assert "from workbook.app.shell import Dashboard" not in page
    assert "dashboard.apply_query" not in page


def test_page_websocket_cannot_execute_code(server, tmp_path):
    url, page = server
    kernel = re.search(r'"kernelId":\s*"([0-9a-f-]+)"', page)
    assert kernel, "kernel id not found in the page"
    marker = tmp_path / "pwned"
    ws_url = url.replace("http://", "ws://") + f"/api/kernels/{kernel.group(1)}/channels"

    async def attempt():
        conn = await websocket_connect(ws_url)
        msg_id = uuid.uuid4().hex
        await conn.write_message(
            json.dumps(
                {
                    "header": {
                        "msg_id": msg_id,
                        "username": "x",
                        "session": uuid.uuid4().hex,
                        "msg_type": "execute_request",
                        "version": "5.3",
                    },
                    "parent_header": {},
                    "metadata": {},
                    "channel": "shell",
                    "buffers": [],
                    "content": {
                        "code": f"open({str(marker)!r}, 'w').write('x')",
                        "silent": False,
                        "store_history": False,
                        "user_expressions": {},
                        "allow_stdin": False,
                    },
                }
            )
        )
        replies = []
        try:
            while True:
                message = await asyncio.wait_for(conn.read_message(), timeout=5)
                if message is None:
                    break
                if isinstance(message, str):
                    replies.append(json.loads(message))
        except asyncio.TimeoutError:
            pass
        conn.close()
        return replies

    replies = asyncio.run(attempt())
    assert not marker.exists()
    assert not any(
        r.get("msg_type") == "execute_reply" and r.get("parent_header", {}).get("msg_id")
        for r in replies
        if r.get("content", {}).get("status") == "ok"
    )


def test_no_secrets_in_the_repository():
    tracked = [
        p
        for p in ROOT.rglob("*")
        if p.is_file()
        and ".git" not in p.parts
        and ".venv" not in p.parts
        and p.suffix in {".py", ".json", ".csv", ".md", ".toml", ".cfg", ".j2", ".txt", ".ipynb"}
    ]
    pattern = re.compile(
        r"(AKIA[0-9A-Z]{16}|-----BEGIN [A-Z ]*PRIVATE KEY-----|ghp_[0-9A-Za-z]{36}|xox[bp]-[0-9A-Za-z-]{10,})"
    )
    offenders = [str(p) for p in tracked if pattern.search(Path(p).read_text(errors="ignore"))]
    assert offenders == []
