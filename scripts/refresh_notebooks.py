"""Re-execute the checked notebooks and store their outputs without widget state: `make notebooks`.

Run after a change to data, formulas or charts moves a saved output; review the diff before committing.
``--check`` executes them into a scratch folder instead and exits 1, naming the cells, when a saved output differs
from a fresh one (tests/e2e/test_notebooks.py runs it): the saved outputs are what GitHub shows and what nbval
compares, so they must be current. Outputs are compared after the same sanitizing as nbval
(tests/nbval_sanitize.cfg); widget views (random model ids) and cells marked NBVAL_IGNORE_OUTPUT are skipped. A chart's
SVG is compared by its marks and text, not its geometry: the renderer measures the same legend label a pixel wider or
narrower from one process to the next (vl-convert, explore.ipynb's frontier: 497 vs 498 px), and a changed value still
shows in the chart's text (ticks, labels) and marks.
"""

import argparse
import configparser
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
CHECKED = ["notebooks/explore.ipynb", "notebooks/validation.ipynb", "notebooks/claims.ipynb"]
SANITIZE = ROOT / "tests" / "nbval_sanitize.cfg"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
SVG = "image/svg+xml"
SVG_GEOMETRY = re.compile(r'\b(d|width|height|viewBox|transform|x|y|dx|dy|x1|x2|y1|y2|cx|cy|r)="[^"]*"')


def execute(path: Path, out_dir: Path) -> Path:
    """Run every cell of ``path`` in a fresh kernel (working directory: the notebook's folder); the executed copy
    in ``out_dir``, without widget state (megabytes nbval and readers do not need)."""
    nbconvert = [sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute"]
    options = ["--output-dir", str(out_dir), "--ExecutePreprocessor.timeout=600", str(path)]
    run = subprocess.run(nbconvert + options, capture_output=True, text=True)
    if run.returncode:
        raise SystemExit(f"{path} failed to execute:\n{run.stderr[-3000:]}")
    executed = out_dir / path.name
    notebook = nbformat.read(executed, as_version=4)
    notebook.metadata.pop("widgets", None)
    nbformat.write(notebook, executed)
    return executed


def _patterns() -> list[tuple[re.Pattern, str]]:
    config = configparser.ConfigParser()
    config.read(SANITIZE)
    return [(re.compile(config[s]["regex"]), config[s]["replace"]) for s in config.sections()]


def outputs(path: Path) -> list[tuple[str, list]]:
    """(first source line, sanitized outputs) per code cell whose output is compared."""
    patterns = _patterns()

    def clean(text) -> str:
        text = "".join(text) if isinstance(text, list) else str(text)
        for pattern, replacement in patterns:
            text = pattern.sub(replacement, text)
        return text

    cells = []
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type != "code":
            continue
        compared = []
        if "NBVAL_IGNORE_OUTPUT" not in cell.source:
            for out in cell.outputs:
                if out.output_type == "stream":
                    # a kernel flushes a cell's prints in one chunk or several, as timing falls (as nbval does,
                    # consecutive chunks of one stream are one output)
                    text = clean(out.text)
                    if compared and isinstance(compared[-1], tuple) and compared[-1][0] == out.name:
                        compared[-1] = (out.name, compared[-1][1] + text)
                    else:
                        compared.append((out.name, text))
                elif out.output_type == "error":
                    compared.append(("error", out.ename, out.evalue))
                else:
                    data = {k: clean(v) for k, v in sorted(out.get("data", {}).items()) if k != WIDGET_VIEW}
                    if SVG in data:
                        data[SVG] = SVG_GEOMETRY.sub(r'\1=""', data[SVG])
                    compared.append(data)
        cells.append((cell.source.split("\n", 1)[0][:80], compared))
    return cells


def stale_cells(saved: Path, fresh: Path) -> list[str]:
    """The cells whose saved outputs differ from a fresh run's, by number and first line."""
    old, new = outputs(saved), outputs(fresh)
    if len(old) != len(new):
        return [f"{saved.name}: {len(old)} code cells saved, {len(new)} executed"]
    return [
        f"{saved.name} cell {i}: {head}" for i, ((head, a), (_, b)) in enumerate(zip(old, new, strict=True)) if a != b
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="report stale saved outputs instead of refreshing")
    parser.add_argument("notebooks", nargs="*", type=Path, default=[ROOT / name for name in CHECKED])
    args = parser.parse_args(argv)
    stale = []
    for path in args.notebooks:
        with tempfile.TemporaryDirectory() as scratch:
            fresh = execute(path, Path(scratch))
            if args.check:
                stale += stale_cells(path, fresh)
            else:
                path.write_bytes(fresh.read_bytes())
                print(f"refreshed {path}")
    if stale:
        print("saved outputs are stale (run `make notebooks`, review the diff, commit):", *stale, sep="\n  ")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
