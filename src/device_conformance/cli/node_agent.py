"""`device-conformance node-agent`: the node agent of existing clusters (providers/agent/).

`image` builds its image (no registry) and says how to put it on the nodes; `cleanup` deletes the agent
namespaces a session killed before its teardown left on a cluster.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "node-agent",
        help="the privileged node agent --allow-node-disruption deploys on existing clusters: image, cleanup",
    )
    verbs = p.add_subparsers(dest="node_agent_verb", required=True)
    image = verbs.add_parser("image", help="build the agent's image (OCI tarball) and print how to load it")
    image.set_defaults(func=_image)
    cleanup = verbs.add_parser("cleanup", help="delete every node agent namespace on the cluster (crashed sessions)")
    cleanup.add_argument("--kubeconfig", required=True, type=Path, help="kubeconfig of the cluster")
    cleanup.set_defaults(func=_cleanup)


def _image(args: argparse.Namespace) -> int:
    from device_conformance.providers.agent.image import agent_image
    from device_conformance.providers.existing import load_hint
    from device_conformance.toolchain.cache import cache_root

    built = agent_image(cache_root() / "images" / "node-agent")
    print(f"image:   {built.name}")
    print(f"tarball: {built.tarball}")
    print(f"to use it: {load_hint(built.name, built.tarball)}")
    return 0


def _cleanup(args: argparse.Namespace) -> int:
    from device_conformance.kube.client import Kube
    from device_conformance.providers.agent.deploy import cleanup

    kube = Kube.from_kubeconfig(args.kubeconfig)
    try:
        deleted = cleanup(kube)
    finally:
        kube.close()
    print(f"deleted {len(deleted)} node agent namespace(s){': ' + ', '.join(deleted) if deleted else ''}")
    return 0
