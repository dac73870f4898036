"""Re-execute the checked notebooks and store their outputs without widget state: `make notebooks`.

Run after a change to data or formulas moves a checked number; review the diff before committing.
"""

import subprocess
import sys
from pathlib import Path

import nbformat

CHECKED = ["notebooks/explore.ipynb", "notebooks/validation.ipynb", "notebooks/claims.ipynb"]


def main() -> None:
    root = Path(__file__).resolve().parent.parent
    for name in CHECKED:
        path = root / name
        if not path.exists():
            continue
        subprocess.run(
            [sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute", "--inplace", str(path)],
            check=True,
        )
        notebook = nbformat.read(path, as_version=4)
        notebook.metadata.pop("widgets", None)  # megabytes of widget state nbval does not need
        nbformat.write(notebook, path)
        print(f"refreshed {name}")


if __name__ == "__main__":
    main()
