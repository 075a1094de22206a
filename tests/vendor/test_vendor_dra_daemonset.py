"""Vendor mode: a DRA driver as a DaemonSet (--vendor-dra-driver with --vendor-daemonset).
Option parsing, upstream's test driver's manifest (its objects, mounts and permissions), the CDI specs read through
the node, and the handle's driver name (no cluster). Applying and deleting a manifest:
tests/kube/test_apply_manifests.py."""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from types import SimpleNamespace

import pytest
from device_conformance.fixtures.vendor import MANIFESTS, cdi_specs
from kubernetes.client.exceptions import ApiException

from device_conformance.core.errors import BadInput
from device_conformance.kube.manifests import manifest_objects
from device_conformance.node.base import NodeControl
from device_conformance.settings import resolve
from device_conformance.vendor import handles as vendor_handles
from device_conformance.vendor.handles import VendorDaemonSetHandle
from device_conformance.vendor.spec import DRA_DRIVER, UPSTREAM_DAEMONSETS, parse

DRIVER = "test-driver.cdi.k8s.io"


def test_a_dra_driver_daemonset_spec(tmp_path):
    spec = parse(None, "gpu.vendor.com", None, "gpu-system/gpu-kubelet-plugin")
    assert (spec.kind, spec.name, spec.command, spec.daemonset, spec.upstream) == (
        DRA_DRIVER,
        "gpu.vendor.com",
        "",
        "gpu-system/gpu-kubelet-plugin",
        None,
    )
    assert spec.namespace_name == ("gpu-system", "gpu-kubelet-plugin")
    upstream = parse(None, DRIVER, None, "upstream:dra-test-driver")
    assert (upstream.upstream, upstream.namespace_name) == ("dra-test-driver", ("kube-system", "dc-dra-test-driver"))
    assert upstream.describe() == f"dra-driver {DRIVER} (--vendor-dra-driver), the DaemonSet upstream:dra-test-driver"
    # kind and existing take it, local refuses it (the same rules as for a device plugin's DaemonSet)
    ds = {"vendor_dra_driver": "gpu.vendor.com", "vendor_daemonset": "ns/ds"}
    assert resolve({"provider": "kind", **ds}, {}).vendor.value.kind == DRA_DRIVER
    with pytest.raises(BadInput, match="drives the subject's DaemonSet through the provider's node control"):
        resolve({"provider": "local", **ds}, {})
    with pytest.raises(BadInput, match="deploys upstream's subject from an image built here"):
        (tmp_path / "kubeconfig").write_text("{}")
        upstream_ds = {"vendor_dra_driver": DRIVER, "vendor_daemonset": "upstream:dra-test-driver"}
        resolve({"provider": "existing", "kubeconfig": str(tmp_path / "kubeconfig"), **upstream_ds}, {})


def test_the_test_drivers_manifest_has_its_daemonset_mounts_and_permissions():
    objects = manifest_objects((MANIFESTS / "dra-test-driver.yaml").read_text(), "dc.local/test-driver:v1")
    assert [o["kind"] for o in objects] == ["ServiceAccount", "ClusterRole", "ClusterRoleBinding", "DaemonSet"]
    account, role, binding, daemonset = objects
    meta = daemonset["metadata"]
    assert (meta["namespace"], meta["name"]) == UPSTREAM_DAEMONSETS["dra-test-driver"]
    pod = daemonset["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert (container["image"], container["imagePullPolicy"]) == ("dc.local/test-driver:v1", "Never")
    assert container["args"] == ["kubelet-plugin", "--node-name=$(NODE_NAME)"]
    assert container["env"] == [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]
    volumes = {v["name"]: v["hostPath"]["path"] for v in pod["volumes"]}
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert sorted(volumes.values()) == [
        f"/var/lib/kubelet/plugins/{DRIVER}",
        "/var/lib/kubelet/plugins_registry",
        "/var/run/cdi",
    ]
    assert {v["hostPath"]["type"] for v in pod["volumes"]} == {"DirectoryOrCreate"}
    assert mounts == set(volumes.values())  # each at its node path: the driver's defaults are the kubelet's
    # the pod runs as the ServiceAccount the binding gives the role to
    assert pod["serviceAccountName"] == account["metadata"]["name"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": account["metadata"]["name"], "namespace": account["metadata"]["namespace"]}
    ]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    rules = {(r["apiGroups"][0], r["resources"][0]): set(r["verbs"]) for r in role["rules"]}
    assert {"create", "update", "delete", "list", "watch"} <= rules[("resource.k8s.io", "resourceslices")]
    assert rules[("resource.k8s.io", "resourceclaims")] == {"get"}
    assert rules[("", "nodes")] == {"get"}


def test_every_upstream_daemonset_has_a_manifest_of_known_kinds():
    for short_name, (namespace, name) in UPSTREAM_DAEMONSETS.items():
        objects = manifest_objects((MANIFESTS / f"{short_name}.yaml").read_text(), "img")
        [daemonset] = [o for o in objects if o["kind"] == "DaemonSet"]
        assert (daemonset["metadata"]["namespace"], daemonset["metadata"]["name"]) == (namespace, name)
    with pytest.raises(ValueError, match=r"kinds \['Deployment'\]"):
        manifest_objects("kind: Deployment\nmetadata: {name: x}\n", "img")


class FilesTransport:
    """A node whose files are reached only through commands (as through the node agent): `find` and `cat`."""

    name, kubelet_service, mounts = "node-a", "kubelet", {}

    def __init__(self, files):
        self.files, self.commands = files, []

    def run(self, argv, *, check=True, stdin=None, timeout=30):
        from device_conformance.core.errors import CommandError

        self.commands.append(argv[0])
        if argv[0] == "find":
            directory, kind = argv[1], argv[argv.index("-type") + 1]
            if kind != "f":  # only regular files here
                return b""
            return "".join(f"{p}\n" for p in sorted(self.files) if str(Path(p).parent) == directory).encode()
        if argv[0] == "cat":
            if argv[1] not in self.files:
                raise CommandError(argv, 1, f"cat: {argv[1]}: No such file or directory")
            return self.files[argv[1]]
        raise AssertionError(f"unexpected command {argv}")


def test_cdi_specs_are_copied_through_the_node(tmp_path):
    spec = b'{"cdiVersion": "0.6.0", "kind": "vendor.com/gpu", "devices": [{"name": "d0", "containerEdits": {}}]}'
    files = {
        "/var/run/cdi/a.json": spec,
        "/var/run/cdi/b.yaml": b"kind: x\n",
        "/var/run/cdi/.hidden.json": b"{}",
        "/var/run/cdi/notes.txt": b"not a spec",
        "/var/run/cdi/sub/c.json": b"{}",
    }
    node = NodeControl(FilesTransport(files))
    assert node.list_files("/var/run/cdi") == [".hidden.json", "a.json", "b.yaml", "notes.txt"]
    dest = cdi_specs(node, tmp_path / "cdi")
    assert sorted(p.name for p in dest.iterdir()) == ["a.json", "b.yaml"]
    assert (dest / "a.json").read_bytes() == spec
    # a second copy is of the directory as it is then: a file removed on the node is gone from the copy too
    del files["/var/run/cdi/a.json"]
    assert sorted(p.name for p in cdi_specs(node, tmp_path / "cdi").iterdir()) == ["b.yaml"]


def test_cdi_specs_on_a_node_with_the_directory_on_the_host(tmp_path):
    host = tmp_path / "host-cdi"
    host.mkdir()
    (host / "a.json").write_text("{}")
    transport = SimpleNamespace(name="n", kubelet_service="kubelet", mounts={PurePosixPath("/var/run/cdi"): host})
    node = NodeControl(transport)
    assert node.list_files("/var/run/cdi") == ["a.json"]
    assert [p.name for p in cdi_specs(node, tmp_path / "copy").iterdir()] == ["a.json"]
    assert node.list_files("/var/run/cdi/missing") == []


def test_the_daemonset_handle_names_the_driver():
    spec = parse(None, "gpu.vendor.com", None, "gpu-system/gpu-kubelet-plugin")
    core = SimpleNamespace(api_client=None)
    handle = VendorDaemonSetHandle(spec, SimpleNamespace(core=core), SimpleNamespace(name="n"), None, 1)
    assert (handle.driver_name, handle.namespace, handle.ds_name) == (
        "gpu.vendor.com",
        "gpu-system",
        "gpu-kubelet-plugin",
    )
    assert handle.name == "vendor dra-driver gpu.vendor.com (DaemonSet gpu-system/gpu-kubelet-plugin)"
    assert vendor_handles.VENDOR_CAPABILITIES == handle.CAPABILITIES


def test_a_dra_driver_daemonset_that_is_missing_or_not_on_the_node_is_bad_input():
    import json

    spec = parse(None, "gpu.vendor.com", None, "gpu-system/gpu-kubelet-plugin")
    pods: list = []
    core = SimpleNamespace(
        api_client=None, list_namespaced_pod=lambda namespace, field_selector: SimpleNamespace(items=pods)
    )
    handle = VendorDaemonSetHandle(spec, SimpleNamespace(core=core), SimpleNamespace(name="node-a"), None, 1)

    def missing(name, namespace, _preload_content):
        raise ApiException(status=404, reason="Not Found")

    handle.apps = SimpleNamespace(read_namespaced_daemon_set=missing)
    with pytest.raises(BadInput) as raised:
        handle.check()
    assert raised.value.problem == (
        "--vendor-daemonset gpu-system/gpu-kubelet-plugin: there is no DaemonSet gpu-kubelet-plugin in namespace "
        "gpu-system of the cluster under test"
    )
    assert raised.value.fix.startswith("deploy the subject first (kubectl apply -f its manifest)")
    daemonset = {
        "spec": {"template": {"spec": {"nodeSelector": {"gpu": "yes"}}}},
        "status": {"desiredNumberScheduled": 0},
    }
    handle.apps = SimpleNamespace(
        read_namespaced_daemon_set=lambda name, namespace, _preload_content: SimpleNamespace(data=json.dumps(daemonset))
    )
    with pytest.raises(BadInput) as raised:
        handle.check()
    assert raised.value.problem == (
        "--vendor-daemonset gpu-system/gpu-kubelet-plugin: the DaemonSet has no pod on the test node node-a "
        "(desired 0, nodeSelector {'gpu': 'yes'})"
    )
    assert raised.value.fix.startswith("make it run on node-a")


def test_the_report_shows_the_pods_log_or_the_previous_containers():
    logs = {False: b"", True: b'E1124 "command failed" err="listen unix .../dra.sock: bind: no such file"\n'}
    calls = []

    def read_log(name, namespace, tail_lines, previous, _preload_content):
        calls.append((name, namespace, tail_lines, previous, _preload_content))
        if previous not in logs:
            raise ApiException(status=400, reason="previous terminated container not found")
        return SimpleNamespace(data=logs[previous])

    spec = parse(None, DRIVER, None, "upstream:dra-test-driver")
    core = SimpleNamespace(api_client=None, read_namespaced_pod_log=read_log)
    handle = VendorDaemonSetHandle(spec, SimpleNamespace(core=core), SimpleNamespace(name="n"), None, 1)
    assert handle.log_tail() == "(no pod seen)"
    handle.last_pod = "dc-dra-test-driver-x"
    assert handle.log_tail(5) == (
        "(no output yet; the previous container's log:)\n"
        'E1124 "command failed" err="listen unix .../dra.sock: bind: no such file"\n'
    )
    assert calls == [
        ("dc-dra-test-driver-x", "kube-system", 5, False, False),
        ("dc-dra-test-driver-x", "kube-system", 5, True, False),
    ]
    logs[False] = b"I1124 Waiting for signal.\n"
    assert handle.log_tail() == "I1124 Waiting for signal.\n"  # text, not "b'...'"
    logs[False] = b""
    del logs[True]
    assert handle.log_tail() == "(no output yet)"
