"""Write suites/durations.json, the measured time of each suite test that `--dist loadgroup` orders modules by
(src/device_conformance/core/suite_durations.py), from the JUnit XML of whole runs: the median over the runs.

    .venv/bin/python bench/durations.py bench/results/soak-<time>/run-*.xml
    make durations                    # from the newest soak's runs (make soak first)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from device_conformance.core import suite_durations

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).parent / "results"


def newest_soak_runs() -> list[Path]:
    soaks = sorted(p for p in RESULTS.glob("soak-*") if p.is_dir() and any(p.glob("run-*.xml")))
    return sorted(soaks[-1].glob("run-*.xml")) if soaks else []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("junit", nargs="*", type=Path, help="JUnit XML files of whole runs (default: newest soak)")
    args = parser.parse_args(argv)
    files = args.junit or newest_soak_runs()
    if not files:
        print(f"durations: no JUnit files given and no soak runs in {RESULTS}; run `make soak` first", file=sys.stderr)
        return 2
    durations = suite_durations.median_of_runs(suite_durations.from_junit(path) for path in files)
    out = ROOT / suite_durations.DURATIONS_FILE
    out.write_text(json.dumps(durations, indent=1) + "\n")
    print(f"durations: {len(durations)} tests, the median of {len(files)} runs -> {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
