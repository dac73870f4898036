"""Shared serving fixtures: the shipped catalog and its serving calibration, loaded once per session."""

import pytest

from workbook import catalog
from workbook.serving import validation
from workbook.serving.calibration import calibrate


@pytest.fixture(scope="session")
def cat():
    return catalog.load()


@pytest.fixture(scope="session")
def eff(cat):
    return calibrate(cat)


@pytest.fixture(scope="session")
def validated(cat):
    """Every published result against the model's prediction, held out (:func:`validation.validate`)."""
    return validation.validate(cat)
