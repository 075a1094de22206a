"""The `device-conformance` console script. Each verb lives in its own module with a register()."""

from __future__ import annotations

import argparse
import importlib
import sys

from device_conformance.core.errors import ConformanceError

# Each module defines register(subparsers) and sets a `func(args) -> int` default on its parsers.
VERB_MODULES = [
    "device_conformance.cli.setup",
    "device_conformance.cli.cluster",
    "device_conformance.cli.checkpoint",
    "device_conformance.cli.kind",
    "device_conformance.cli.scenarios",
    "device_conformance.cli.k8s_source",
    "device_conformance.cli.bugs",
    "device_conformance.cli.matrix",
    "device_conformance.cli.versions",
    "device_conformance.cli.reproduce",
    "device_conformance.cli.bisect",
    "device_conformance.cli.certify",
    "device_conformance.cli.node_agent",
    "device_conformance.cli.docs",
    "device_conformance.cli.e2e",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="device-conformance",
        description="Conformance suite for the kubelet's device management: clusters, fakes, checkpoints.",
    )
    subparsers = parser.add_subparsers(dest="verb", required=True)
    for name in VERB_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    # A verb that passes other arguments on (e2e: to pytest) takes what the parser does not know, in order.
    args, unknown = parser.parse_known_args(argv)
    if unknown and not getattr(args, "passes_unknown_arguments", False):
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if unknown:
        args.pytest_args = [*args.pytest_args, *unknown]
    try:
        return int(args.func(args) or 0)
    except ConformanceError as exc:
        print(f"device-conformance: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
