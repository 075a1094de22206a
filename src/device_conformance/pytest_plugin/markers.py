"""The one marker registry (names other tools rely on: CI's and users' -m expressions)."""

MARKERS = {
    "smoke": "seconds-long proof of the chain: cluster up, pods run, kubelet restarts",
    "deviceplugin": "device plugin manager: registration, health, Allocate, grace period",
    "dra": "DRA manager: NodePrepareResources / NodeUnprepareResources, dra_manager_state",
    "taints": "device-taint eviction controller",
    "checkpoint": "reads, forges or corrupts the kubelet's checkpoint files",
    "slow": "waits of minutes (e.g. the 5-minute endpoint stop grace period)",
    "disruptive": "restarts or stops the kubelet, or touches its files; needs the node alone",
    # Harness tests (tests/), deselect with -m "not docker and not kind":
    "docker": "harness test that needs a Docker engine (a private dockerd is started when none runs)",
    "kind": "harness test that needs the kind CLI (and Go for kind's config loader)",
}
