"""Saved notebook outputs are current: they are what GitHub shows and what nbval compares, so a change to data,
formulas or charts that moves one must come with `make notebooks`. nbval (plain `pytest`) checks the marked numbers;
this checks every saved output, charts included."""

import subprocess
import sys

import nbformat
import pytest

from tests.browser import ROOT

SCRIPT = ROOT / "scripts" / "refresh_notebooks.py"


def check(*paths) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--check", *map(str, paths)], capture_output=True, text=True, timeout=1200
    )


@pytest.mark.parametrize("saved, verdict", [("2\n", 0), ("3\n", 1)])
def test_check_tells_current_from_stale(tmp_path, saved, verdict):
    cell = nbformat.v4.new_code_cell("print(1 + 1)", outputs=[nbformat.v4.new_output("stream", text=saved)])
    path = tmp_path / "tiny.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[cell]), path)
    result = check(path)
    assert result.returncode == verdict, result.stdout + result.stderr
    assert ("tiny.ipynb cell 0: print(1 + 1)" in result.stdout) == bool(verdict)


def test_prints_flushed_in_several_chunks_are_one_output(tmp_path):
    """A kernel under load may flush a cell's prints in two stream outputs instead of one (it failed CI once):
    the same text either way."""
    chunks = [nbformat.v4.new_output("stream", text=t) for t in ("headline\n", "- a reason\n")]
    cell = nbformat.v4.new_code_cell('print("headline")\nprint("- a reason")', outputs=chunks)
    path = tmp_path / "chunks.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[cell]), path)
    result = check(path)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    "saved, verdict",
    [('<svg width="11"><text x="2">a</text></svg>', 0), ('<svg width="10"><text x="1">b</text></svg>', 1)],
)
def test_charts_are_compared_by_marks_and_text_not_pixels(tmp_path, saved, verdict):
    """The renderer may measure a label a pixel differently from one process to the next: geometry is not compared."""
    source = "display({'image/svg+xml': '<svg width=\"10\"><text x=\"1\">a</text></svg>'}, raw=True)"
    output = nbformat.v4.new_output("display_data", data={"image/svg+xml": saved})
    path = tmp_path / "chart.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source, outputs=[output])]), path)
    result = check(path)
    assert result.returncode == verdict, result.stdout + result.stderr


def test_saved_outputs_are_current():
    result = check()
    assert result.returncode == 0, result.stdout + result.stderr[-2000:]
