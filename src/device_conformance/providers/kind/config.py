"""Render a kind cluster config: a template from kind-configs/ + the version's settings + per-node mounts.

Feature gates, runtime-config and kubelet settings come from expectations.cluster.settings_for(), the
data the local provider's flags come from; nothing version-dependent is written in the templates.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import resources
from pathlib import Path

import yaml

from device_conformance.core.errors import BadInput
from device_conformance.expectations.cluster import ComponentSettings, settings_for
from device_conformance.expectations.versions import KubeVersion
from device_conformance.providers.kind.layout import KindLayout
from device_conformance.settings import COMPONENTS, DEFAULT_KNOBS, DEFAULT_KUBELET_VERBOSITY, ComponentKnobs

DEFAULT_PROFILE = "single-node"
# Where the host's capability bounding set lacks CAP_SYS_RESOURCE (these VMs; dockerd.py's runc wrapper
# drops it from the nodes), runc in the node cannot lower a pod's oom_score_adj below its own to the
# value the kubelet asks (pkg/kubelet/qos/policy.go: -997 for Guaranteed and node-critical pods), and
# every sandbox fails with "can't get final child's PID from pipe: EOF". containerd's CRI option
# restrict_oom_score_adj (containerd docs/cri/config.md; what kind sets for rootless nodes) clamps the
# score at containerd's own instead.
RESTRICT_OOM_SCORE_ADJ = '[plugins."io.containerd.grpc.v1.cri"]\n  restrict_oom_score_adj = true'


# Our images are named device-conformance.local/... (toolchain/images) and preloaded; tests that need a
# pull to fail use an absent one (suites' ABSENT_IMAGE). In a kind node the registry's name is looked up
# through Docker's embedded DNS, which dockerd 20.10 forwards from the node's network namespace: with the
# private dockerd (no NAT: --ip-masq=false) that waits for DNS timeouts, longer than the tests wait for
# ErrImagePull. A hosts.toml (containerd docs/hosts.md) sends that registry to 127.0.0.1:1, refused at once.
REGISTRY_HOST = "device-conformance.local"
REGISTRY_CONFIG_PATH = "/etc/containerd/certs.d"
REGISTRY_PATCH = f'[plugins."io.containerd.grpc.v1.cri".registry]\n  config_path = "{REGISTRY_CONFIG_PATH}"'
REFUSING_HOSTS_TOML = (
    'server = "http://127.0.0.1:1"\n\n[host."http://127.0.0.1:1"]\n  capabilities = ["pull", "resolve"]\n'
)


def write_registry_config(layout: KindLayout) -> None:
    """The host side of the nodes' /etc/containerd/certs.d."""
    host_dir = layout.registry_dir / REGISTRY_HOST
    host_dir.mkdir(parents=True, exist_ok=True)
    (host_dir / "hosts.toml").write_text(REFUSING_HOSTS_TOML)


def profiles() -> list[str]:
    files = resources.files("device_conformance.kind_configs").iterdir()
    return sorted(f.name.removesuffix(".yaml") for f in files if f.name.endswith(".yaml") and f.name != "base.yaml")


def _template(name: str) -> dict:
    source = resources.files("device_conformance.kind_configs") / f"{name}.yaml"
    if not source.is_file():
        raise BadInput(f"no kind config profile {name!r}", f"choose one of: {', '.join(profiles())}")
    return yaml.safe_load(source.read_text()) or {}


def runtime_config(settings: ComponentSettings) -> dict[str, str]:
    """kind's runtimeConfig map from our `group/version=true` list (the apiserver's --runtime-config)."""
    pairs = (entry.split("=", 1) for entry in settings.runtime_config)
    return {key: value for key, value in pairs}


# What the suites assume of every provider's kubelet. Timeouts (timeouts.NODE_STATUS_UPDATE_FREQUENCY; the
# local provider sets the same in providers/local/configs.py): capacity/allocatable changes posted within a
# second, not in the default 10 s loop. Log verbosity 2 (settings.DEFAULT_KUBELET_VERBOSITY; --kubelet-verbosity
# sets another, kubelet_patch), as the local provider's --v
# (providers/local/components.py): tests read lines the kubelet logs at V(2), e.g. the DRA plugin manager's
# "Connection changed" (pkg/kubelet/cm/dra/plugin/dra_plugin_manager.go, wait/dra.for_kubelet_connection);
# kind's kubelet runs at the default 0 otherwise.
KUBELET_BASE = {
    "nodeStatusUpdateFrequency": "1s",
    "nodeStatusReportFrequency": "1m",
    "logging": {"verbosity": DEFAULT_KUBELET_VERBOSITY},
}


def kubelet_patch(settings: ComponentSettings, knobs: ComponentKnobs = DEFAULT_KNOBS) -> str:
    """An unversioned KubeletConfiguration patch (kind applies it for v1beta3 and v1beta4 alike).

    kubeadm takes the KubeletConfiguration of the first node for every node (kind#3849), so kubelet
    settings are cluster-wide, which is what we want. The user's knobs: the verbosity as logging.verbosity,
    the kubelet's own gates as featureGates (a merge patch: they join the version's gates kind writes from the
    top-level featureGates), the fields of --kubelet-config merged last (maps key by key, as kind merges the
    patch into its own KubeletConfiguration: e.g. evictionHard keeps kind's entries beside the user's)."""
    base: dict[str, object] = {**KUBELET_BASE, "logging": {"verbosity": knobs.kubelet_verbosity}}
    merged = knobs.merged_kubelet_config({**base, **settings.kubelet_config})
    gates = knobs.user_gates("kubelet")
    if gates:
        merged["featureGates"] = gates
    return yaml.safe_dump({"kind": "KubeletConfiguration", **merged}, sort_keys=True)


# kubeadm's ClusterConfiguration key of each control-plane component's settings.
KUBEADM_COMPONENT_KEYS = {
    "kube-apiserver": "apiServer",
    "kube-controller-manager": "controllerManager",
    "kube-scheduler": "scheduler",
}


def control_plane_gates_patch(settings: ComponentSettings, knobs: ComponentKnobs) -> str | None:
    """An unversioned ClusterConfiguration patch giving each control-plane component the user asked gates of
    its whole --feature-gates: the version's (what kind writes there from the top-level featureGates) and the
    user's. Written in v1beta3's map form: kind 0.33 merges extraArgs by name into v1beta4's list
    (pkg/internal/patch/kubeadm_merge.go, mergeExtraArgs) and merge-patches v1beta3's map. None: none asked."""
    patch: dict[str, object] = {}
    for component in COMPONENTS:
        if component == "kubelet" or not knobs.user_gates(component):
            continue
        flag = knobs.gates_flag(component, settings.feature_gates)[0].removeprefix("--feature-gates=")
        patch[KUBEADM_COMPONENT_KEYS[component]] = {"extraArgs": {"feature-gates": flag}}
    if not patch:
        return None
    return yaml.safe_dump({"kind": "ClusterConfiguration", **patch}, sort_keys=True)


def kubelet_args_patches(knobs: ComponentKnobs) -> list[str]:
    """Unversioned InitConfiguration and JoinConfiguration patches (the first node's and the others') adding the
    user's kubelet flags to nodeRegistration.kubeletExtraArgs, beside kind's node-ip, provider-id and
    node-labels (merged by name, as for extraArgs). A flag without a value is given as NAME=true."""
    if not knobs.kubelet_args:
        return []
    args: dict[str, str] = {}
    for arg in knobs.kubelet_args:
        name, eq, value = arg.removeprefix("--").partition("=")
        args[name] = value if eq else "true"
    return [
        yaml.safe_dump({"kind": kind, "nodeRegistration": {"kubeletExtraArgs": args}}, sort_keys=True)
        for kind in ("InitConfiguration", "JoinConfiguration")
    ]


def render(
    version: KubeVersion,
    layout: KindLayout,
    image: str,
    profile: str = DEFAULT_PROFILE,
    *,
    host_lacks: Sequence[str] = (),
    knobs: ComponentKnobs = DEFAULT_KNOBS,
) -> dict:
    """The kind config (as data) for a cluster of `version` laid out under `layout`.

    `host_lacks`: capabilities the host's bounding set lacks (dockerd.host_missing_capabilities()); `knobs`: what
    the user asks of the components (settings.ComponentKnobs), as kubeadm config patches."""
    config = _template("base")
    config["containerdConfigPatches"] = [*config.get("containerdConfigPatches", []), REGISTRY_PATCH]
    if "CAP_SYS_RESOURCE" in host_lacks:
        config["containerdConfigPatches"] = [*config.get("containerdConfigPatches", []), RESTRICT_OOM_SCORE_ADJ]
    nodes = _template(profile).get("nodes") or []
    if not nodes:
        raise BadInput(f"kind config profile {profile!r} has no nodes", "list at least a control-plane node")
    settings = settings_for(version)
    config["name"] = layout.cluster
    if settings.feature_gates:
        config["featureGates"] = dict(sorted(settings.feature_gates.items()))
    if settings.runtime_config:
        config["runtimeConfig"] = runtime_config(settings)
    gates = control_plane_gates_patch(settings, knobs)
    config["kubeadmConfigPatches"] = [
        *config.get("kubeadmConfigPatches", []),
        kubelet_patch(settings, knobs),
        *([gates] if gates else []),
        *kubelet_args_patches(knobs),
    ]
    rendered_nodes = []
    for index, node in enumerate(nodes):
        mounts = [
            {"hostPath": str(host), "containerPath": node_path} for node_path, host in layout.node_mounts(index).items()
        ]
        # Host paths tests hand to the kubelet (Allocate mounts) must exist in the node at the same path.
        mounts.append({"hostPath": str(layout.shared_dir), "containerPath": str(layout.shared_dir)})
        mounts.append({"hostPath": str(layout.registry_dir), "containerPath": REGISTRY_CONFIG_PATH, "readOnly": True})
        rendered_nodes.append({**node, "image": image, "extraMounts": [*node.get("extraMounts", []), *mounts]})
    config["nodes"] = rendered_nodes
    return config


def write(config: dict, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def node_roles(config: dict) -> list[str]:
    return [node["role"] for node in config["nodes"]]
