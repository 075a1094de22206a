"""`device-conformance checkpoint verify|show|forge`: the kubelet's device state files by hand.

Works on ``kubelet_internal_checkpoint`` (device manager), ``dra_manager_state`` (DRA) and
``dra_health_state`` (the DRA health-info cache, no checksum), told apart by content. Exit codes: 0 the kubelet
would accept the file, 1 it would not, 2 bad input (raised as BadInput, printed by cli.main). One module per verb;
files.py is what they share.
"""

from __future__ import annotations

import argparse

from device_conformance.cli.checkpoint import forge, show, verify


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "checkpoint",
        help="verify, show or forge the kubelet's device checkpoints",
        description="Read and write kubelet_internal_checkpoint, dra_manager_state and dra_health_state exactly as the "
        "kubelet does.",
    )
    verbs = p.add_subparsers(dest="checkpoint_verb", required=True, metavar="VERB")
    verify.add_parser(verbs)
    show.add_parser(verbs)
    forge.add_parser(verbs)
