import json
import tomllib
from pathlib import Path

import yaml

from device_conformance.expectations.cluster import settings_for
from device_conformance.expectations.versions import KubeVersion
from device_conformance.providers.local import components, configs
from device_conformance.providers.local.layout import NODE_PRIVATE_PATHS, RunLayout
from device_conformance.providers.local.pki import Pki
from device_conformance.providers.local.ports import Ports

PORTS = Ports.from_base(21000)


def _containerd_config() -> dict:
    text = configs.containerd_config(
        Path("/r/containerd"),
        Path("/r/containerd/c.sock"),
        Path("/r/cni"),
        "img:v1",
        shim=Path("/cache/containerd/v2.3.4/containerd-shim-runc-v2"),
        runc="/usr/sbin/runc",
    )
    return tomllib.loads(text)


def test_containerd_config_is_version_3_and_keeps_all_state_in_the_run_directory():
    config = _containerd_config()
    # 3 is read by every containerd 2.x (2.3 migrates it to 4 in memory); 1.x cannot read it.
    assert config["version"] == 3
    assert config["root"] == "/r/containerd/root" and config["state"] == "/r/containerd/state"
    assert config["grpc"]["address"] == "/r/containerd/c.sock"
    assert config["ttrpc"]["address"] == "/r/containerd/c.sock.ttrpc"
    assert config["imports"] == []
    assert config["plugins"]["io.containerd.internal.v1.opt"]["path"] == "/r/containerd/opt"
    assert config["plugins"]["io.containerd.nri.v1.nri"]["disable"] is True
    # The containerd 1.x CRI plugin section would be ignored by 2.x (and the keys below would be lost).
    assert "sandbox_image" not in config["plugins"].get("io.containerd.grpc.v1.cri", {})


def test_containerd_config_enables_cdi_on_the_node_private_spec_dir():
    runtime = _containerd_config()["plugins"]["io.containerd.cri.v1.runtime"]
    assert runtime["enable_cdi"] is True
    assert runtime["cdi_spec_dirs"] == ["/var/run/cdi"]
    assert "/var/run/cdi" in NODE_PRIVATE_PATHS  # so each cluster has its own spec directory


def test_containerd_config_cri_runtime_and_images():
    plugins = _containerd_config()["plugins"]
    runtime = plugins["io.containerd.cri.v1.runtime"]
    assert runtime["restrict_oom_score_adj"] is True  # our VM refuses negative oom_score_adj
    assert runtime["cni"] == {"bin_dirs": ["/usr/lib/cni"], "conf_dir": "/r/cni"}
    runc = runtime["containerd"]["runtimes"]["runc"]
    assert runtime["containerd"]["default_runtime_name"] == "runc"
    assert runc["runtime_type"] == "io.containerd.runc.v2"
    assert runc["runtime_path"] == "/cache/containerd/v2.3.4/containerd-shim-runc-v2"
    assert runc["options"] == {"BinaryName": "/usr/sbin/runc", "SystemdCgroup": False}
    images = plugins["io.containerd.cri.v1.images"]
    assert images["pinned_images"] == {"sandbox": "img:v1"} and images["snapshotter"] == "overlayfs"
    assert plugins["io.containerd.grpc.v1.cri"]["stream_server_address"] == "127.0.0.1"


def test_cni_conflist_has_no_masquerade_and_uses_our_bridge():
    conflist = json.loads(configs.cni_conflist("net-a", "dcr1", "10.90.0.0/24"))
    bridge = conflist["plugins"][0]
    assert bridge["type"] == "bridge" and bridge["bridge"] == "dcr1" and bridge["ipMasq"] is False
    assert bridge["ipam"]["ranges"] == [[{"subnet": "10.90.0.0/24"}]]
    assert [p["type"] for p in conflist["plugins"]] == ["bridge", "loopback"]


def test_kubelet_config_for_1_37_on_cgroup_v1():
    text = configs.kubelet_config(
        "10.90.0.1", PORTS, Path("/r/ca.crt"), Path("/r/c.sock"), "/dc-r1", settings_for(KubeVersion(1, 37, 1))
    )
    config = yaml.safe_load(text)
    assert config["failCgroupV1"] is False
    assert config["cgroupDriver"] == "cgroupfs" and config["cgroupRoot"] == "/dc-r1"
    assert config["address"] == "10.90.0.1" and config["port"] == PORTS.kubelet
    assert config["healthzPort"] == PORTS.kubelet_healthz
    assert config["containerRuntimeEndpoint"] == "unix:///r/c.sock"
    assert config["imageGCHighThresholdPercent"] == 100


def test_kubelet_config_before_1_35_has_no_fail_cgroup_v1_field():
    text = configs.kubelet_config(
        "10.90.0.1", PORTS, Path("/r/ca.crt"), Path("/r/c.sock"), "/dc-r1", settings_for(KubeVersion(1, 34, 4))
    )
    assert "failCgroupV1" not in yaml.safe_load(text)


def test_apiserver_argv_adds_runtime_config_only_when_needed():
    pki = Pki(Path("/r/pki"))
    argv_137 = components.apiserver_argv(Path("/b/kube-apiserver"), pki, PORTS, settings_for(KubeVersion(1, 37, 1)))
    argv_136 = components.apiserver_argv(Path("/b/kube-apiserver"), pki, PORTS, settings_for(KubeVersion(1, 36, 5)))
    assert f"--secure-port={PORTS.apiserver}" in argv_137
    assert f"--etcd-servers=http://127.0.0.1:{PORTS.etcd_client}" in argv_137
    assert not any(arg.startswith("--runtime-config") for arg in argv_137)
    assert "--runtime-config=resource.k8s.io/v1beta2=true" in argv_136


def test_etcd_and_kubelet_argv():
    layout = RunLayout(Path("/r"))
    etcd = components.etcd_argv(layout, PORTS)
    assert "--data-dir=/r/etcd" in etcd and f"--listen-client-urls=http://127.0.0.1:{PORTS.etcd_client}" in etcd
    kubelet = components.kubelet_argv(
        Path("/b/kubelet"),
        Path("/r/k.yaml"),
        Path("/r/k.kubeconfig"),
        "dc-r1",
        "10.9.0.1",
        settings_for(KubeVersion(1, 37, 1)),
    )
    assert kubelet[0] == "/b/kubelet" and "--root-dir=/var/lib/kubelet" in kubelet and "--node-ip=10.9.0.1" in kubelet


def test_scheduler_config_disables_leader_election():
    config = yaml.safe_load(configs.scheduler_config(Path("/r/s.kubeconfig")))
    assert config["leaderElection"] == {"leaderElect": False}
    assert config["clientConnection"] == {"kubeconfig": "/r/s.kubeconfig"}


def test_layout_private_paths_live_under_the_run():
    layout = RunLayout(Path("/var/lib/device-conformance/runs/r1"))
    assert layout.kubelet_root == Path("/var/lib/device-conformance/runs/r1/node/kubelet")
    assert layout.private("/run/netns").parent == layout.root / "node"
    # socket paths inside the kubelet root must fit sun_path (107 bytes)
    assert len(str(layout.kubelet_root / "device-plugins" / "a-reasonably-long-plugin-name.sock")) < 107


def test_containerd_argv_and_env_put_our_shim_first_on_path():
    argv = components.containerd_argv(Path("/cache/containerd/v2.3.4/containerd"), Path("/r/containerd/config.toml"))
    assert argv == ["/cache/containerd/v2.3.4/containerd", "--config=/r/containerd/config.toml"]
    env = components.containerd_env(Path("/cache/containerd/v2.3.4"), "/usr/sbin:/usr/bin")
    assert env == {"PATH": "/cache/containerd/v2.3.4:/usr/sbin:/usr/bin"}


def test_apiserver_audits_only_the_controllers_pod_requests_when_asked():
    pki = Pki(Path("/r/pki"))
    settings = settings_for(KubeVersion(1, 37, 1))
    plain = components.apiserver_argv(Path("/b/kube-apiserver"), pki, PORTS, settings)
    assert not any(arg.startswith("--audit-") for arg in plain)
    audited = components.apiserver_argv(
        Path("/b/kube-apiserver"), pki, PORTS, settings, audit=(Path("/r/config/audit.yaml"), Path("/r/logs/a.log"))
    )
    assert [a for a in audited if a.startswith("--audit-")] == [
        "--audit-policy-file=/r/config/audit.yaml",
        "--audit-log-path=/r/logs/a.log",
        "--audit-log-format=json",
    ]
    policy = yaml.safe_load(configs.audit_policy())
    assert (policy["apiVersion"], policy["kind"]) == ("audit.k8s.io/v1", "Policy")
    assert policy["rules"] == [
        {
            "level": "Metadata",
            "users": ["system:serviceaccount:kube-system:device-taint-eviction-controller"],
            "resources": [{"group": "", "resources": ["pods", "pods/status"]}],
        },
        {"level": "None"},
    ]
    assert RunLayout(Path("/r")).audit_log == Path("/r/logs/kube-apiserver-audit.log")
