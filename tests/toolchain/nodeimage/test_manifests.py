"""The kindnetd and storage replacements kind applies from /kind/manifests/."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import yaml

from device_conformance.toolchain.nodeimage import manifests


def test_the_cni_manifest_asks_kind_for_the_endpoint_and_uses_the_local_image():
    text = manifests.cni_manifest_text()
    assert "would you kindly patch this file" in text
    assert "would you kindly template this file" not in text  # go templates would eat the jsonpath braces
    docs = list(yaml.safe_load_all(text))
    assert [d["kind"] for d in docs] == ["ClusterRole", "ClusterRoleBinding", "ServiceAccount", "DaemonSet"]
    container = docs[3]["spec"]["template"]["spec"]["containers"][0]
    assert (container["image"], container["imagePullPolicy"]) == ("device-conformance.local/cni-lite:v1", "Never")
    # kind's patch adds to /spec/template/spec/containers/0/env/-: the list must exist.
    assert container["env"] == [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]
    assert docs[3]["spec"]["template"]["spec"]["tolerations"] == [{"operator": "Exists"}]


def test_the_storage_manifest_is_a_default_class_without_pods():
    docs = list(yaml.safe_load_all(manifests.storage_manifest_text()))
    assert [(d["kind"], d["metadata"]["name"], d["provisioner"]) for d in docs] == [
        ("StorageClass", "standard", "kubernetes.io/no-provisioner")
    ]


def _fake(directory: Path, name: str, body: str) -> None:
    (directory / name).write_text("#!/bin/sh\n" + body)
    (directory / name).chmod(0o755)


def test_the_cni_loop_writes_this_nodes_config_and_routes_the_others(tmp_path):
    """Run the DaemonSet's script once with a fake kubectl and ip (sleep ends the loop)."""
    bin_dir, conf_dir = tmp_path / "bin", tmp_path / "net.d"
    bin_dir.mkdir()
    conf_dir.mkdir()
    nodes = "n1 10.244.0.0/24 172.18.0.2\nn2 10.244.1.0/24 172.18.0.3\nn3  172.18.0.4\n"
    _fake(bin_dir, "kubectl", f"echo \"$@\" >> {tmp_path}/kubectl.calls\nprintf '{nodes}'\n")
    _fake(bin_dir, "ip", f'echo "$@" >> {tmp_path}/ip.calls\n')
    _fake(bin_dir, "sleep", "kill -TERM $PPID\n")
    script = manifests.cni_script().replace("/host/etc/cni/net.d", str(conf_dir))
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "NODE_NAME": "n1"}
    subprocess.run(["sh", "-c", script], env=env, timeout=30, check=False)
    written = json.loads((conf_dir / manifests.CNI_CONFIG_FILE).read_text())
    assert written == manifests.cni_conflist("10.244.0.0/24")
    assert (tmp_path / "ip.calls").read_text() == "route replace 10.244.1.0/24 via 172.18.0.3\n"
    assert sorted(p.name for p in conf_dir.iterdir()) == [manifests.CNI_CONFIG_FILE]
    assert (tmp_path / "kubectl.calls").read_text().startswith("get nodes -o jsonpath=")


def test_the_conflist_is_ptp_host_local_portmap_on_the_subnet():
    conflist = manifests.cni_conflist("10.244.3.0/24")
    assert [p["type"] for p in conflist["plugins"]] == ["ptp", "portmap"]
    assert conflist["plugins"][0]["ipam"]["ranges"] == [[{"subnet": "10.244.3.0/24"}]]
