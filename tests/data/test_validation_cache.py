"""Each data file is schema-checked once per content: unchanged files are read back validated, changed ones are
checked again (the cache can never let a bad file through)."""

import shutil

import polars as pl
import pytest

from workbook import catalog
from workbook.catalog import loading
from workbook.errors import DataError

TABLES = len(catalog.Catalog.__dataclass_fields__)  # one table per Catalog field, each read by catalog.load()


@pytest.fixture
def checks(monkeypatch, tmp_path):
    """A fresh, empty cache (memory and disk) and a list of the tables pandera validated."""
    monkeypatch.setenv("WORKBOOK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(loading, "_VALIDATED", {})
    monkeypatch.setattr(loading, "_LOADED", {})
    seen = []
    real = loading._check

    def counting(frame, model, label):
        seen.append(model.__name__)
        return real(frame, model, label)

    monkeypatch.setattr(loading, "_check", counting)
    return seen


def _frames(cat):
    return {f.name: getattr(cat, f.name) for f in catalog.Catalog.__dataclass_fields__.values()}


def test_unchanged_files_are_validated_once_then_read_back_equal(checks, tmp_path, monkeypatch):
    first = catalog.load()
    assert len(checks) == TABLES
    assert len(list((tmp_path / "cache" / "tables").glob("*.arrow"))) == TABLES
    second = catalog.load()
    assert len(checks) == TABLES, "an unchanged file must not be validated again"
    assert second is first, "the same files give the same catalog object (what is computed per catalog is reused)"
    for name in ("_VALIDATED", "_LOADED"):  # a new kernel: only the on-disk cache is left
        monkeypatch.setattr(loading, name, {})
    third = catalog.load()
    assert len(checks) == TABLES
    for name, frame in _frames(first).items():
        assert frame.height > 0
        assert frame.schema == _frames(third)[name].schema
        assert frame.equals(_frames(second)[name]) and frame.equals(_frames(third)[name]), name


def test_a_changed_file_is_validated_again(checks, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(catalog.DATA_DIR, data)
    catalog.load(data)
    checks.clear()
    path = data / "frameworks.csv"
    text = path.read_text()
    assert ",supported," in text
    path.write_text(text.replace(",supported,", ",sorta,", 1))
    with pytest.raises(DataError, match="frameworks.csv line"):
        catalog.load(data)
    assert checks == ["Frameworks"]  # the unchanged tables came from the cache
    path.write_text(text)  # back to the shipped content: a cache hit again
    checks.clear()
    catalog.load(data)
    assert checks == []


def test_a_changed_valid_file_is_checked_and_its_new_values_used(checks, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(catalog.DATA_DIR, data)
    before = catalog.load(data).frameworks
    checks.clear()
    path = data / "frameworks.csv"
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))  # same rows, new bytes: a new key, checked again
    catalog.load(data)
    assert checks == ["Frameworks"]
    assert catalog.load(data).frameworks.equals(before)


def test_an_unreadable_cache_entry_is_validated_again(checks, tmp_path, monkeypatch):
    catalog.load()
    for name in ("_VALIDATED", "_LOADED"):
        monkeypatch.setattr(loading, name, {})
    for entry in (tmp_path / "cache" / "tables").glob("*.arrow"):
        entry.write_bytes(b"not arrow")
    checks.clear()
    cat = catalog.load()
    assert len(checks) == TABLES
    assert cat.accelerators.height > 0 and cat.accelerators["as_of"].dtype == pl.Date
