"""Accelerator kinds live in data/kinds.csv only: a new kind is rows in the CSVs, no code."""

import shutil

import polars as pl
import pytest

from workbook import catalog
from workbook.charts import training as charts
from workbook.errors import DataError
from workbook.model.spec import ModelSpec
from workbook.training import options, recommend
from workbook.training.scenario import Scenario


def _copy(tmp_path):
    data = tmp_path / "data"
    shutil.copytree(catalog.DATA_DIR, data)
    return data


def _append(path, line):
    with path.open("a", encoding="utf-8") as f:
        f.write(line + "\n")


def test_shipped_kinds_cover_every_accelerator_with_a_source():
    cat = catalog.load()
    assert cat.kinds.height >= 3
    assert set(cat.accelerators["kind"]) <= set(cat.kinds["kind"])
    assert cat.kinds["source"].str.len_chars().min() > 40  # each names its native stack


def test_a_new_kind_needs_only_csv_rows(tmp_path):
    data = _copy(tmp_path)
    _append(data / "kinds.csv", 'npu,NPU,pytorch,#9467bd,"test kind",2026-11-22')
    for framework, support in (("pytorch", "native"), ("jax", "supported"), ("tensorflow", "unsupported")):
        efficiency = {"native": 1.0, "supported": 0.8, "unsupported": 0}[support]
        _append(
            data / "frameworks.csv",
            f"{framework},npu,{support},{efficiency},{efficiency},{efficiency},1,0,2,test row,2026-11-22",
        )
    h100 = next(line for line in (data / "accelerators.csv").read_text().splitlines() if line.startswith("h100-sxm,"))
    _append(
        data / "accelerators.csv", h100.replace("h100-sxm,", "npu-1,", 1).replace(",nvidia,gpu,", ",nvidia,npu,", 1)
    )
    _append(
        data / "prices.csv", "npu-1,mycloud,any,npu-node,on-demand,1.0,8,test,false,,2026-11-01,false,false,test price,"
    )
    cat = catalog.load(data)
    s = Scenario(model=ModelSpec.from_params(7e9), tokens=1.4e11, days=30, pricing=("on-demand",), framework="jax")
    frame = options.evaluate(s, cat)
    npu = frame.filter(pl.col("accelerator_id") == "npu-1")
    assert npu.height == 1 and npu["feasible"].item() and npu["kind_label"].item() == "NPU"
    h100 = frame.filter(pl.col("accelerator_id") == "h100-sxm", pl.col("cloud") == "aws").row(0, named=True)
    # Same chip, cheaper price: it wins, and the text names its kind from the table.
    rec = recommend.recommend(frame.filter(pl.col("accelerator_id").is_in(["npu-1", "h100-sxm"])), "jax")
    assert rec.best["accelerator_id"] == "npu-1" and h100["kind_label"] == "GPU"
    assert any("NPU" in reason for reason in rec.reasons), "\n".join(rec.reasons)


def test_chart_colours_come_from_the_palette_table():
    """One colour per chart family (vendor and kind), from data/palette.csv, for every shipped accelerator."""
    text = str(charts.cost_template().to_dict())
    palette = catalog.shipped_palette()
    assert palette.height >= 4 and palette["color"].n_unique() == palette.height
    for row in palette.iter_rows(named=True):
        assert row["color"] in text and row["label"] in text
    families = set(palette.select("vendor", "kind").iter_rows())
    assert set(catalog.load().accelerators.select("vendor", "kind").iter_rows()) <= families


@pytest.mark.parametrize(
    "table, line, match",
    [
        ("accelerators.csv", "h100-sxm,", "column kind: unknown kind 'npu'"),
        ("frameworks.csv", "pytorch,gpu,", "no row for framework 'pytorch' on kind 'gpu'"),
        ("kinds.csv", "gpu,", "jax on gpu must have support 'native'"),
    ],
)
def test_kind_tables_disagreeing_are_reported(tmp_path, table, line, match):
    data = _copy(tmp_path)
    path = data / table
    lines = path.read_text().splitlines()
    index = next(i for i, text in enumerate(lines) if text.startswith(line))
    if table == "accelerators.csv":
        lines[index] = lines[index].replace(",nvidia,gpu,", ",nvidia,npu,", 1)
    elif table == "frameworks.csv":
        del lines[index]
    else:
        lines[index] = lines[index].replace(",pytorch,", ",jax,", 1)  # jax on gpu is first-class, not native
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=match):
        catalog.load(data)


def test_a_new_kinds_chips_are_drawn_in_its_chart_colour_without_a_palette_row(tmp_path, monkeypatch):
    from workbook.catalog import loading

    data = _copy(tmp_path)
    h100 = next(line for line in (data / "accelerators.csv").read_text().splitlines() if line.startswith("h100-sxm,"))
    _append(data / "accelerators.csv", h100.replace("h100-sxm,", "npu-1,", 1).replace(",nvidia,gpu,", ",intel,npu,", 1))
    monkeypatch.setattr(loading, "DATA_DIR", data)
    for colour, outcome in (("", "needs a chart_color"), ("#4c78a8", "repeats a colour"), ("#9467bd", None)):
        _append(data / "kinds.csv", f'npu,NPU,pytorch,{colour},"test kind",2026-11-22')
        loading.shipped_palette.cache_clear()
        try:
            if outcome:
                with pytest.raises(DataError, match=outcome):
                    loading.shipped_palette()
            else:
                row = loading.shipped_palette().filter(pl.col("kind") == "npu").row(0, named=True)
                assert (row["vendor"], row["label"], row["color"]) == ("intel", "Intel NPU", "#9467bd")
        finally:
            loading.shipped_palette.cache_clear()
        (data / "kinds.csv").write_text("".join((data / "kinds.csv").read_text().splitlines(True)[:-1]))
