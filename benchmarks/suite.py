"""How long ``make test-fast`` takes (reported, never asserted): ``.venv/bin/python benchmarks/suite.py``.

Prints the wall time, the CPU time of pytest and its workers (user + system: on a shared machine compare this,
not the wall time) and the slowest tests. ``--cold`` starts from an empty cache (``WORKBOOK_CACHE_DIR``): every
table validated and both calibrations fitted once, as on a fresh clone.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SLOWEST = 15


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cold", action="store_true", help="start from an empty on-disk cache")
    args = parser.parse_args()
    env = {**os.environ, "PYTEST_ADDOPTS": f"--durations={SLOWEST} -p no:cacheprovider"}
    with tempfile.TemporaryDirectory() as empty:
        if args.cold:
            env["WORKBOOK_CACHE_DIR"] = empty
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        run = subprocess.run(
            ["make", "--no-print-directory", "test-fast"], cwd=ROOT, env=env, capture_output=True, text=True
        )
        wall_s = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    durations = re.findall(r"^\s*[\d.]+s (?:call|setup|teardown)\s+\S+$", run.stdout, re.MULTILINE)
    summary = [line for line in run.stdout.splitlines() if re.search(r"\d+ passed", line)]
    print(f"make test-fast: exit {run.returncode}; {wall_s:.1f} s wall, {cpu_s:.1f} s CPU (user + system)")
    print(*summary, f"{SLOWEST} slowest:", *(line.strip() for line in durations), sep="\n")


if __name__ == "__main__":
    main()
