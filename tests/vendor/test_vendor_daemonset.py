"""Vendor mode on kind: the subject as a DaemonSet (--vendor-daemonset). Option parsing and
bad input, the node-affinity term that stops the subject on one node, the subject image's libraries, and the
handle's verbs against a fake API (no cluster)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from device_conformance.core.errors import BadInput
from device_conformance.settings import resolve
from device_conformance.toolchain.images.build import shared_libraries
from device_conformance.vendor.handles import STOP_EXPRESSION, STOP_LABEL, VendorDaemonSetHandle, has_stop_term
from device_conformance.vendor.handles import with_stop_term as stop
from device_conformance.vendor.spec import DEVICE_PLUGIN, parse


def test_daemonset_specs():
    spec = parse("vendor.com/gpu", None, None, "kube-system/gpu-plugin")
    assert (spec.kind, spec.name, spec.command, spec.daemonset, spec.upstream) == (
        DEVICE_PLUGIN,
        "vendor.com/gpu",
        "",
        "kube-system/gpu-plugin",
        None,
    )
    assert spec.namespace_name == ("kube-system", "gpu-plugin")
    upstream = parse("example.com/resource", None, None, "upstream:sample-device-plugin")
    assert upstream.upstream == "sample-device-plugin"
    assert upstream.namespace_name == ("kube-system", "dc-sample-device-plugin")
    assert "the DaemonSet upstream:sample-device-plugin" in upstream.describe()


@pytest.mark.parametrize(
    ("args", "problem", "fix"),
    [
        (
            ("vendor.com/gpu", None, "p", "ns/ds"),
            "are both given",
            "--vendor-daemonset NAMESPACE/NAME with --provider kind",
        ),
        (
            (None, None, None, "ns/ds"),
            "--vendor-daemonset 'ns/ds' is given without a subject",
            "--vendor-device-plugin",
        ),
        (("vendor.com/gpu", None, None, "ds"), "is not NAMESPACE/NAME", "--vendor-daemonset kube-system/gpu-plugin"),
        (("vendor.com/gpu", None, None, "NS/ds"), "is not NAMESPACE/NAME", "namespace and name"),
        (("vendor.com/gpu", None, None, "ns/"), "is not NAMESPACE/NAME", "namespace and name"),
        (("gpu", None, None, "ns/ds"), "is not an extended resource name", "<domain>/<name>"),
        ((None, "GPU", None, "ns/ds"), "is not a DRA driver name", "gpu.vendor.com"),
        ((None, "gpu.vendor.com", None, "upstream:dra-test-driver"), "is not what", "test-driver.cdi.k8s.io"),
        (("example.com/resource", None, None, "upstream:dra-test-driver"), "is not what", "--vendor-dra-driver"),
        (("vendor.com/gpu", None, None, "upstream:sample-device-plugin"), "is not what", "example.com/resource"),
        (("vendor.com/gpu", None, None, "upstream:nvidia"), "names no upstream subject", "NAMESPACE/NAME"),
        ((None, "x.example.com", None, "upstream:test-driver"), "names no upstream subject", "dra-test-driver"),
        (("vendor.com/gpu", None, None, None), "needs --vendor-command", "--vendor-daemonset NAMESPACE/NAME"),
    ],
)
def test_bad_daemonset_input_names_the_fix(args, problem, fix):
    with pytest.raises(BadInput) as raised:
        parse(*args)
    assert problem in raised.value.problem, raised.value.problem
    assert fix in raised.value.fix, raised.value.fix


def test_the_daemonset_needs_kind_or_existing_and_the_command_the_local_one():
    ds = {"vendor_device_plugin": "vendor.com/gpu", "vendor_daemonset": "ns/ds"}
    assert resolve({"provider": "kind", **ds}, {}).vendor.value.daemonset == "ns/ds"
    with pytest.raises(BadInput, match="drives the subject's DaemonSet through the provider's node control") as raised:
        resolve({"provider": "local", **ds}, {})
    assert "use --provider kind, or --provider existing with --allow-node-disruption NODE" in raised.value.fix
    with pytest.raises(BadInput, match="only the local provider has") as raised:
        resolve({"provider": "kind", "vendor_device_plugin": "vendor.com/gpu", "vendor_command": "p"}, {})
    assert "--vendor-daemonset NAMESPACE/NAME" in raised.value.fix
    setting = resolve(
        {"provider": "kind"}, {"VENDOR_DEVICE_PLUGIN": "vendor.com/gpu", "VENDOR_DAEMONSET": "a/b"}
    ).vendor
    assert setting.value.namespace_name == ("a", "b") and setting.source.kind == "environment"


def test_stop_term_is_added_to_every_term_and_nothing_else_changes():
    assert stop(None) == {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [STOP_EXPRESSION]}]
            }
        }
    }
    gpu = {"key": "vendor.com/gpu.present", "operator": "In", "values": ["true"]}
    pod_affinity = {"podAntiAffinity": {"x": 1}}
    original = {
        **pod_affinity,
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [gpu]}, {"matchFields": [{"key": "metadata.name"}]}]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1}],
        },
    }
    patched = stop(original)
    terms = patched["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [
        {"matchExpressions": [gpu, STOP_EXPRESSION]},
        {"matchFields": [{"key": "metadata.name"}], "matchExpressions": [STOP_EXPRESSION]},
    ]
    assert patched["podAntiAffinity"] == {"x": 1}
    assert patched["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] == [{"weight": 1}]
    # the original is untouched (it is what cleanup() puts back), and adding twice adds nothing
    assert original["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0] == {
        "matchExpressions": [gpu]
    }
    assert stop(patched) == patched
    assert has_stop_term(patched) and not has_stop_term(original) and not has_stop_term(None)
    one_without = stop(original)
    one_without["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"].append({})
    assert not has_stop_term(one_without)


def test_shared_libraries_of_ldd_output():
    ldd = (
        "\tlinux-vdso.so.1 (0x00007ffd)\n"
        "\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)\n"
        "\t/lib64/ld-linux-x86-64.so.2 (0x00007f)\n"
    )
    assert shared_libraries(ldd) == ["/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"]
    assert shared_libraries("\tnot a dynamic executable\n") == []


# -- the handle against a fake API --------------------------------------------------------------------------
def _pod(name, uid, *, ready=True, owner="gpu-plugin", deleting=False, affinity=None, cid="containerd://abc123"):
    return SimpleNamespace(
        metadata=SimpleNamespace(
            name=name,
            uid=uid,
            deletion_timestamp="now" if deleting else None,
            owner_references=[SimpleNamespace(kind="DaemonSet", name=owner)],
        ),
        spec=SimpleNamespace(affinity=affinity, containers=[SimpleNamespace(name="main")]),
        status=SimpleNamespace(
            phase="Running",
            conditions=[SimpleNamespace(type="Ready", status="True" if ready else "False")],
            container_statuses=[SimpleNamespace(name="main", container_id=cid)],
        ),
    )


class FakeCore:
    """The node's pods and its labels; a label STOP_LABEL makes the 'DaemonSet controller' delete the pod,
    its removal brings a new one (uid counts up)."""

    def __init__(self, pods):
        self.pods, self.labels, self.calls, self.next_uid = list(pods), {}, [], 10
        self.api_client = SimpleNamespace(sanitize_for_serialization=lambda a: a)

    def list_namespaced_pod(self, namespace, field_selector):
        self.calls.append(("list", namespace, field_selector))
        return SimpleNamespace(items=list(self.pods))

    def patch_node(self, name, body, _content_type):
        self.calls.append(("label", name, body["metadata"]["labels"][STOP_LABEL], _content_type))
        if body["metadata"]["labels"][STOP_LABEL]:
            self.pods = []
        elif not self.pods:
            self._new()

    def delete_namespaced_pod(self, name, namespace):
        self.calls.append(("delete", name))
        self.pods = [p for p in self.pods if p.metadata.name != name]
        self._new()

    def _new(self):
        self.next_uid += 1
        self.pods.append(_pod(f"gpu-plugin-{self.next_uid}", str(self.next_uid)))


def _handle(core, killed):
    spec = parse("vendor.com/gpu", None, None, "kube-system/gpu-plugin")
    node = SimpleNamespace(
        name="node-a",
        container_pid=lambda cid: killed.append(cid) or 4242,
        signal_process=lambda pid, sig: killed.append(f"{sig} {pid}"),
    )
    handle = VendorDaemonSetHandle.__new__(VendorDaemonSetHandle)
    handle.__init__(spec, SimpleNamespace(core=core), node, counts=None, timeout=2)
    return handle


def test_handle_verbs_go_through_the_daemonset_and_the_node():
    core = FakeCore([_pod("other", "1", owner="someone-else"), _pod("gpu-plugin-a", "2")])
    killed: list[str] = []
    handle = _handle(core, killed)
    assert [p.metadata.name for p in handle.pods()] == ["gpu-plugin-a"]
    assert core.calls[-1] == ("list", "kube-system", "spec.nodeName=node-a")
    assert handle.is_running()

    handle.restart()  # delete the pod, wait for another one Ready
    assert ("delete", "gpu-plugin-a") in core.calls and handle.last_pod == "gpu-plugin-11" and handle.starts == 1

    handle.kill()  # SIGSTOP, label, the pod marked for deletion, SIGKILL, then no pod
    labels = [c for c in core.calls if c[0] == "label"]
    assert labels == [("label", "node-a", "true", "application/merge-patch+json")]
    assert killed == ["containerd://abc123", "STOP 4242", "KILL 4242"] and not handle.pods()
    assert not handle.is_running()
    assert "SIGKILL pid 4242 (container main of gpu-plugin-11)" in handle.events

    handle.respawn()  # the label removed: a new pod
    assert core.calls[-2][:3] == ("label", "node-a", None) and handle.is_running() and handle.starts == 2
    with pytest.raises(RuntimeError, match="still running"):
        handle.start()
    handle.stop()
    assert not handle.pods()
    handle.cleanup()  # unlabelled, nothing patched to restore, Ready again
    assert handle.is_running() and not handle.patched


def test_a_pod_that_never_gets_ready_times_out_naming_it():
    core = FakeCore([_pod("gpu-plugin-a", "2", ready=False)])
    handle = _handle(core, [])
    from device_conformance.core.errors import ConformanceError

    with pytest.raises((ConformanceError, TimeoutError, AssertionError)) as raised:
        handle.wait_ready()
    assert "pod gpu-plugin-a is Running, not Ready" in str(raised.value)


class FakeApps:
    def __init__(self, daemonset):
        self.daemonset, self.patches = daemonset, []

    def read_namespaced_daemon_set(self, name, namespace, _preload_content):
        from kubernetes.client.exceptions import ApiException

        if self.daemonset is None:
            raise ApiException(status=404, reason="Not Found")
        return SimpleNamespace(data=__import__("json").dumps(self.daemonset))

    def patch_namespaced_daemon_set(self, name, namespace, body):
        self.patches.append((name, namespace, body))


GPU_AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}]
        }
    }
}


def _daemonset(affinity):
    spec = {"containers": [{"name": "main"}], **({"affinity": affinity} if affinity else {})}
    return {"spec": {"template": {"spec": spec}}, "status": {"desiredNumberScheduled": 0}}


@pytest.mark.parametrize("affinity", [None, GPU_AFFINITY])
def test_prepare_adds_the_term_and_stops_cleanup_puts_the_daemonset_back(affinity):
    core = FakeCore([_pod("gpu-plugin-a", "2")])
    handle = _handle(core, [])
    handle.apps = FakeApps(_daemonset(affinity))
    handle.prepare()
    path = "/spec/template/spec/affinity"
    assert handle.apps.patches == [
        ("gpu-plugin", "kube-system", [{"op": "add", "path": path, "value": stop(affinity)}])
    ]
    assert not handle.pods()  # stopped: the caller counts Register calls from here
    handle.start()
    handle.cleanup()
    restore = [{"op": "remove", "path": path}] if affinity is None else [{"op": "add", "path": path, "value": affinity}]
    assert handle.apps.patches[-1] == ("gpu-plugin", "kube-system", restore)
    assert handle.is_running() and handle.events[-1] == "affinity restored"


def test_a_missing_daemonset_or_one_without_a_pod_on_the_node_is_bad_input():
    handle = _handle(FakeCore([]), [])
    handle.apps = FakeApps(None)
    with pytest.raises(BadInput) as raised:
        handle.check()
    assert "there is no DaemonSet gpu-plugin in namespace kube-system" in raised.value.problem
    assert "kubectl get daemonsets -A" in raised.value.fix
    handle.apps = FakeApps(_daemonset(None))
    with pytest.raises(BadInput) as raised:
        handle.check()
    assert "the DaemonSet has no pod on the test node node-a (desired 0, nodeSelector None)" in raised.value.problem
    assert raised.value.fix.startswith("make it run on node-a")


def test_pid_of_verbose_container_status():
    from device_conformance.core.errors import ConformanceError
    from device_conformance.node.cri import pid_of

    assert pid_of({"info": '{"sandboxID": "s", "pid": 4242}'}, "abc") == 4242  # CRI over gRPC: a JSON string
    assert pid_of({"pid": 77, "runtimeSpec": {}}, "abc") == 77  # crictl inspect's "info", decoded
    with pytest.raises(ConformanceError, match="no running process for container abc"):
        pid_of({"info": '{"pid": 0}'}, "abc")


def test_subject_image_holds_the_binary_and_its_libraries(tmp_path):
    import io
    import json
    import shutil
    import tarfile
    from pathlib import Path

    from device_conformance.toolchain.images.build import subject_image

    binary = tmp_path / "true"
    shutil.copy(shutil.which("true"), binary)  # a dynamically linked binary of the host
    image = subject_image(binary, "device-conformance.local/t:v1", tmp_path / "cache")
    assert image.name == "device-conformance.local/t:v1"
    with tarfile.open(image.tarball) as outer:
        index = json.load(outer.extractfile("index.json"))
        manifest = json.load(outer.extractfile(f"blobs/sha256/{index['manifests'][0]['digest'].split(':')[1]}"))
        config = json.load(outer.extractfile(f"blobs/sha256/{manifest['config']['digest'].split(':')[1]}"))
        layer = outer.extractfile(f"blobs/sha256/{manifest['layers'][0]['digest'].split(':')[1]}").read()
    with tarfile.open(fileobj=io.BytesIO(layer)) as inner:
        names = inner.getnames()
    assert config["config"]["Entrypoint"] == ["/usr/bin/true"]
    libc = [n for n in names if Path(n).name == "libc.so.6"]
    assert "usr/bin/true" in [n.lstrip("/") for n in names] and len(libc) == 1, names
    assert subject_image(binary, image.name, tmp_path / "cache") == image  # cached by content
