"""Upstream's sample device plugin (k8s.io/kubernetes test/images/sample-device-plugin) as a real
third-party subject: built from the Go module of the Kubernetes version under test, run in a private mount
namespace so that its fixed kubelet socket path points at the certifier's directory.

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
from device_conformance.toolchain.gobuild import go_binary, module_gomod, run_go, wrapper_gomod

SAMPLE_DEVICE_PLUGIN = "k8s.io/kubernetes/test/images/sample-device-plugin"
# The sample's constants (sampledeviceplugin.go): its resource, and where it registers
# (pluginapi.KubeletSocket, pluginapi.DevicePluginPath), which it cannot be told otherwise.
SAMPLE_RESOURCE = "example.com/resource"
KUBELET_ROOT = "/var/lib/kubelet"


def subjects_dir(version: KubeVersion) -> Path:
    return cache_root() / "certify-subjects" / version.tag


def build_sample_device_plugin(version: KubeVersion, progress: Callable[[str], None] = print) -> Path:
    """The sample plugin binary of `version`, built once into the cache."""
    target = subjects_dir(version) / "sample-device-plugin"
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
    argv = [go_binary("the sample device plugin", None), "build", "-v", "-o", str(target), SAMPLE_DEVICE_PLUGIN]
    run_go(argv, module, f"sample-device-plugin {version.tag}", progress, env={"GOFLAGS": "-mod=mod"})
    return target


def sample_device_plugin_command(binary: Path, kubelet_root: Path) -> str:
    """Run the sample with `kubelet_root` mounted over /var/lib/kubelet in its own mount namespace (root only):
    the certifier serves kubelet_root/device-plugins/kubelet.sock, the sample sees its fixed path."""
    inner = f"mount --bind {shlex.quote(str(kubelet_root))} {KUBELET_ROOT} && exec {shlex.quote(str(binary))}"
    return f"unshare --mount --propagation private sh -c {shlex.quote(inner)}"
