"""Chart templates are built with altair once and read back from the on-disk cache, identical."""

from workbook.charts import common, serving, training


def test_cached_specs_equal_freshly_built_ones(monkeypatch, tmp_path):
    monkeypatch.setenv("WORKBOOK_CACHE_DIR", str(tmp_path))
    templates = {**training.TEMPLATES, **{f"serve-{k}": v for k, v in serving.TEMPLATES.items()}}
    first = common.template_specs(templates)
    files = list((tmp_path / "specs").glob("*.json"))
    assert len(files) == len(templates) > 0
    fresh = {name: template().to_dict(validate=False) for name, template in templates.items()}
    assert common.template_specs(templates) == first == fresh
    for path in files:  # an unreadable entry is rebuilt, not trusted
        path.write_text("{not json")
    assert common.template_specs(templates) == fresh


def test_a_cached_spec_is_what_the_page_gets(monkeypatch, tmp_path):
    monkeypatch.setenv("WORKBOOK_CACHE_DIR", str(tmp_path))
    common.template_specs({"cost": training.TEMPLATES["cost"]})
    (path,) = (tmp_path / "specs").glob("*.json")
    path.write_text('{"marker": 1}')  # proves the second call reads the file instead of rebuilding
    assert common.template_specs({"cost": training.TEMPLATES["cost"]}) == {"cost": {"marker": 1}}
