"""The wheel, installed into a new environment and run from a directory outside the checkout: the CLI finds its
data, the report command writes a page, and ``workbook app`` serves the app with the shipped template.

The new environment borrows this environment's dependencies (offline, seconds): their modules through a ``.pth``
line, their Jupyter data files (Voila's and nbconvert's base templates, widget extensions) as links under the new
prefix. The package itself, its data, its template and its notebook come only from the wheel. ``.ci/run`` does the
same with a full install from the lock.
"""

import json
import os
import site
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from tests.browser import ROOT, fetch, free_port, served

TEMPLATE = "share/jupyter/voila/templates/workbook"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(ROOT)],
        check=True,
    )
    (built,) = out.glob("accelerator_workbook-*.whl")
    return built


@pytest.fixture(scope="module")
def env(wheel, tmp_path_factory) -> Path:
    """A new virtual environment holding the wheel; dependencies come from this environment's site-packages."""
    prefix = tmp_path_factory.mktemp("env")
    venv.EnvBuilder(with_pip=False).create(prefix)
    python = prefix / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q", str(wheel)], check=True
    )
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (Path(purelib) / "borrowed_dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    _borrow_jupyter_data(Path(sys.prefix) / "share" / "jupyter", prefix / "share" / "jupyter")
    return prefix


def _borrow_jupyter_data(source: Path, target: Path) -> None:
    """Link every Jupyter data entry of this environment into ``target``, except what the wheel installed there."""
    for entry in source.iterdir():
        if (target / entry.name).is_dir() and entry.is_dir():
            _borrow_jupyter_data(entry, target / entry.name)
        elif not (target / entry.name).exists() and entry.name != "workbook":
            (target / entry.name).symlink_to(entry)


@pytest.fixture
def outside(tmp_path) -> Path:
    assert ROOT not in tmp_path.parents
    return tmp_path


def _run(env: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "JUPYTER_PATH", "WORKBOOK_DATA_DIR")}
    return subprocess.run(
        [str(env / "bin" / "workbook"), *args], cwd=cwd, env=clean, capture_output=True, text=True, timeout=300
    )


def test_wheel_holds_data_template_notebook_and_license(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    shipped = sorted(p.name for p in (ROOT / "data").glob("*.csv"))
    tables = sorted(n.split("/")[-1] for n in names if n.startswith("workbook/data/") and n.count("/") == 2)
    assert shipped and tables == shipped
    assert {"workbook/app/app.ipynb", "workbook/app/voila.json", "workbook/app/chartgrid.js"} <= set(names)
    assert any(n.endswith(f"{TEMPLATE}/index.html.j2") for n in names)
    assert any(n.endswith("/licenses/LICENSE") for n in names)


def test_installed_package_is_the_wheel_not_the_checkout(env, outside):
    found = subprocess.run(
        [str(env / "bin" / "python"), "-c", "import workbook.catalog as c; print(c.DATA_DIR)"],
        cwd=outside,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(found).is_relative_to(env) and (Path(found) / "accelerators.csv").is_file()
    template = env / TEMPLATE / "index.html.j2"
    assert template.is_file() and not template.parent.is_symlink()


def test_compare_from_outside_the_checkout(env, outside):
    result = _run(env, outside, "compare", "--params", "70e9", "--json")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert len(rows) > 10 and any(r["feasible"] for r in rows)
    assert rows[0]["cost_usd"] > 0


def test_version_and_program_name(env, outside):
    version = _run(env, outside, "--version")
    assert version.returncode == 0 and version.stdout.startswith("workbook ")
    bad = _run(env, outside, "compare", "--params", "-1")
    assert bad.returncode == 2 and "--params" in bad.stderr


def test_report_from_outside_the_checkout(env, outside):
    result = _run(env, outside, "report", "--params", "70e9", "--days", "30", "--out", "r.html")
    assert result.returncode == 0, result.stderr
    page = (outside / "r.html").read_text()
    assert page.lower().startswith("<!doctype html>") and "<svg" in page and "Train on" in page


def _app(env: Path, cwd: Path, *args: str):
    port = free_port()
    return served([str(env / "bin" / "workbook"), "app", f"--port={port}", *args], cwd, port)


@pytest.mark.parametrize("base_url", ["/", "/services/workbook/"])
def test_app_serves_the_page_from_outside_the_checkout(env, outside, base_url):
    with _app(env, outside, f"--base-url={base_url}") as url:
        status, page = fetch(url + base_url)
    assert status == 200, page[-2000:]
    assert "<title>Accelerator Workbook</title>" in page
    assert "application/vnd.jupyter.widget-view+json" in page  # the notebook ran and displayed the dashboard
    assert "Traceback" not in page and "font-awesome" not in page  # the workbook template, not Voila's lab template
