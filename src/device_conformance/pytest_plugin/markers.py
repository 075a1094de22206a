"""The one marker registry: CI and users select suites with these names (`-m "deviceplugin and not slow"`).

The last three are declarative: pytest_plugin/declarative_markers.py checks and records them at
collection and applies their version-dependent effect at test setup.
"""

MARKERS = {
    "smoke": "seconds-long proof of the chain: cluster up, pods run, kubelet restarts",
    "deviceplugin": "device plugin manager: registration, health, Allocate, grace period",
    "dra": "DRA manager: NodePrepareResources / NodeUnprepareResources, dra_manager_state",
    "taints": "device-taint eviction controller",
    "checkpoint": "reads, forges or corrupts the kubelet's checkpoint files",
    "slow": "waits of minutes (e.g. the 5-minute endpoint stop grace period)",
    "disruptive": "restarts or stops the kubelet, or touches its files; needs the node alone",
    "vendor_blackbox": "vendor_blackbox('device-plugin' and/or 'dra-driver'): a black-box test that runs against a "
    "vendor's subject of that kind in vendor mode (--vendor-device-plugin / --vendor-dra-driver), against our fake "
    "otherwise; in vendor mode every other test is NOT APPLICABLE",
    "vendor_patterns": "nested vendor-mode runs with our fakes as the subject: their real-world patterns pass every "
    "black-box test, their defects fail exactly the tests named for them (suites/vendor_mode)",
    "nodes": "nodes(N): the test needs N nodes with node access that take its pods (kind: --kind-profile "
    "two-nodes); it skips on fewer, naming the count (checked in fixtures/nodes.py)",
    "overlapping": "overlapping('first', 'second', ...) on a module: its scenario fixtures (module-scoped, one per "
    "scenario) that start together before its first test, in that order, so their watch windows overlap "
    "(pytest_plugin/overlapping.py)",
    # Harness tests (tests/), deselect with -m "not docker and not kind":
    "docker": "harness test that needs a Docker engine (a private dockerd is started when none runs)",
    "kind": "harness test that needs the kind CLI (and Go for kind's config loader)",
    # Declarative (see the module docstring):
    "scenario": "scenario('DP6', ...): the upstream catalogue scenarios the test covers (DP, DM, DF, DRA IDs or a "
    "section such as '§2.6'); select one with -m \"scenario(id='DP6')\" or -k DP6",
    "since": "since('1.35'[, reason]): the test needs that Kubernetes version; it skips on older ones, naming it",
    "known_bug": "known_bug(BUG): the test shows BUG, a KnownBug from device_conformance.expectations; on the "
    "versions it affects the test is a strict xfail naming the issue and its fix",
}
