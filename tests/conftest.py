"""Layer markers: tests under ``tests/e2e`` start a Voila server (``e2e``); notebook cells run by nbval are
``notebook``; tests that drive Chromium carry ``browser``, multi-second end-to-end checks ``slow``, themselves.
``make test-fast`` skips all four."""

import subprocess
from pathlib import Path

import pytest

E2E = Path(__file__).parent / "e2e"


def pytest_collection_modifyitems(items):
    for item in items:
        path = Path(str(item.path))
        if path.suffix == ".ipynb":
            item.add_marker(pytest.mark.notebook)
        elif E2E in path.parents:
            item.add_marker(pytest.mark.e2e)


@pytest.fixture
def cli(capsys):
    """Run ``python -m workbook ARGS`` in this process (no interpreter start-up per call): returncode, stdout,
    stderr. ``tests/cli/test_cli.py::test_module_entry_point`` checks the real subprocess once."""
    from workbook import cli as cli_mod

    def run(*args):
        try:
            code = cli_mod.main([str(a) for a in args])
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 2
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(list(args), code, out, err)

    return run
