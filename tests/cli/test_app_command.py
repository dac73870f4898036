"""``workbook --version``, the program name in usage lines, and ``workbook app``'s flags and Voila command."""

import importlib.util
import json
from pathlib import Path

import pytest

import workbook
from workbook import launch
from workbook.errors import InputError


def test_version(cli):
    out = cli("--version")
    assert out.returncode == 0 and out.stdout.strip() == f"workbook {workbook.__version__}"


def test_usage_names_the_program(cli):
    out = cli("--help")
    assert out.returncode == 0 and out.stdout.startswith("usage: workbook ")
    assert "app" in out.stdout


@pytest.mark.parametrize(
    "args, flag",
    [
        (["--port", "0"], "--port"),
        (["--port", "70000"], "--port"),
        (["--port", "x"], "--port"),
        (["--base-url", "services"], "--base-url"),
    ],
)
def test_bad_app_flags_exit_2_naming_the_flag(cli, args, flag):
    out = cli("app", *args)
    assert out.returncode == 2 and flag in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_voila_command_uses_the_shipped_config_and_notebook():
    command, cwd = launch.voila_command(9999, "127.0.0.1", "/services/workbook/")
    config = json.loads((Path(cwd) / "voila.json").read_text())
    assert config["VoilaConfiguration"]["template"] == "workbook"
    assert (Path(cwd) / command[3]).name == "app.ipynb" and (Path(cwd) / command[3]).is_file()
    assert command[1:3] == ["-m", "voila"]
    assert {"--port=9999", "--Voila.ip=127.0.0.1", "--Voila.base_url=/services/workbook/"} <= set(command)


def test_app_without_voila_says_which_extra(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None if name == "voila" else real(name))
    with pytest.raises(InputError) as err:
        launch.voila_command(9999, "127.0.0.1", "/")
    assert "accelerator-workbook[app]" in str(err.value)
