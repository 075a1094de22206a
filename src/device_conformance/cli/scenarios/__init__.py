"""`device-conformance scenarios`: which scenario of the upstream catalogue each test covers.

Collects the suites (collect.py: a pytest subprocess with --declared-json), builds the table (table.py)
and prints it (render.py) as text, Markdown (docs/scenarios.md is this output) or JSON. Exit 0 whatever the
coverage; 2 when the suites cannot be collected (the message is pytest's, with the module to fix).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from device_conformance.cli.scenarios import collect, render, table


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "scenarios",
        help="coverage of the upstream scenario catalogue by the suites' scenario markers",
        description="Every scenario of the upstream catalogue (expectations/scenarios.py) with the tests whose "
        "@pytest.mark.scenario markers name it, or why it is not covered; last line: covered N of M.",
    )
    form = p.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help="print the table as JSON")
    form.add_argument(
        "--markdown",
        action="store_true",
        help=f"print the table as Markdown (what docs/scenarios.md is: {render.REGENERATE})",
    )
    p.add_argument("--suites", type=Path, metavar="DIR", help="the suites to collect (default: the checkout's suites/)")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    coverage = table.build(collect.collect(args.suites or collect.default_suites()))
    shown = render.as_json if args.json else render.markdown if args.markdown else render.text
    sys.stdout.write(shown(coverage))
    return 0
