"""Rendered configuration files of a local cluster (pure functions: values in, text out)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from device_conformance.expectations.cluster import ComponentSettings
from device_conformance.kube import audit
from device_conformance.providers.local.ports import Ports
from device_conformance.settings import DEFAULT_KNOBS, ComponentKnobs

CNI_BIN_DIR = "/usr/lib/cni"  # where Debian's containernetworking-plugins installs
CDI_SPEC_DIR = "/var/run/cdi"  # a node-private path (layout.NODE_PRIVATE_PATHS)


def containerd_config(
    root: Path, socket: Path, cni_conf_dir: Path, sandbox_image: str, shim: Path, runc: str = "runc"
) -> str:
    """containerd 2.x (config version 3, read by 2.0+) with all state under the run directory.

    CDI is on: DRA drivers write CDI spec files to /var/run/cdi, which inside the node's mount
    namespace is this run's private directory (layout.NODE_PRIVATE_PATHS). /etc/cdi is left out on
    purpose: it is shared host state, and one cluster's specs must not reach another's containers.
    """
    runtime = "plugins.'io.containerd.cri.v1.runtime'"
    return f"""version = 3
root = '{root / "root"}'
state = '{root / "state"}'
# No drop-ins from the host's /etc/containerd/conf.d: this file is the whole configuration.
imports = []

[grpc]
  address = '{socket}'

[ttrpc]
  address = '{socket}.ttrpc'

[plugins.'io.containerd.internal.v1.opt']
  path = '{root / "opt"}'

# NRI listens on the host path /var/run/nri/nri.sock, which every cluster would share; nothing uses it.
[plugins.'io.containerd.nri.v1.nri']
  disable = true

[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = '127.0.0.1'
  stream_server_port = '0'

[plugins.'io.containerd.cri.v1.images']
  snapshotter = 'overlayfs'
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    # No registry here: our own pause image, imported before the kubelet starts.
    sandbox = '{sandbox_image}'

[{runtime}]
  # Our hosts refuse a negative oom_score_adj (no CAP_SYS_RESOURCE in the VM sandbox); clamp instead of
  # failing (runc would otherwise die with "can't get final child's PID from pipe").
  restrict_oom_score_adj = true
  enable_cdi = true
  cdi_spec_dirs = ['{CDI_SPEC_DIR}']
  [{runtime}.containerd]
    default_runtime_name = 'runc'
    [{runtime}.containerd.runtimes.runc]
      runtime_type = 'io.containerd.runc.v2'
      # Our shim, not whichever containerd-shim-runc-v2 comes first on PATH (e.g. Debian's 1.6 one).
      runtime_path = '{shim}'
      [{runtime}.containerd.runtimes.runc.options]
        BinaryName = '{runc}'
        SystemdCgroup = false
  [{runtime}.cni]
    bin_dirs = ['{CNI_BIN_DIR}']
    conf_dir = '{cni_conf_dir}'
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
    node_ip: str,
    ports: Ports,
    ca_file: Path,
    containerd_socket: Path,
    cgroup_root: str,
    settings: ComponentSettings,
    knobs: ComponentKnobs = DEFAULT_KNOBS,
    runtime_endpoint: str | None = None,
) -> str:
    """The KubeletConfiguration: what this host and the suites need, the version's fields, then the user's
    (--kubelet-config, merged map by map) on top. `runtime_endpoint`: another CRI endpoint than containerd's."""
    config: dict[str, object] = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": node_ip,
        "port": ports.kubelet,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": ports.kubelet_healthz,
        "readOnlyPort": 0,
        "containerRuntimeEndpoint": runtime_endpoint or f"unix://{containerd_socket}",
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
    return yaml.safe_dump(knobs.merged_kubelet_config(config), sort_keys=False)


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


def audit_policy() -> str:
    """An audit policy that records only what suites count (kube/audit.py): each request of
    audit.AUDITED_CONTROLLERS on pods and their subresources, once complete, at level Metadata (verb, object,
    user, code; no bodies)."""
    policy = {
        "apiVersion": "audit.k8s.io/v1",
        "kind": "Policy",
        "omitStages": ["RequestReceived", "ResponseStarted", "Panic"],
        "rules": [
            {
                "level": "Metadata",
                "users": [audit.controller_user(c) for c in audit.AUDITED_CONTROLLERS],
                "resources": [{"group": "", "resources": ["pods", "pods/status"]}],
            },
            {"level": "None"},
        ],
    }
    return yaml.safe_dump(policy, sort_keys=False)
