"""Where the tables come from: the argument, else $WORKBOOK_DATA_DIR, else the shipped tables; a wrong directory is
one line naming the argument or the variable."""

import shutil

import polars as pl
import pytest

from workbook import catalog
from workbook.catalog import loading
from workbook.errors import InputError


@pytest.fixture
def own_tables(tmp_path):
    """A copy of the shipped tables with one chip renamed, so the test can tell which directory was read."""
    own = tmp_path / "tables"
    shutil.copytree(catalog.DATA_DIR, own)
    frame = pl.read_csv(own / "accelerators.csv", infer_schema=False)
    frame.with_columns(
        pl.when(pl.col("accelerator_id") == "h100-sxm").then(pl.lit("Our H100")).otherwise("name").alias("name")
    ).write_csv(own / "accelerators.csv")
    return own


def _h100_name(cat):
    return cat.accelerators.filter(pl.col("accelerator_id") == "h100-sxm")["name"].item()


def test_shipped_tables_by_default(monkeypatch):
    monkeypatch.delenv(loading.DATA_DIR_ENV, raising=False)
    assert (catalog.DATA_DIR / "accelerators.csv").is_file()
    assert loading.data_root() == catalog.DATA_DIR
    assert _h100_name(catalog.load()) != "Our H100"


def test_environment_variable_points_at_own_tables(monkeypatch, own_tables):
    monkeypatch.setenv(loading.DATA_DIR_ENV, str(own_tables))
    assert _h100_name(catalog.load()) == "Our H100"


def test_argument_wins_over_environment_variable(monkeypatch, own_tables, tmp_path):
    monkeypatch.setenv(loading.DATA_DIR_ENV, str(tmp_path / "missing"))
    assert _h100_name(catalog.load(data_dir=own_tables)) == "Our H100"


@pytest.mark.parametrize("via_env", [True, False])
def test_wrong_directory_names_its_source(monkeypatch, tmp_path, via_env):
    monkeypatch.delenv(loading.DATA_DIR_ENV, raising=False)
    if via_env:
        monkeypatch.setenv(loading.DATA_DIR_ENV, str(tmp_path))
    with pytest.raises(InputError) as err:
        catalog.load() if via_env else catalog.load(data_dir=tmp_path)
    assert err.value.field == ("WORKBOOK_DATA_DIR" if via_env else "data_dir")
    assert str(tmp_path) in str(err.value) and "\n" not in str(err.value)
