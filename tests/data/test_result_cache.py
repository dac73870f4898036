"""The training and serving calibrations are fitted once per table content and code version, then read back from
memory or disk equal to a fresh fit; a changed table or changed code fits again (nothing stale is returned)."""

import dataclasses
from unittest import mock

import polars as pl
import pytest

from workbook import cache, catalog
from workbook.serving import calibration as serving_calibration
from workbook.training import calibration

FITS = [calibration.fit, serving_calibration.calibrate]


@pytest.fixture
def fits(monkeypatch, tmp_path):
    """An empty cache (memory and disk); a spy on the first step of the training fit (called once per real fit)."""
    monkeypatch.setenv("WORKBOOK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(cache, "_RESULTS", {})
    spy = mock.Mock(wraps=calibration.benchmark_points)
    monkeypatch.setattr(calibration, "benchmark_points", spy)
    return spy


def _same(a, b) -> None:
    """Equal field by field (frames in any row order: the serving stack table comes from an unordered group-by)."""
    for field in dataclasses.fields(a):
        x, y = getattr(a, field.name), getattr(b, field.name)
        if isinstance(x, pl.DataFrame):
            assert x.height > 0 and x.schema == y.schema, field.name
            assert x.sort(pl.all()).equals(y.sort(pl.all())), field.name
        else:
            assert x == y, field.name


@pytest.mark.parametrize("fit", FITS, ids=["training", "serving"])
def test_cached_fit_equals_a_fresh_one_from_memory_and_from_disk(fits, monkeypatch, fit):
    cat = catalog.load()
    first = fit(cat)  # the cache is empty: a fresh fit
    assert fit(dataclasses.replace(cat)) is first, "the same tables in a new catalog object must not fit again"
    monkeypatch.setattr(cache, "_RESULTS", {})  # a new process: only the disk is left
    from_disk = fit(dataclasses.replace(cat))
    assert from_disk is not first
    _same(from_disk, first)


def test_a_changed_table_or_changed_code_fits_again(fits, monkeypatch):
    cat = catalog.load()
    base = calibration.fit(cat)
    calibration.fit(cat)
    assert fits.call_count == 1
    fewer = dataclasses.replace(cat, reference_runs=cat.reference_runs.slice(1))
    assert calibration.fit(fewer) is not base and fits.call_count == 2
    monkeypatch.setattr(cache, "_RESULTS", {})
    monkeypatch.setattr(cache, "code_version", lambda: "another-version")
    calibration.fit(cat)
    assert fits.call_count == 3 and fits.call_args.args == (cat,)


def test_an_unreadable_entry_is_fitted_again(fits, monkeypatch, tmp_path):
    cat = catalog.load()
    base = calibration.fit(cat)
    entries = list((tmp_path / "cache" / "results").glob("training-calibration-*.arrow"))
    assert len(entries) == sum(isinstance(getattr(base, f.name), pl.DataFrame) for f in dataclasses.fields(base))
    for entry in entries:
        entry.write_bytes(b"not arrow")
    monkeypatch.setattr(cache, "_RESULTS", {})
    _same(calibration.fit(cat), base)
    assert fits.call_count == 2


def test_a_catalog_read_back_from_the_tables_cache_finds_the_fits_of_the_freshly_validated_one(fits, monkeypatch):
    """A new process reads validated tables from disk: their Arrow buffers differ from freshly validated frames
    (a Boolean column's spare bits), and the fits must still be found, not fitted again."""
    from workbook.catalog import loading

    monkeypatch.setattr(loading, "_VALIDATED", {})
    monkeypatch.setattr(loading, "_LOADED", {})
    fresh = catalog.load()
    calibration.fit(fresh)
    monkeypatch.setattr(loading, "_VALIDATED", {})
    monkeypatch.setattr(loading, "_LOADED", {})
    monkeypatch.setattr(cache, "_RESULTS", {})
    read_back = catalog.load()
    assert read_back is not fresh
    assert cache.content_digest(read_back) == cache.content_digest(fresh)
    calibration.fit(read_back)
    assert fits.call_count == 1
