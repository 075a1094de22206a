"""Rendered configuration files of a local cluster (pure functions: values in, text out)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from device_conformance.expectations.cluster import ComponentSettings
from device_conformance.providers.local.ports import Ports

CNI_BIN_DIR = "/usr/lib/cni"  # where Debian's containernetworking-plugins installs


def containerd_config(root: Path, socket: Path, cni_conf_dir: Path, sandbox_image: str) -> str:
    """containerd 1.6/1.7 (config version 2) with all state under the run directory."""
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    return f"""version = 2
root = "{root / "root"}"
state = "{root / "state"}"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]

[grpc]
  address = "{socket}"

[ttrpc]
  address = "{socket}.ttrpc"

[plugins."io.containerd.internal.v1.opt"]
  path = "{root / "opt"}"

[{cri}]
  sandbox_image = "{sandbox_image}"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  # Our hosts refuse a negative oom_score_adj (no CAP_SYS_RESOURCE in the VM sandbox); clamp instead of failing.
  restrict_oom_score_adj = true
  [{cri}.containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [{cri}.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [{cri}.containerd.runtimes.runc.options]
        SystemdCgroup = false
  [{cri}.cni]
    bin_dir = "{CNI_BIN_DIR}"
    conf_dir = "{cni_conf_dir}"
"""


def cni_conflist(network: str, bridge: str, subnet: str) -> str:
    """bridge + host-local + loopback; no masquerade and no portmap, so no iptables rules to leak."""
    return json.dumps(
        {
            "cniVersion": "1.0.0",
            "name": network,
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": bridge,
                    "isGateway": True,
                    "ipMasq": False,
                    "hairpinMode": True,
                    "ipam": {
                        "type": "host-local",
                        "ranges": [[{"subnet": subnet}]],
                        "routes": [{"dst": "0.0.0.0/0"}],
                    },
                },
                {"type": "loopback"},
            ],
        },
        indent=2,
    )


def kubelet_config(
    node_ip: str, ports: Ports, ca_file: Path, containerd_socket: Path, cgroup_root: str, settings: ComponentSettings
) -> str:
    config: dict[str, object] = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": node_ip,
        "port": ports.kubelet,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": ports.kubelet_healthz,
        "readOnlyPort": 0,
        "containerRuntimeEndpoint": f"unix://{containerd_socket}",
        # No systemd on our hosts; cgroupfs driver, each cluster under its own cgroup root.
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": cgroup_root,
        "cgroupsPerQOS": True,
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": False},
            "x509": {"clientCAFile": str(ca_file)},
        },
        "authorization": {"mode": "AlwaysAllow"},
        "failSwapOn": False,
        "resolvConf": "/etc/resolv.conf",
        "clusterDomain": "cluster.local",
        # Images cannot be pulled again here, so image GC must never delete them.
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "evictionHard": {"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%"},
        "serializeImagePulls": False,
        # Post capacity/allocatable changes within a second instead of the default 10s loop.
        "nodeStatusUpdateFrequency": "1s",
        "nodeStatusReportFrequency": "1m",
        # The kubelet's iptables canary chains would outlive the cluster.
        "makeIPTablesUtilChains": False,
        "shutdownGracePeriod": "0s",
    }
    config.update(settings.kubelet_config)
    return yaml.safe_dump(config, sort_keys=False)


def scheduler_config(kubeconfig: Path) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "clientConnection": {"kubeconfig": str(kubeconfig)},
            "leaderElection": {"leaderElect": False},
        },
        sort_keys=False,
    )
