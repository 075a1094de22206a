"""Every knob of a run, resolved once: the command-line option, else the environment variable, else the default.

Each value remembers where it came from, so an error or the report header says `K8S_VERSION='1.37'
(environment)` rather than a bare value. The pytest plugin (its options are declared from KNOBS) and
the CLI both call resolve(); nothing else reads these variables.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, Literal, TypeVar

from device_conformance import vendor_spec
from device_conformance.errors import BadInput
from device_conformance.expectations.kind import default_node_image
from device_conformance.expectations.versions import (
    DEFAULT_K8S_VERSION,
    KUBELET_SKEW_MINORS,
    PREVIOUS_MINOR_VERSION,
    KubeVersion,
    kubelet_skew_allows,
)
from device_conformance.toolchain import containerd
from device_conformance.toolchain.source_tree import VERSION_FILE, tree_version

PROVIDERS = ("local", "kind", "existing")
T = TypeVar("T")


@dataclass(frozen=True)
class Knob:
    """One setting: its option (pytest and CLI), its environment variable, what it means."""

    name: str
    option: str | None
    env: str | None
    help: str
    flag: bool = False  # a store_true option; the variable counts as set unless empty or "0"

    def help_text(self) -> str:
        return f"{self.help} (env {self.env})" if self.env else self.help


KNOBS: dict[str, Knob] = {
    knob.name: knob
    for knob in (
        Knob(
            "provider",
            "--provider",
            "PROVIDER",
            "where the cluster comes from: local, kind, existing, or auto (default auto: existing when a "
            "kubeconfig is given, else local)",
        ),
        Knob(
            "k8s_version",
            "--k8s-version",
            "K8S_VERSION",
            f"Kubernetes version under test (default {DEFAULT_K8S_VERSION})",
        ),
        Knob(
            "kubeconfig",
            "--kubeconfig",
            "DEVICE_CONFORMANCE_KUBECONFIG",
            "kubeconfig of an existing cluster (with --provider existing, which falls back to KUBECONFIG)",
        ),
        Knob(
            "k8s_bin_dir",
            "--k8s-bin-dir",
            "K8S_BIN_DIR",
            "directory with kubelet, kube-apiserver, kube-controller-manager, kube-scheduler",
        ),
        Knob(
            "k8s_source",
            "--k8s-source",
            "K8S_SOURCE",
            "Kubernetes source tree (a checkout, or `device-conformance k8s-source get`) to build the binaries "
            "from; the version is the tree's own unless K8S_VERSION says it (local provider only)",
        ),
        Knob(
            "kubelet_version",
            "--kubelet-version",
            "KUBELET_VERSION",
            "kubelet release on the node when it is not the control plane's (version skew: up to "
            f"{KUBELET_SKEW_MINORS} minors older; local provider only; only its kubelet is built; default: "
            "the version under test)",
        ),
        Knob(
            "upgrade_from",
            "--upgrade-from",
            "UPGRADE_FROM",
            "kubelet version the upgrade tests start from, one minor below the version under test "
            f"(default {PREVIOUS_MINOR_VERSION})",
        ),
        Knob(
            "keep_cluster",
            "--keep-cluster",
            "KEEP_CLUSTER",
            "leave the cluster running after the session and print its kubeconfig",
            flag=True,
        ),
        Knob(
            "kind_cluster",
            "--kind-cluster",
            "KIND_CLUSTER",
            "--provider kind: reuse this existing kind cluster (never deleted); default: create one per worker",
        ),
        Knob(
            "kind_image",
            "--kind-image",
            "KIND_NODE_IMAGE",
            "--provider kind: node image (default kindest/node:v<k8s-version>)",
        ),
        Knob(
            "kind_profile",
            "--kind-profile",
            "KIND_PROFILE",
            "--provider kind: a config from kind-configs/ (default single-node)",
        ),
        Knob(
            "vendor_device_plugin",
            "--vendor-device-plugin",
            "VENDOR_DEVICE_PLUGIN",
            "run the black-box tests against a vendor's device plugin registering this extended resource (with "
            "--vendor-command); tests that need our fake's fault injection are NOT APPLICABLE",
        ),
        Knob(
            "vendor_dra_driver",
            "--vendor-dra-driver",
            "VENDOR_DRA_DRIVER",
            "run the black-box tests against a vendor's DRA kubelet plugin with this driver name (with "
            "--vendor-command); tests that need our fake's fault injection are NOT APPLICABLE",
        ),
        Knob(
            "vendor_command",
            "--vendor-command",
            "VENDOR_COMMAND",
            "how the suites start the vendor's subject on the node: a shell command with placeholders "
            + ", ".join("{" + p + "}" for p in vendor_spec.PLACEHOLDERS)
            + "; or upstream:sample-device-plugin / upstream:dra-test-driver (built from the version under test)",
        ),
        Knob(
            "vendor_daemonset",
            "--vendor-daemonset",
            "VENDOR_DAEMONSET",
            "--provider kind or existing: the vendor's device plugin or DRA kubelet plugin is this DaemonSet "
            "(NAMESPACE/NAME), already deployed; restarted by deleting its pod, stopped by a node label its pods must "
            "not match, SIGKILLed through the node; or upstream:sample-device-plugin / upstream:dra-test-driver "
            "(kind: the suite deploys and removes it). Instead of --vendor-command",
        ),
        Knob(
            "allow_node_disruption",
            "--allow-node-disruption",
            "ALLOW_NODE_DISRUPTION",
            "--provider existing: NODE[,NODE...] the suite may disturb (kubelet restarts and stops, signals, "
            "checkpoint files, pod sandboxes): it runs its privileged node agent there, and only there, and "
            "removes it afterwards; without it every node-fault test skips",
        ),
        Knob(
            "node_agent_image",
            "--node-agent-image",
            "NODE_AGENT_IMAGE",
            "--provider existing: the node agent's image (default: built locally, "
            "device-conformance.local/node-agent:<content hash>; `device-conformance node-agent image` builds it "
            "and prints how to load it into the nodes)",
        ),
        Knob(
            "containerd_version",
            None,
            "CONTAINERD_VERSION",
            f"containerd 2.x release the local provider builds and runs (default {containerd.DEFAULT_VERSION})",
        ),
    )
}


@dataclass(frozen=True)
class Source:
    """Where a value came from."""

    kind: Literal["option", "environment", "default"]
    name: str = ""  # the option or variable
    note: str = ""  # how a default was chosen

    def __str__(self) -> str:
        where = f"{self.kind} {self.name}" if self.name else self.kind
        return f"{where}: {self.note}" if self.note else where

    def shows(self, text: str) -> str:
        """The value as the user wrote it, for error messages."""
        if self.kind == "option":
            return f"{self.name} {text!r}"
        if self.kind == "environment":
            return f"{self.name}={text!r} (environment)"
        return repr(text)

    def undo(self) -> str:
        if self.kind == "option":
            return f"or drop {self.name} for the default"
        if self.kind == "environment":
            return f"or unset {self.name} for the default"
        return "this is a bug in the defaults"


DEFAULT = Source("default")


@dataclass(frozen=True)
class Setting(Generic[T]):
    value: T
    source: Source

    def __str__(self) -> str:
        return f"{self.value} ({self.source})"


@dataclass(frozen=True)
class Settings:
    provider: Setting[str]
    k8s_version: Setting[KubeVersion]
    kubeconfig: Setting[Path | None]
    k8s_bin_dir: Setting[Path | None]
    k8s_source: Setting[Path | None]
    # The node's kubelet; k8s_version is the control plane's (the same unless KUBELET_VERSION says otherwise).
    kubelet_version: Setting[KubeVersion]
    upgrade_from: Setting[KubeVersion]
    keep_cluster: Setting[bool]
    kind_cluster: Setting[str | None]
    kind_image: Setting[str]
    kind_profile: Setting[str | None]
    containerd_version: Setting[str]
    # The vendor's subject the black-box tests run against (issue 12, part 2); None: our fakes.
    vendor: Setting[vendor_spec.VendorSpec | None] = Setting(None, Source("default"))
    # --provider existing: the nodes the suite may disturb through its node agent (None: none, node tests skip).
    allow_node_disruption: Setting[tuple[str, ...] | None] = Setting(None, Source("default"))
    node_agent_image: Setting[str | None] = Setting(None, Source("default"))


def resolve(
    options: Mapping[str, object] | None = None,
    environ: Mapping[str, str] | None = None,
    *,
    option_names: Mapping[str, str] | None = None,
) -> Settings:
    """Settings from `options` (knob name -> value given on the command line, None when not given),
    then `environ` (default os.environ), then the defaults. `option_names` renames options in messages
    for a command whose option differs from the pytest one (e.g. `kind render --profile`).

    Raises BadInput naming the value, where it came from and the fix."""
    return _Resolver(options or {}, os.environ if environ is None else environ, option_names or {}).settings()


def from_options(getoption: Callable[[str], object], environ: Mapping[str, str] | None = None) -> Settings:
    """Settings from a pytest-style getoption("--name") whose options were declared from KNOBS (default None)."""
    given = {name: getoption(knob.option) for name, knob in KNOBS.items() if knob.option is not None}
    return resolve(given, environ)


class _Resolver:
    def __init__(self, options: Mapping[str, object], environ: Mapping[str, str], names: Mapping[str, str]) -> None:
        self.options = options
        self.environ = environ
        self.names = names

    def raw(self, name: str, *, empty_is_unset: bool = True) -> tuple[str | None, Source]:
        knob = KNOBS[name]
        given = self.options.get(name)
        if given is not None and not (empty_is_unset and given == ""):
            return str(given), Source("option", self.names.get(name, knob.option or ""))
        text = self.environ.get(knob.env) if knob.env else None
        if text is not None and not (empty_is_unset and text == ""):
            return text, Source("environment", knob.env or "")
        return None, DEFAULT

    def parsed(self, name: str, parse: Callable[[str], T], default: T) -> Setting[T]:
        text, source = self.raw(name)
        if text is None:
            return Setting(default, DEFAULT)
        try:
            return Setting(parse(text), source)
        except BadInput as exc:
            raise BadInput(
                f"{source.shows(text)} is not usable: {exc.problem}", f"{exc.fix}; {source.undo()}"
            ) from None

    def text(self, name: str) -> Setting[str | None]:
        text, source = self.raw(name)
        return Setting(text, source)

    def settings(self) -> Settings:
        bin_dir = self.parsed("k8s_bin_dir", Path, None)
        source = self.k8s_source(bin_dir)
        version = self.k8s_version(source)
        kubeconfig = self.kubeconfig()
        provider = self.provider(kubeconfig)
        if provider.value == "existing":
            kubeconfig = self.existing_kubeconfig(provider, kubeconfig)
        if source.value is not None and provider.value != "local":
            raise BadInput(
                f"{source.source.shows(str(source.value))} builds binaries for the local provider, "
                f"but the provider is {provider}",
                "use --provider local, or drop K8S_SOURCE: kind runs a node image (`kind build node-image` "
                "makes one from the tree) and an existing cluster runs what it runs",
            )
        image, image_source = self.raw("kind_image")
        kubelet = self.kubelet_version(version, provider)
        return Settings(
            provider=provider,
            k8s_version=version,
            kubeconfig=kubeconfig,
            k8s_bin_dir=bin_dir,
            k8s_source=source,
            kubelet_version=kubelet,
            upgrade_from=self.upgrade_from(kubelet),
            keep_cluster=self.flag("keep_cluster"),
            kind_cluster=self.text("kind_cluster"),
            kind_image=Setting(image, image_source)
            if image is not None
            else Setting(default_node_image(version.value), Source("default", note=f"for {version.value}")),
            kind_profile=self.text("kind_profile"),
            containerd_version=self.parsed("containerd_version", containerd.release, containerd.DEFAULT_VERSION),
            vendor=self.vendor(provider),
            allow_node_disruption=self.allow_node_disruption(provider),
            node_agent_image=self.node_agent_image(provider),
        )

    def k8s_source(self, bin_dir: Setting[Path | None]) -> Setting[Path | None]:
        source = self.parsed("k8s_source", Path, None)
        if source.value is None:
            return source
        shown = source.source.shows(str(source.value))
        if bin_dir.value is not None:
            raise BadInput(
                f"{shown} and {bin_dir.source.shows(str(bin_dir.value))} both say where the Kubernetes binaries "
                "come from",
                "give one: K8S_SOURCE to build them from the tree, or K8S_BIN_DIR for binaries you built yourself",
            )
        if not source.value.is_dir():
            raise BadInput(
                f"{shown} is not a directory",
                f"point it at a Kubernetes source tree (`device-conformance k8s-source get VERSION DIR` makes one), "
                f"{source.source.undo()}",
            )
        return Setting(source.value.absolute(), source.source)

    def k8s_version(self, source: Setting[Path | None]) -> Setting[KubeVersion]:
        """The version under test. With a source tree: the tree's own (its version file, or git describe),
        which K8S_VERSION may repeat but not contradict; a tree that says nothing needs K8S_VERSION."""
        version = self.parsed("k8s_version", KubeVersion.parse, DEFAULT_K8S_VERSION)
        if source.value is None:
            return version
        tree = tree_version(source.value)
        if version.source != DEFAULT:
            if tree is not None and tree.version != version.value:
                raise BadInput(
                    f"{version.source.shows(str(version.value))} contradicts K8S_SOURCE: {tree.how}",
                    f"set K8S_VERSION={tree.version} (or unset it to use the tree's), or fix the tree's version",
                )
            return version
        if tree is None:
            raise BadInput(
                f"{source.source.shows(str(source.value))} does not say which Kubernetes release it is "
                f"(no {VERSION_FILE}, not a git checkout with tags)",
                "set K8S_VERSION=MAJOR.MINOR.PATCH to the release the tree is based on: the binaries are stamped "
                "with it and version-dependent expectations use it",
            )
        return Setting(tree.version, Source("default", note=f"from the tree: {tree.how}"))

    def kubelet_version(self, version: Setting[KubeVersion], provider: Setting[str]) -> Setting[KubeVersion]:
        """The node's kubelet: the control plane's release unless KUBELET_VERSION names an older one within
        the version-skew policy (what `bisect` swaps, so each step builds one binary instead of four)."""
        kubelet = self.parsed("kubelet_version", KubeVersion.parse, version.value)
        if kubelet.source == DEFAULT:
            return Setting(version.value, Source("default", note="the version under test"))
        if kubelet.value == version.value:
            return kubelet
        shown, undo = kubelet.source.shows(str(kubelet.value)), kubelet.source.undo()
        plane = f"the control plane's {version.value} ({version.source})"
        if provider.value != "local":
            raise BadInput(
                f"{shown} differs from {plane}, and only the local provider runs a kubelet of another release "
                f"(provider {provider})",
                f"use --provider local, {undo}",
            )
        if kubelet.value > version.value:
            raise BadInput(
                f"{shown} is newer than {plane}: the version-skew policy never allows a kubelet newer than "
                "kube-apiserver",
                f"set K8S_VERSION to {kubelet.value} or newer, {undo}",
            )
        if not kubelet_skew_allows(version.value, kubelet.value):
            oldest = f"{version.value.major}.{version.value.minor - KUBELET_SKEW_MINORS}"
            raise BadInput(
                f"{shown} is more than {KUBELET_SKEW_MINORS} minors older than {plane}, outside the version-skew "
                "policy (kubernetes.io/releases/version-skew-policy)",
                f"use a {oldest}.x or newer kubelet, or lower K8S_VERSION; {undo}",
            )
        return kubelet

    def upgrade_from(self, version: Setting[KubeVersion]) -> Setting[KubeVersion]:
        """The upgrade tests' starting kubelet. One the user names must be older than the version under test:
        an upgrade to the same or an older release tests no upgrade. The default is not judged here (a
        matrix run of an older minor skips the upgrade tests, saying why)."""
        upgrade = self.parsed("upgrade_from", KubeVersion.parse, PREVIOUS_MINOR_VERSION)
        if upgrade.source != DEFAULT and upgrade.value >= version.value:
            wanted = version.value
            example = f" (e.g. {PREVIOUS_MINOR_VERSION})" if PREVIOUS_MINOR_VERSION.previous_minor_of(wanted) else ""
            raise BadInput(
                f"{upgrade.source.shows(str(upgrade.value))} is not older than the version under test "
                f"{wanted} ({version.source}): an upgrade test goes from an older kubelet to {wanted}",
                f"set UPGRADE_FROM to a {wanted.major}.{wanted.minor - 1}.x release{example}, {upgrade.source.undo()}",
            )
        return upgrade

    def vendor(self, provider: Setting[str]) -> Setting[vendor_spec.VendorSpec | None]:
        """The vendor's subject. Options and variables mix (VENDOR_COMMAND with --vendor-device-plugin);
        messages name the options."""
        names = ("vendor_device_plugin", "vendor_dra_driver", "vendor_command", "vendor_daemonset")
        raw = {name: self.raw(name) for name in names}
        spec = vendor_spec.parse(*(text for text, _ in raw.values()))
        if spec is None:
            return Setting(None, DEFAULT)
        if spec.daemonset and provider.value not in ("kind", "existing"):
            raise BadInput(
                f"--vendor-daemonset {spec.daemonset} drives the subject's DaemonSet through the provider's node "
                f"control (kind, or an existing cluster's node agent); the provider is {provider}",
                "use --provider kind, or --provider existing with --allow-node-disruption NODE "
                "(on --provider local pass --vendor-command)",
            )
        if spec.daemonset and spec.upstream is not None and provider.value == "existing":
            raise BadInput(
                f"--vendor-daemonset {spec.daemonset} deploys upstream's subject from an image built here, which "
                "only kind nodes can be loaded with by the suite",
                "deploy the subject on your cluster yourself (its manifest: "
                "src/device_conformance/vendor_manifests/<name>.yaml) and pass --vendor-daemonset NAMESPACE/NAME",
            )
        if not spec.daemonset and provider.value != "local":
            raise BadInput(
                f"{spec.option} runs the subject as a process on the host with the node's paths, which only the "
                f"local provider has; the provider is {provider}",
                "use --provider local, or on kind or an existing cluster --vendor-daemonset NAMESPACE/NAME (the "
                "subject as a DaemonSet)",
            )
        sources = [source for text, source in raw.values() if text is not None]
        return Setting(spec, next((s for s in sources if s.kind == "option"), sources[0]))

    def allow_node_disruption(self, provider: Setting[str]) -> Setting[tuple[str, ...] | None]:
        """The nodes the node agent may run on (existing clusters only: local and kind nodes are ours already)."""
        text, source = self.raw("allow_node_disruption")
        if text is None:
            return Setting(None, DEFAULT)
        shown = source.shows(text)
        if provider.value != "existing":
            raise BadInput(
                f"{shown} deploys the node agent on an existing cluster; the provider is {provider}",
                f"use --provider existing --kubeconfig PATH (local and kind nodes need no agent), {source.undo()}",
            )
        names = [name.strip() for name in text.split(",")]
        if any(not name for name in names):
            raise BadInput(
                f"{shown} has an empty node name",
                f"give the nodes the suite may disturb, comma-separated as `kubectl get nodes` names them, "
                f"{source.undo()}",
            )
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise BadInput(f"{shown} names {', '.join(repeated)} more than once", "name each node once")
        return Setting(tuple(names), source)

    def node_agent_image(self, provider: Setting[str]) -> Setting[str | None]:
        text, source = self.raw("node_agent_image")
        if text is not None and provider.value != "existing":
            raise BadInput(
                f"{source.shows(text)} is the image of the node agent, which only --provider existing deploys; "
                f"the provider is {provider}",
                f"drop it, or use --provider existing --allow-node-disruption NODE; {source.undo()}",
            )
        return Setting(text, source)

    def flag(self, name: str) -> Setting[bool]:
        given = self.options.get(name)
        if given:
            return Setting(True, Source("option", self.names.get(name, KNOBS[name].option or "")))
        env = KNOBS[name].env or ""
        if self.environ.get(env, "") not in ("", "0"):
            return Setting(True, Source("environment", env))
        return Setting(False, DEFAULT)

    def kubeconfig(self) -> Setting[Path | None]:
        text, source = self.raw("kubeconfig", empty_is_unset=False)
        if text is None:
            return Setting(None, DEFAULT)
        if not text.strip():
            # Path("") is ".", which exists: an empty value must not pass for a kubeconfig.
            raise BadInput(
                f"{source.shows(text)} is empty",
                f"give the path of the cluster's kubeconfig, {source.undo()} (no existing cluster)",
            )
        return Setting(Path(text), source)

    def provider(self, kubeconfig: Setting[Path | None]) -> Setting[str]:
        text, source = self.raw("provider")
        name = (text or "auto").strip()
        if name not in (*PROVIDERS, "auto"):
            raise BadInput(
                f"{source.shows(text or '')} is not a provider",
                f"choose one of: {', '.join(PROVIDERS)} (or auto); {source.undo()}",
            )
        if name != "auto":
            return Setting(name, source)
        if kubeconfig.value is not None:
            return Setting(
                "existing", Source(source.kind, source.name, f"auto, a kubeconfig is given ({kubeconfig.source})")
            )
        return Setting("local", Source(source.kind, source.name, "auto, no kubeconfig given"))

    def existing_kubeconfig(self, provider: Setting[str], kubeconfig: Setting[Path | None]) -> Setting[Path | None]:
        if kubeconfig.value is None and self.environ.get("KUBECONFIG", "").strip():
            kubeconfig = Setting(Path(self.environ["KUBECONFIG"]), Source("environment", "KUBECONFIG"))
        if kubeconfig.value is None:
            raise BadInput(
                f"provider existing ({provider.source}) needs the kubeconfig of the cluster under test; none is given",
                "pass --kubeconfig PATH, or set DEVICE_CONFORMANCE_KUBECONFIG (or KUBECONFIG)",
            )
        if not kubeconfig.value.exists():
            raise BadInput(
                f"kubeconfig {kubeconfig.value} ({kubeconfig.source}) does not exist",
                "point it at the kubeconfig of the cluster under test",
            )
        return kubeconfig
