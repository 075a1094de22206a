"""kind configs: rendered from kind-configs/ + expectations data, then read back by kind's own code."""

from __future__ import annotations

import shutil

import pytest
import yaml

from device_conformance.core.errors import BadInput
from device_conformance.expectations.cluster import settings_for
from device_conformance.expectations.kind import KIND_INSTALL_VERSION
from device_conformance.expectations.versions import KubeVersion
from device_conformance.providers.kind import config
from device_conformance.providers.kind.layout import NODE_MOUNTS, KindLayout, node_suffixes

VERSIONS = ["1.34.3", "1.35.8", "1.36.4", "1.37.1"]


@pytest.fixture
def layout(tmp_path):
    return KindLayout(tmp_path / "dc-abc123-gw0")


def test_every_profile_has_a_control_plane_and_the_cdi_patch(layout):
    assert {"single-node", "two-nodes"} <= set(config.profiles())
    for profile in config.profiles():
        rendered = config.render(KubeVersion.parse("1.37.1"), layout, "img", profile)
        assert config.node_roles(rendered)[0] == "control-plane"
        assert any("enable_cdi = true" in patch for patch in rendered["containerdConfigPatches"])


@pytest.mark.parametrize("version", VERSIONS)
def test_gates_and_runtime_config_are_the_expectations_data(layout, version):
    parsed = KubeVersion.parse(version)
    settings = settings_for(parsed)
    rendered = config.render(parsed, layout, f"kindest/node:v{version}")
    assert rendered.get("featureGates", {}) == settings.feature_gates
    assert [f"{k}={v}" for k, v in rendered.get("runtimeConfig", {}).items()] == settings.runtime_config
    patches = [yaml.safe_load(p) for p in rendered.get("kubeadmConfigPatches", [])]
    kubelet = [p for p in patches if p["kind"] == "KubeletConfiguration"]
    assert kubelet == [{"kind": "KubeletConfiguration", **config.KUBELET_BASE, **settings.kubelet_config}]


def test_each_node_binds_its_own_host_directories(layout):
    rendered = config.render(KubeVersion.parse("1.37.1"), layout, "img", "two-nodes")
    assert node_suffixes(config.node_roles(rendered)) == ["control-plane", "worker"]
    seen = set()
    shared = str(layout.shared_dir)
    for index, node in enumerate(rendered["nodes"]):
        mounts = {m["containerPath"]: m["hostPath"] for m in node["extraMounts"]}
        # The shared directory, at the same path in every node (Allocate mounts name host paths).
        assert mounts.pop(shared) == shared
        assert mounts.pop("/etc/containerd/certs.d") == str(layout.registry_dir)
        assert set(mounts) == set(NODE_MOUNTS)
        assert all(host.startswith(f"{layout.node_dir(index)}/") for host in mounts.values())
        seen |= set(mounts.values())
    assert len(seen) == 2 * len(NODE_MOUNTS)  # no directory shared between nodes but that one


def test_socket_paths_in_the_mounted_directories_fit_sun_path():
    layout = KindLayout.for_cluster("dc-abcdef-gw15")
    longest = max(len(str(p)) for p in layout.node_mounts(0).values())
    assert longest + len("/dc-0123abcd.example.com/dra.sock") < 107


def test_node_names_follow_kinds_namer():
    assert node_suffixes(["control-plane", "worker", "worker", "worker"]) == [
        "control-plane",
        "worker",
        "worker2",
        "worker3",
    ]


def test_unknown_profile_names_the_choices(layout):
    with pytest.raises(BadInput, match="single-node"):
        config.render(KubeVersion.parse("1.37.1"), layout, "img", "no-such-profile")


# -- kind's own loader ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def validator():
    if shutil.which("go") is None:
        pytest.skip("Go is not installed: kind's config loader is built from the kind module with go build")
    from device_conformance.providers.kind.validator import KindValidator

    return KindValidator.build(KIND_INSTALL_VERSION)


def _kubeadm_docs(text):
    return {doc["kind"]: doc for doc in yaml.safe_load_all(text) if doc}


def _extra_args(component):
    args = component.get("extraArgs") or []
    return {a["name"]: a["value"] for a in args} if isinstance(args, list) else dict(args)


@pytest.mark.kind
@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("profile", ["single-node", "two-nodes"])
def test_kind_loads_the_config_and_generates_kubeadm_with_our_settings(validator, layout, version, profile):
    parsed = KubeVersion.parse(version)
    settings = settings_for(parsed)
    path = config.write(config.render(parsed, layout, f"kindest/node:v{version}", profile), layout.config_file)
    view = validator.check(path, parsed.tag)
    assert view.name == layout.cluster
    assert [n.name for n in view.nodes] == [
        f"{layout.cluster}-{s}" for s in node_suffixes(config.node_roles(yaml.safe_load(path.read_text())))
    ]
    gates = ",".join(f"{k}={str(v).lower()}" for k, v in sorted(settings.feature_gates.items()))
    for node in view.nodes:
        docs = _kubeadm_docs(node.kubeadm)
        # kind >= 0.32 writes kubeadm v1beta4 for 1.36+ (kubeadm 1.37 refuses v1beta3).
        expected_api = "kubeadm.k8s.io/v1beta4" if parsed.at_least(36) else "kubeadm.k8s.io/v1beta3"
        assert docs["ClusterConfiguration"]["apiVersion"] == expected_api
        for component in ("apiServer", "controllerManager", "scheduler"):
            args = _extra_args(docs["ClusterConfiguration"][component])
            assert args.get("feature-gates", "") == gates, component
        api_args = _extra_args(docs["ClusterConfiguration"]["apiServer"])
        assert api_args.get("runtime-config", "") == ",".join(settings.runtime_config)
        kubelet = docs["KubeletConfiguration"]
        assert (kubelet.get("featureGates") or {}) == settings.feature_gates
        for key, value in settings.kubelet_config.items():
            assert kubelet[key] == value
        assert kubelet["nodeStatusUpdateFrequency"] == "1s"  # timeouts.NODE_STATUS_UPDATE_FREQUENCY
        assert kubelet["logging"]["verbosity"] == 2  # V(2) lines the suites read, as the local --v=2
        assert {m["ContainerPath"] for m in node.mounts} == {
            *NODE_MOUNTS,
            str(layout.shared_dir),
            "/etc/containerd/certs.d",
        }
        assert node.image == f"kindest/node:v{version}"
    cri = view.containerd.split('[plugins."io.containerd.grpc.v1.cri"]', 1)[1]
    assert "enable_cdi = true" in cri.split("\n[", 1)[0]


@pytest.mark.kind
def test_kind_rejects_a_broken_config_with_its_own_message(validator, tmp_path):
    bad = tmp_path / "bad.yaml"
    header = "kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\n"
    bad.write_text(header + "nodes:\n- role: control-plane\n  extraMount: []\n")
    with pytest.raises(BadInput, match="field extraMount not found"):
        validator.check(bad, "v1.37.1")
    bad.write_text(header + "nodes:\n- role: worker\n")
    with pytest.raises(BadInput, match="must have at least one control-plane node"):
        validator.check(bad, "v1.37.1")


def test_a_host_without_cap_sys_resource_gets_restrict_oom_score_adj(layout):
    """These VMs: runc in a node cannot lower oom_score_adj without CAP_SYS_RESOURCE (config.py)."""
    version = KubeVersion.parse("1.37.1")
    plain = config.render(version, layout, "img", host_lacks=["CAP_SYS_TIME"])
    assert not any("restrict_oom_score_adj" in patch for patch in plain["containerdConfigPatches"])
    reduced = config.render(version, layout, "img", host_lacks=["CAP_SYS_RESOURCE"])
    assert plain["containerdConfigPatches"][-1] == config.REGISTRY_PATCH
    assert reduced["containerdConfigPatches"] == [
        *plain["containerdConfigPatches"],
        '[plugins."io.containerd.grpc.v1.cri"]\n  restrict_oom_score_adj = true',
    ]


@pytest.mark.kind
def test_kind_merges_restrict_oom_score_adj_into_the_nodes_containerd_config(validator, layout):
    version = KubeVersion.parse("1.37.1")
    rendered = config.render(version, layout, "kindest/node:v1.37.1", host_lacks=["CAP_SYS_RESOURCE"])
    view = validator.check(config.write(rendered, layout.config_file), version.tag)
    cri = view.containerd.split('[plugins."io.containerd.grpc.v1.cri"]', 1)[1].split("\n[", 1)[0]
    assert "enable_cdi = true" in cri
    assert "restrict_oom_score_adj = true" in cri
    registry = view.containerd.split('[plugins."io.containerd.grpc.v1.cri".registry]', 1)[1].split("\n[", 1)[0]
    assert 'config_path = "/etc/containerd/certs.d"' in registry


@pytest.mark.kind
@pytest.mark.parametrize("version", ["1.35.8", "1.37.1"])  # kubeadm v1beta3 (extraArgs a map), v1beta4 (a list)
def test_kind_gives_each_component_the_knobs_it_was_asked(validator, layout, version):
    """The knobs' kubeadm patches as kind 0.33 merges them (pkg/internal/patch/kubeadm_merge.go): each
    control-plane component's whole --feature-gates, the kubelet's gates, verbosity and fields in its
    KubeletConfiguration, its extra flags in kubeletExtraArgs beside kind's own, on every node."""
    from device_conformance.settings import resolve

    parsed = KubeVersion.parse(version)
    given = {
        "kubelet_verbosity": "4",
        "feature_gates": ["kubelet:ResourceHealthStatusMessage=false,apiserver:Foo=true"],
        "kubelet_args": ["--node-status-max-images=7"],
        "kubelet_config": ["maxPods=50"],
    }
    knobs = resolve(given, {}).component_knobs()
    rendered = config.render(parsed, layout, f"kindest/node:v{version}", "two-nodes", knobs=knobs)
    view = validator.check(config.write(rendered, layout.config_file), parsed.tag)
    version_gates = settings_for(parsed).feature_gates
    as_flag = ",".join(f"{k}={str(v).lower()}" for k, v in sorted(version_gates.items()))
    for node in view.nodes:
        docs = _kubeadm_docs(node.kubeadm)
        cluster = docs["ClusterConfiguration"]
        assert _extra_args(cluster["apiServer"])["feature-gates"] == ",".join(
            f"{k}={str(v).lower()}" for k, v in sorted({**version_gates, "Foo": True}.items())
        )
        for component in ("controllerManager", "scheduler"):
            assert _extra_args(cluster[component]).get("feature-gates", "") == as_flag, component
        kubelet = docs["KubeletConfiguration"]
        assert kubelet["featureGates"] == {**version_gates, "ResourceHealthStatusMessage": False}
        assert kubelet["logging"]["verbosity"] == 4
        assert kubelet["maxPods"] == 50
        registration = docs["InitConfiguration" if node.role == "control-plane" else "JoinConfiguration"]
        extra = _extra_args({"extraArgs": registration["nodeRegistration"]["kubeletExtraArgs"]})
        assert extra["node-status-max-images"] == "7"
        assert {"node-ip", "provider-id", "node-labels"} <= set(extra)  # kind's own, kept
