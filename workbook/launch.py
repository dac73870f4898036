"""``workbook app``: serve the Voila app with the shipped settings (``voila.json``: the workbook template, sources
stripped, tracebacks hidden, a warm kernel, idle culling) from any directory.

Voila reads ``voila.json`` from its working directory, so it is started in the directory that holds the shipped
``voila.json`` with the app notebook given relative to it. The template is found where the install put it
(``<prefix>/share/jupyter/voila/templates/workbook``).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

from workbook import shipped
from workbook.errors import InputError

APP_EXTRA = "pip install 'accelerator-workbook[app]'"


def voila_command(port: int, ip: str, base_url: str) -> tuple[list[str], str]:
    """(the Voila command line, the directory to run it in)."""
    if importlib.util.find_spec("voila") is None:
        raise InputError("app", f"needs Voila and ipywidgets, which the core install leaves out: {APP_EXTRA}")
    config = shipped.path("app/voila.json", "voila.json")
    notebook = shipped.path("app/app.ipynb", "notebooks/app.ipynb")
    command = [sys.executable, "-m", "voila", str(notebook.relative_to(config.parent)), "--no-browser"]
    command += [f"--port={port}", f"--Voila.ip={ip}", f"--Voila.base_url={base_url}"]
    return command, str(config.parent)


def serve(port: int, ip: str, base_url: str) -> int:
    """Run Voila in the foreground until Ctrl-C. On POSIX this process becomes Voila (``exec``), so a signal sent
    to ``workbook app`` (a service manager's stop, a test's terminate) reaches the server and its kernels."""
    command, cwd = voila_command(port, ip, base_url)
    shown = "localhost" if ip in ("127.0.0.1", "0.0.0.0") else ip
    print(f"Accelerator Workbook: open http://{shown}:{port}{base_url} in your browser (Ctrl-C stops it)", flush=True)
    if os.name == "posix":
        os.chdir(cwd)
        os.execv(command[0], command)
    try:
        return subprocess.call(command, cwd=cwd)
    except KeyboardInterrupt:
        return 0
