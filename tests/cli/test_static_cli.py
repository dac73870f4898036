"""``python -m workbook static``: bad flags exit 2 with one line naming the flag (the page itself: tests/e2e)."""

from workbook.cli import main


def test_static_needs_out(capsys):
    assert main(["static"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--out" in err


def test_static_unwritable_folder_names_out(capsys, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    assert main(["static", "--out", str(blocker / "site")]) == 2  # fails before any scenario is computed
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith("error: --out: cannot write into")
