"""`device-conformance kind VERB`: the old spelling of `device-conformance cluster VERB --provider kind`, kept for
the scripts and habits that call it; it says the new spelling on stderr (stdout stays the verb's: `kind render >
FILE` still writes only the config) and runs it."""

from __future__ import annotations

import argparse
import sys

from device_conformance.cli.cluster import add_verb_options, run

# old verb -> its verb in the `cluster` tree
RENAMED = {
    "render": "config",
    "list": "list",
    "delete": "down",
    "cleanup": "cleanup",
    "build-node-image": "build-node-image",
}


def register(subparsers: argparse._SubParsersAction) -> None:
    kind = subparsers.add_parser("kind", help="old spelling of `cluster VERB --provider kind` (render is config)")
    verbs = kind.add_subparsers(dest="kind_verb", required=True)
    for old, new in RENAMED.items():
        parser = verbs.add_parser(old, help=f"now `cluster {new} --provider kind`")
        add_verb_options(parser, new, provider_option=False)
        parser.set_defaults(func=_alias, cluster_verb=new, kind_alias=old)


def _alias(args: argparse.Namespace) -> int:
    args.provider = "kind"  # the one provider this spelling ever meant
    print(
        f"device-conformance: `kind {args.kind_alias}` is now `cluster {args.cluster_verb} --provider kind`",
        file=sys.stderr,
    )
    return run(args)
