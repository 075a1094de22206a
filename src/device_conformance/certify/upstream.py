"""Upstream's sample device plugin (k8s.io/kubernetes test/images/sample-device-plugin) and DRA test driver
(test/e2e/dra/test-driver, its kubelet-plugin command, built on k8s.io/dynamic-resource-allocation/kubeletplugin)
as real third-party subjects, built from the Go module of the Kubernetes version under test. The sample
device plugin runs in a private mount namespace so that its fixed kubelet socket path points at the
certifier's directory.

Nothing upstream is copied: the build is `go build` of the module's package inside a wrapper module (the one
toolchain/gobuild.py writes for the Kubernetes binaries), into the cache.
"""

from __future__ import annotations

import shlex
import shutil
from collections.abc import Callable
from pathlib import Path

from device_conformance.expectations.versions import KubeVersion
from device_conformance.toolchain.cache import cache_root
from device_conformance.toolchain.gobuild import go_binary, module_gomod, run_go, wrapper_gomod, write_unimported_stubs

SAMPLE_DEVICE_PLUGIN = "k8s.io/kubernetes/test/images/sample-device-plugin"
DRA_TEST_DRIVER = "k8s.io/kubernetes/test/e2e/dra/test-driver"
# test/e2e/dra/test-driver/app/server.go: the default --drivername.
DRA_TEST_DRIVER_NAME = "test-driver.cdi.k8s.io"
# The test driver builds a client from a kubeconfig at start; without a cluster it gets one that leads nowhere
# (publishing ResourceSlices then fails in the background; the kubelet side does not need the API server).
UNREACHABLE_KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: none, cluster: {server: "https://127.0.0.1:9"}}]
contexts: [{name: none, context: {cluster: none, user: none}}]
users: [{name: none, user: {}}]
current-context: none
"""
# The sample's constants (sampledeviceplugin.go): its resource, and where it registers
# (pluginapi.KubeletSocket, pluginapi.DevicePluginPath), which it cannot be told otherwise.
SAMPLE_RESOURCE = "example.com/resource"
# The test driver's --node-name when no cluster is brought up (it refuses to start without one).
NO_CLUSTER_NODE = "certify-node"
KUBELET_ROOT = "/var/lib/kubelet"


def subjects_dir(version: KubeVersion) -> Path:
    return cache_root() / "certify-subjects" / version.tag


def build_sample_device_plugin(version: KubeVersion, progress: Callable[[str], None] = print) -> Path:
    """The sample plugin binary of `version`, built once into the cache."""
    return build_upstream(version, SAMPLE_DEVICE_PLUGIN, progress)


def build_dra_test_driver(version: KubeVersion, progress: Callable[[str], None] = print) -> Path:
    return build_upstream(version, DRA_TEST_DRIVER, progress)


def build_upstream(version: KubeVersion, package: str, progress: Callable[[str], None]) -> Path:
    """`go build` of one main package of k8s.io/kubernetes at `version`, once, into the cache."""
    target = subjects_dir(version) / package.rsplit("/", 1)[-1]
    if target.exists():
        return target
    module = subjects_dir(version) / "module"
    module.mkdir(parents=True, exist_ok=True)
    shared = cache_root() / "gobuild" / version.tag  # the Kubernetes build's go.mod/go.sum, when there is one
    if (shared / "go.mod").exists():
        for name in ("go.mod", "go.sum"):
            if (shared / name).exists():
                shutil.copyfile(shared / name, module / name)
    else:
        (module / "go.mod").write_text(wrapper_gomod(version, module_gomod(version)))
    write_unimported_stubs(module, (module / "go.mod").read_text())
    argv = [go_binary(package, None), "build", "-v", "-o", str(target), package]
    run_go(argv, module, f"{target.name} {version.tag}", progress, env={"GOFLAGS": "-mod=mod"})
    return target


def sample_device_plugin_command(binary: Path, kubelet_root: Path) -> str:
    """Run the sample with `kubelet_root` mounted at /var/lib/kubelet in its own mount namespace (root only):
    the certifier serves kubelet_root/device-plugins/kubelet.sock, the sample sees its fixed path. A tmpfs over
    /var/lib gives the mount point without creating /var/lib/kubelet on the host (nor hiding a real one there
    from anyone but the sample)."""
    bind = f"mount --bind {shlex.quote(str(kubelet_root))} {KUBELET_ROOT}"
    mounts = f"mount -t tmpfs certify /var/lib && mkdir {KUBELET_ROOT} && {bind}"
    inner = f"{mounts} && exec {shlex.quote(str(binary))}"
    return f"unshare --mount --propagation private sh -c {shlex.quote(inner)}"


def dra_test_driver_command(
    binary: Path, root: Path, kubeconfig: Path | None = None, node_name: str = NO_CLUSTER_NODE
) -> str:
    """The test driver's kubelet plugin with its registry, data and CDI directories under `root` (made here:
    the driver creates only the parent of its data directory). `kubeconfig`: the API server it reads claims
    from and publishes its ResourceSlices to (for `node_name`, which must be a Node there: the slices' owner,
    dynamic-resource-allocation resourceslice controller syncPool); without it, one that leads nowhere."""
    (root / "plugins" / DRA_TEST_DRIVER_NAME).mkdir(parents=True, exist_ok=True)
    (root / "registry").mkdir(exist_ok=True)
    if kubeconfig is None:
        kubeconfig = root / "kubeconfig"
        kubeconfig.write_text(UNREACHABLE_KUBECONFIG)
    argv = [str(binary), "--kubeconfig", str(kubeconfig), "kubelet-plugin", "--node-name", node_name]
    argv += ["--plugin-registration-path", str(root / "registry"), "--datadir", str(root / "plugins")]
    argv += ["--cdi-dir", str(root / "cdi")]
    return shlex.join(argv)
