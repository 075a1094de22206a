"""The manifests kind applies from the node image (/kind/manifests/), replaced by ones that need no registry.

kind's create flow (sigs.k8s.io/kind pkg/cluster/internal/create/actions/installcni/cni.go) reads
/kind/manifests/default-cni.yaml from the first control-plane node and applies it; when the text says
"would you kindly patch this file" it adds CONTROL_PLANE_ENDPOINT (the API server inside the kind
network) to the env of the DaemonSet's first container. installstorage/storage.go applies
/kind/manifests/default-storage.yaml the same way.

kind's CNI is kindnetd (docker.io/kindest/kindnetd), whose source module github.com/aojea/kindnet is not
on the Go module proxy. Its replacement here does what kindnetd does for a plain cluster, with busybox
and kubectl: per node, a ptp + host-local + portmap CNI config on the node's podCIDR (kindnetd's plugins,
kind's Dockerfile build-cni stage), and a route to every other node's podCIDR via that node's
InternalIP. No network policy, no masquerade of traffic leaving the cluster (nothing here leaves it).

kind's default storage is rancher's local-path-provisioner (docker.io/kindest/local-path-provisioner),
not buildable here either: the replacement is a default StorageClass without a provisioner, so a PVC
needs a PV made by hand (the suites use none).
"""

from __future__ import annotations

import json

import yaml

from device_conformance.toolchain.images.build import WORKLOAD_IMAGE

CNI_IMAGE = "device-conformance.local/cni-lite:v1"
CNI_CONFIG_FILE = "10-dc-ptp.conflist"
CNI_NETWORK = "dc-ptp"
SYNC_SECONDS = 5


def cni_conflist(subnet: str) -> dict:
    """The CNI config the DaemonSet writes on a node whose podCIDR is `subnet` (shape of kindnetd's)."""
    return {
        "cniVersion": "0.4.0",
        "name": CNI_NETWORK,
        "plugins": [
            {
                "type": "ptp",
                "ipMasq": False,
                "mtu": 1500,
                "ipam": {
                    "type": "host-local",
                    "dataDir": "/run/cni-ipam-state",
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "ranges": [[{"subnet": subnet}]],
                },
            },
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }


def cni_script() -> str:
    """The DaemonSet's loop (busybox sh): write this node's conflist, route other nodes' podCIDRs."""
    template = json.dumps(cni_conflist("@SUBNET@"), separators=(",", ":"))
    head, tail = template.split("@SUBNET@")
    jsonpath = (
        "{range .items[*]}{.metadata.name} {.spec.podCIDR} "
        '{.status.addresses[?(@.type=="InternalIP")].address}{"\\n"}{end}'
    )
    return f"""set -u
SA=/var/run/secrets/kubernetes.io/serviceaccount
CONF=/host/etc/cni/net.d/{CNI_CONFIG_FILE}
k() {{
  # kind sets CONTROL_PLANE_ENDPOINT (installcni/cni.go): reach the API server before kube-proxy runs.
  if [ -n "${{CONTROL_PLANE_ENDPOINT:-}}" ]; then
    kubectl --server="https://$CONTROL_PLANE_ENDPOINT" --token="$(cat $SA/token)" \\
      --certificate-authority=$SA/ca.crt "$@"
  else
    kubectl "$@"
  fi
}}
while true; do
  if k get nodes -o jsonpath='{jsonpath}' > /tmp/nodes; then
    while read -r name cidr ip; do
      [ -n "$cidr" ] || continue
      if [ "$name" = "$NODE_NAME" ]; then
        printf '%s%s%s\\n' '{head}' "$cidr" '{tail}' > "$CONF.tmp"
        if cmp -s "$CONF.tmp" "$CONF"; then rm -f "$CONF.tmp"
        else mv "$CONF.tmp" "$CONF"; echo "wrote $CONF for $cidr"; fi
      elif [ -n "$ip" ]; then
        ip route replace "$cidr" via "$ip" || echo "cannot route $cidr via $ip"
      fi
    done < /tmp/nodes
  fi
  sleep {SYNC_SECONDS}
done
"""


def default_cni() -> list[dict]:
    """The objects of /kind/manifests/default-cni.yaml."""
    labels = {"app": "dc-cni", "k8s-app": "dc-cni", "tier": "node"}
    return [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": "dc-cni"},
            "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "dc-cni"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "dc-cni"},
            "subjects": [{"kind": "ServiceAccount", "name": "dc-cni", "namespace": "kube-system"}],
        },
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "dc-cni", "namespace": "kube-system"}},
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "dc-cni", "namespace": "kube-system", "labels": labels},
            "spec": {
                "selector": {"matchLabels": {"app": "dc-cni"}},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "hostNetwork": True,
                        "nodeSelector": {"kubernetes.io/os": "linux"},
                        "tolerations": [{"operator": "Exists"}],
                        "priorityClassName": "system-node-critical",
                        "serviceAccountName": "dc-cni",
                        "containers": [
                            {
                                "name": "dc-cni",
                                "image": CNI_IMAGE,
                                "imagePullPolicy": "Never",
                                "command": ["/bin/sh", "-c", cni_script()],
                                "env": [
                                    {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}
                                ],
                                "volumeMounts": [{"name": "cni-cfg", "mountPath": "/host/etc/cni/net.d"}],
                                "resources": {"requests": {"cpu": "10m", "memory": "20Mi"}},
                                "securityContext": {"privileged": False, "capabilities": {"add": ["NET_ADMIN"]}},
                            }
                        ],
                        "volumes": [
                            {"name": "cni-cfg", "hostPath": {"path": "/etc/cni/net.d", "type": "DirectoryOrCreate"}}
                        ],
                    },
                },
            },
        },
    ]


def default_storage() -> list[dict]:
    """The objects of /kind/manifests/default-storage.yaml: a default StorageClass, no provisioner."""
    return [
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": "standard", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
            "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "WaitForFirstConsumer",
        }
    ]


class _Dumper(yaml.SafeDumper):
    """No anchors, multi-line strings (the script) as literal blocks: readable on the node."""

    def ignore_aliases(self, data: object) -> bool:
        return True


def _str(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style="|" if "\n" in text else None)


_Dumper.add_representer(str, _str)


def render(objects: list[dict], header: str = "") -> str:
    return header + "---\n" + "---\n".join(yaml.dump(o, Dumper=_Dumper, sort_keys=False) for o in objects)


def cni_manifest_text() -> str:
    # The marker line makes kind add CONTROL_PLANE_ENDPOINT to the DaemonSet (installcni/cni.go).
    return render(
        default_cni(),
        "# device-conformance's kindnetd replacement (toolchain/nodeimage/manifests.py)\n"
        "# would you kindly patch this file\n",
    )


def storage_manifest_text() -> str:
    return render(default_storage(), "# device-conformance: default StorageClass, no provisioner (no registry here)\n")


IMAGES_USED = (CNI_IMAGE, WORKLOAD_IMAGE)
