"""A vendor's subject for the e2e suites: `pytest suites --vendor-device-plugin RESOURCE
--vendor-command "..."` or `--vendor-dra-driver DRIVER --vendor-command "..."` runs the black-box tests against
the vendor's device plugin or DRA driver instead of our fakes.

The command is a shell command line with placeholders for the node's paths, filled in per node when the
subject starts (the local provider runs it as a host process, like our fakes; the paths are the host side of
the node's kubelet directories). `upstream:<name>` names one of upstream's own subjects, built from the Go
module of the version under test (certify/upstream.py).

Pure parsing and substitution here (no process, no cluster): tests/vendor/test_vendor_spec.py.
"""

from __future__ import annotations

import re
import shlex
import string
from collections.abc import Mapping
from dataclasses import dataclass

from device_conformance.core.errors import BadInput

DEVICE_PLUGIN, DRA_DRIVER = "device-plugin", "dra-driver"

# Placeholder -> what it becomes (on the local provider: the host path the node sees at that node path).
PLACEHOLDERS: dict[str, str] = {
    "on_node": "words that run the rest of the command on the node, where the kubelet's fixed paths are the "
    "node's (local provider: nsenter into its mount namespace); for a subject with built-in kubelet paths",
    "kubelet_dir": "the node's /var/lib/kubelet",
    "plugin_dir": "the node's /var/lib/kubelet/device-plugins (kubelet.sock; a device plugin serves here)",
    "registry_dir": "the node's /var/lib/kubelet/plugins_registry (a DRA driver's registration socket)",
    "plugins_dir": "the node's /var/lib/kubelet/plugins (a DRA driver's data directory is plugins/<driver>)",
    "cdi_dir": "the node's /var/run/cdi (where the container runtime reads CDI specs)",
    "kubeconfig": "a kubeconfig of the cluster under test (for a DRA driver's ResourceSlices)",
    "node_name": "the node's name",
    "resource": "the --vendor-device-plugin resource name",
    "driver": "the --vendor-dra-driver driver name",
}
# Where each placeholder path is on the node (the provider maps it to a host path).
NODE_PATHS = {
    "kubelet_dir": "/var/lib/kubelet",
    "plugin_dir": "/var/lib/kubelet/device-plugins",
    "registry_dir": "/var/lib/kubelet/plugins_registry",
    "plugins_dir": "/var/lib/kubelet/plugins",
    "cdi_dir": "/var/run/cdi",
}

UPSTREAM_PREFIX = "upstream:"
# Placeholders whose value is several shell words, inserted as they are (not quoted as one word).
RAW_PLACEHOLDERS = ("on_node",)
# Upstream's subjects by short name -> (kind, the name they register). certify/upstream.py builds them.
UPSTREAM_SUBJECTS: dict[str, tuple[str, str]] = {
    # test/images/sample-device-plugin/sampledeviceplugin.go: resourceName
    "sample-device-plugin": (DEVICE_PLUGIN, "example.com/resource"),
    # test/e2e/dra/test-driver/app/server.go: the default --drivername
    "dra-test-driver": (DRA_DRIVER, "test-driver.cdi.k8s.io"),
}
# How each upstream subject runs, {binary} being its build. Both on the node, where their built-in paths are
# the kubelet's: the sample's kubelet socket is fixed (pluginapi.KubeletSocket), and the test driver's defaults
# (kubeletplugin.KubeletRegistryDir / KubeletPluginsDir, --cdi-dir /var/run/cdi) are the kubelet's own.
UPSTREAM_COMMANDS: dict[str, str] = {
    "sample-device-plugin": "{on_node} {binary}",
    "dra-test-driver": "{on_node} {binary} --kubeconfig {kubeconfig} kubelet-plugin --node-name {node_name}",
}


# Upstream subjects the suite can deploy as a DaemonSet itself (--vendor-daemonset upstream:<name>), with the
# namespace and name it gives them (manifests in vendor/manifests/).
UPSTREAM_DAEMONSETS: dict[str, tuple[str, str]] = {
    "sample-device-plugin": ("kube-system", "dc-sample-device-plugin"),
    # with its ServiceAccount and ClusterRole(Binding) for ResourceSlices (vendor/manifests/dra-test-driver.yaml)
    "dra-test-driver": ("kube-system", "dc-dra-test-driver"),
}
# A Kubernetes namespace or DaemonSet name: a DNS label (namespace) / subdomain (object name).
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def upstream_template(short_name: str, binary: str) -> str:
    """The command template of an upstream subject whose binary is at `binary`."""
    quoted = shlex.quote(binary).replace("{", "{{").replace("}", "}}")
    return UPSTREAM_COMMANDS[short_name].replace("{binary}", quoted)


# An extended resource name as the kubelet accepts it from Register (v1helper.IsExtendedResourceName:
# a qualified name with a domain outside kubernetes.io).
_QUALIFIED = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
# A DRA driver name is a DNS subdomain (resource.k8s.io ResourceSlice spec.driver validation).
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


@dataclass(frozen=True)
class VendorSpec:
    """What --vendor-* asked for: the subject's kind, the name it registers, and how it is started."""

    kind: str  # DEVICE_PLUGIN or DRA_DRIVER
    name: str  # the resource name (device plugin) or the driver name (DRA driver)
    command: str  # the command template, or "upstream:<name>"; "" for a DaemonSet subject
    option: str  # which option named the subject, for messages
    # --vendor-daemonset: "NAMESPACE/NAME" of the subject's DaemonSet (kind; already deployed), or
    # "upstream:<name>" (the suite deploys upstream's subject as a DaemonSet itself); "" for a host process.
    daemonset: str = ""

    @property
    def upstream(self) -> str | None:
        """The short name of an upstream subject, or None for a vendor's own command or DaemonSet."""
        given = self.daemonset or self.command
        return given[len(UPSTREAM_PREFIX) :] if given.startswith(UPSTREAM_PREFIX) else None

    @property
    def namespace_name(self) -> tuple[str, str]:
        """The DaemonSet's namespace and name (an upstream subject's: the one the suite deploys)."""
        if self.upstream is not None:
            return UPSTREAM_DAEMONSETS[self.upstream]
        namespace, _, name = self.daemonset.partition("/")
        return namespace, name

    def describe(self) -> str:
        if self.daemonset:
            return f"{self.kind} {self.name} ({self.option}), the DaemonSet {self.daemonset}"
        return f"{self.kind} {self.name} ({self.option}), started with {self.command!r}"


def placeholders_of(command: str) -> list[str]:
    """The placeholder names in a command template; raises BadInput for a malformed one."""
    try:
        fields = [name for _, name, spec, conv in string.Formatter().parse(command) if name is not None]
    except ValueError as exc:
        raise BadInput(
            f"--vendor-command {command!r} is not a valid template: {exc}",
            "write placeholders as {plugin_dir}; a literal brace is written twice ({{ or }})",
        ) from None
    for name in fields:
        if name not in PLACEHOLDERS:
            known = ", ".join("{" + p + "}" for p in PLACEHOLDERS)
            what = "an empty placeholder {}" if not name else f"unknown placeholder {{{name}}}"
            raise BadInput(
                f"--vendor-command {command!r} has {what}",
                f"use only {known} (a literal brace is written twice: {{{{ or }}}})",
            )
    return fields


# A path the command names under {plugin_dir}: the plugin's socket, whose name is then known before it starts.
_SOCKET_IN_PLUGIN_DIR = re.compile(r"\{plugin_dir\}/([^\s'\"{}]+)")


def socket_names(command: str) -> list[str]:
    """The names the command gives paths in {plugin_dir} (e.g. `--socket {plugin_dir}/gpu.sock`)."""
    return _SOCKET_IN_PLUGIN_DIR.findall(command)


def check_socket_names(command: str) -> None:
    """BadInput when a socket the command names in {plugin_dir} could not be dialled by the kubelet, on any
    node: it dials /var/lib/kubelet/device-plugins/<endpoint> (pkg/kubelet/cm/devicemanager/plugin/v1beta1/
    client.go dial), and a Unix socket path holds at most 107 bytes (sun_path, unix(7))."""
    limit = 107 - len(NODE_PATHS["plugin_dir"]) - 1
    for name in socket_names(command):
        if len(name.encode()) > limit:
            path = f"{NODE_PATHS['plugin_dir']}/{name}"
            raise BadInput(
                f"--vendor-command names the socket {{plugin_dir}}/{name}: the kubelet would dial {path}, "
                f"{len(path.encode())} bytes, over sun_path's 107 (unix(7)); no plugin can bind it either",
                f"give the socket a name of at most {limit} bytes",
            )


def parse(
    device_plugin: str | None, dra_driver: str | None, command: str | None, daemonset: str | None = None
) -> VendorSpec | None:
    """The subject the options name, or None when none does; BadInput naming the fix otherwise."""
    device_plugin = (device_plugin or "").strip() or None
    dra_driver = (dra_driver or "").strip() or None
    command = (command or "").strip() or None
    daemonset = (daemonset or "").strip() or None
    if command and daemonset:
        raise BadInput(
            f"--vendor-command {command!r} and --vendor-daemonset {daemonset!r} are both given: the subject is "
            "either a process the suites start (local provider) or a DaemonSet already deployed (kind)",
            "give --vendor-command with --provider local, or --vendor-daemonset NAMESPACE/NAME with --provider kind",
        )
    if device_plugin and dra_driver:
        raise BadInput(
            f"--vendor-device-plugin {device_plugin!r} and --vendor-dra-driver {dra_driver!r} are both given; "
            "a run certifies one subject",
            "give one of them (run the suites twice for a vendor with both a device plugin and a DRA driver)",
        )
    if not device_plugin and not dra_driver:
        if command or daemonset:
            given = f"--vendor-command {command!r}" if command else f"--vendor-daemonset {daemonset!r}"
            raise BadInput(
                f"{given} is given without a subject",
                "also pass --vendor-device-plugin RESOURCE (the extended resource it registers) or "
                "--vendor-dra-driver DRIVER (its driver name)",
            )
        return None
    kind, name, option = (
        (DEVICE_PLUGIN, device_plugin, "--vendor-device-plugin")
        if device_plugin
        else (DRA_DRIVER, dra_driver, "--vendor-dra-driver")
    )
    assert name is not None
    if daemonset:
        return _daemonset_spec(kind, name, option, daemonset)
    if not command:
        example = "upstream:sample-device-plugin" if kind == DEVICE_PLUGIN else "upstream:dra-test-driver"
        raise BadInput(
            f"{option} {name!r} needs --vendor-command: the suites start, kill and restart the subject themselves",
            f'pass --vendor-command "my-binary --socket-dir {{plugin_dir}} ..." (placeholders: '
            f"{', '.join('{' + p + '}' for p in PLACEHOLDERS)}), or e.g. --vendor-command {example}; on kind: "
            "--vendor-daemonset NAMESPACE/NAME (the subject deployed as a DaemonSet)",
        )
    _check_name(kind, name)
    spec = VendorSpec(kind, name, command, option)
    upstream = spec.upstream
    if upstream is not None:
        if upstream not in UPSTREAM_SUBJECTS:
            known = ", ".join(UPSTREAM_PREFIX + n for n in UPSTREAM_SUBJECTS)
            raise BadInput(f"--vendor-command {command!r} names no upstream subject", f"use one of: {known}")
        upstream_kind, upstream_name = UPSTREAM_SUBJECTS[upstream]
        if upstream_kind != kind:
            right = "--vendor-device-plugin" if upstream_kind == DEVICE_PLUGIN else "--vendor-dra-driver"
            raise BadInput(
                f"--vendor-command {command!r} is a {upstream_kind}, but {option} names a {kind}",
                f"pass {right} {upstream_name} with it",
            )
        if upstream_name != name:
            raise BadInput(
                f"{option} {name!r} is not what {command} registers ({upstream_name!r}; it cannot be told another)",
                f"pass {option} {upstream_name}",
            )
    else:
        placeholders_of(command)
        check_socket_names(command)
    return spec


def _check_name(kind: str, name: str) -> None:
    """BadInput unless `name` is what a subject of `kind` can register."""
    if kind == DEVICE_PLUGIN and (not _QUALIFIED.match(name) or name.split("/")[0].endswith("kubernetes.io")):
        raise BadInput(
            f"--vendor-device-plugin {name!r} is not an extended resource name",
            "give the resource the plugin registers, as <domain>/<name> outside kubernetes.io, e.g. vendor.com/gpu",
        )
    if kind == DRA_DRIVER and (not _DNS_SUBDOMAIN.match(name) or len(name) > 63):
        raise BadInput(
            f"--vendor-dra-driver {name!r} is not a DRA driver name (a lower-case DNS subdomain of at most 63 "
            "characters)",
            "give the driver name the driver registers and publishes ResourceSlices for, e.g. gpu.vendor.com",
        )


def _daemonset_spec(kind: str, name: str, option: str, daemonset: str) -> VendorSpec:
    """--vendor-daemonset NAMESPACE/NAME or upstream:<name>, checked (the subject's name rules: parse())."""
    if daemonset.startswith(UPSTREAM_PREFIX):
        upstream = daemonset[len(UPSTREAM_PREFIX) :]
        if upstream not in UPSTREAM_DAEMONSETS:
            known = ", ".join(UPSTREAM_PREFIX + n for n in UPSTREAM_DAEMONSETS)
            raise BadInput(
                f"--vendor-daemonset {daemonset!r} names no upstream subject the suite deploys as a DaemonSet",
                f"use one of: {known} (or NAMESPACE/NAME of your own DaemonSet)",
            )
        upstream_kind, upstream_name = UPSTREAM_SUBJECTS[upstream]
        if (upstream_kind, upstream_name) != (kind, name):
            right = "--vendor-device-plugin" if upstream_kind == DEVICE_PLUGIN else "--vendor-dra-driver"
            raise BadInput(
                f"{option} {name!r} is not what {daemonset} registers ({upstream_kind} {upstream_name!r})",
                f"pass {right} {upstream_name}",
            )
        return VendorSpec(kind, name, "", option, daemonset)
    namespace, slash, ds_name = daemonset.partition("/")
    if not slash or not _DNS_LABEL.match(namespace) or not _DNS_SUBDOMAIN.match(ds_name) or len(ds_name) > 253:
        raise BadInput(
            f"--vendor-daemonset {daemonset!r} is not NAMESPACE/NAME of a DaemonSet",
            "give the namespace and name of the subject's DaemonSet, e.g. --vendor-daemonset kube-system/gpu-plugin",
        )
    _check_name(kind, name)
    return VendorSpec(kind, name, "", option, daemonset)


def render(command: str, values: Mapping[str, str]) -> str:
    """The command with each placeholder replaced by its shell-quoted value (a path with spaces stays one word).

    `values` must have every placeholder the command uses (placeholders_of checked the names already)."""
    missing = [name for name in placeholders_of(command) if name not in values]
    if missing:
        raise BadInput(
            f"--vendor-command {command!r} uses {', '.join('{' + m + '}' for m in missing)}, which this run has "
            "no value for",
            "use the placeholders of your subject's kind: {resource} for a device plugin, {driver} and "
            "{kubeconfig} for a DRA driver",
        )
    quoted = {name: value if name in RAW_PLACEHOLDERS else shlex.quote(str(value)) for name, value in values.items()}
    return command.format(**quoted)
