"""Collect the suites in a pytest subprocess and read what each test declares (--declared-json).

A subprocess, not pytest.main() here: the suites' conftest files and our plugin load as in a real run,
nothing stays imported in the caller, and the unit test that checks docs/scenarios.md can run it from
inside pytest.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from device_conformance.cli.scenarios.table import DeclaredTest
from device_conformance.core.errors import BadInput, ConformanceError

COLLECT_TIMEOUT = 300  # seconds; collecting every suite takes about one here
NO_TESTS_COLLECTED = 5  # pytest.ExitCode.NO_TESTS_COLLECTED: an empty folder is no error here


class CollectionFailed(ConformanceError):
    """pytest could not collect the suites (a broken module, a marker the plugin refuses, ...)."""


def default_suites() -> Path:
    """The suites this package carries (a wheel) or its checkout's (`make venv` installs it editable)."""
    from device_conformance.cli.e2e import suites_dir

    return suites_dir()


def collect(suites: Path) -> tuple[DeclaredTest, ...]:
    """Every test under `suites` with what its markers declare; raises CollectionFailed with pytest's words."""
    suites = suites.resolve()  # pytest runs in its parent
    if not suites.is_dir():
        raise BadInput(
            f"no suites folder at {suites}",
            "pass --suites DIR (the suites/ folder of a device-conformance checkout or installation)",
        )
    with tempfile.TemporaryDirectory(prefix="dc-scenarios-") as scratch:
        report = Path(scratch) / "declared.json"
        argv = [
            sys.executable,
            "-m",
            "pytest",
            str(suites),
            "--collect-only",
            "-q",
            "--no-header",
            "-p",
            "no:cacheprovider",
            # Every test, also those a run leaves out unless asked for (pytest_plugin/opt_in.py).
            "-p",
            "no:device_conformance.pytest_plugin.opt_in",
            f"--declared-json={report}",
        ]
        # PYTEST_ADDOPTS could deselect tests (-m, -k) or start xdist (-n): the table is of every test.
        env = {name: value for name, value in os.environ.items() if name != "PYTEST_ADDOPTS"}
        try:
            done = subprocess.run(
                argv, cwd=suites.parent, env=env, capture_output=True, text=True, timeout=COLLECT_TIMEOUT
            )
        except subprocess.TimeoutExpired:
            raise CollectionFailed(f"collecting {suites} took over {COLLECT_TIMEOUT}s; pytest did not finish") from None
        if done.returncode not in (0, NO_TESTS_COLLECTED) or not report.exists():
            raise CollectionFailed(_failure(suites, done))
        return tuple(_declared(entry) for entry in json.loads(report.read_text(encoding="utf-8"))["tests"])


def _declared(entry: dict) -> DeclaredTest:
    return DeclaredTest(
        nodeid=entry["nodeid"],
        scenarios=tuple(entry["scenarios"]),
        since=tuple(minimum["version"] for minimum in entry["since"]),
        known_bugs=tuple(entry["known_bugs"]),
    )


def _failure(suites: Path, done: subprocess.CompletedProcess) -> str:
    output = (done.stdout + done.stderr).strip().splitlines()
    # pytest's own account: the ERRORS section and the summary, which name the module and the fix.
    start = next((i for i, line in enumerate(output) if "ERRORS" in line and line.startswith("=")), None)
    shown = output[start:] if start is not None else output[-30:]
    return (
        f"collecting the suites in {suites} failed (pytest exit {done.returncode}):\n"
        + "\n".join(f"  {line}" for line in shown[-60:])
        + f"\n  fix what pytest names above; to see it all: pytest {suites} --collect-only"
    )
