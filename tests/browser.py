"""Helpers to serve the app with Voila and drive it in headless Chromium (see docs/design.md)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def served(command: list[str], cwd: Path, port: int, env: dict[str, str] | None = None):
    """Start the server ``command`` (listening on ``port``) in ``cwd`` with no JUPYTER_PATH, as its users start it,
    plus ``env``; yield its base URL; stop it afterwards."""
    proc = subprocess.Popen(
        command,
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**{k: v for k, v in os.environ.items() if k != "JUPYTER_PATH"}, **(env or {})},
    )
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:  # a server still shutting its kernels down is stopped hard
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def voila(notebook: str = "notebooks/app.ipynb", *extra: str):
    """Serve ``notebook`` with the shipped voila.json on a free port; yield its base URL once it listens; stop the
    server afterwards.

    Started as a Voila user starts an app, ``voila notebooks/app.ipynb`` from the repository root: no JUPYTER_PATH,
    the template is the one the install put under the environment's ``share/jupyter``."""
    port = free_port()
    voila_bin = Path(sys.executable).parent / "voila"
    command = [str(voila_bin), notebook, "--no-browser", f"--port={port}", "--Voila.ip=127.0.0.1", *extra]
    with served(command, ROOT, port) as url:
        deadline = time.time() + 60
        while time.time() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            time.sleep(0.2)
        yield url


def chromium_available() -> bool:
    return Path(CHROMIUM).exists()


# Module marks of a test file that drives Chromium: skipped without it, unless CI demands it.
NEEDS_CHROMIUM = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not chromium_available() and not os.environ.get("WORKBOOK_REQUIRE_BROWSER"),
        reason="needs Debian chromium at /usr/bin/chromium (.ci/run installs it)",
    ),
]


def launch_chromium(playwright):
    """Headless Debian Chromium (the shipped browser, not Playwright's download) from a ``sync_playwright()``."""
    return playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)


def fetch(url: str, start_s: float = 120) -> tuple[int, str]:
    """Status and body of ``url``, waiting up to ``start_s`` for the server to listen."""
    deadline = time.time() + start_s
    while True:
        try:
            with urllib.request.urlopen(url, timeout=180) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode(errors="replace")
        except urllib.error.URLError as err:  # not listening yet
            if not isinstance(err.reason, ConnectionError) or time.time() > deadline:
                raise
            time.sleep(0.3)
