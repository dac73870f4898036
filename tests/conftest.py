"""Layer markers: tests under ``tests/e2e`` start a Voila server (``e2e``); notebook cells run by nbval are
``notebook``; tests that drive Chromium carry ``browser`` themselves. ``make test-fast`` skips all three."""

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
