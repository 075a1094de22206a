"""Every knob of a run, resolved once: the command-line option, else the environment variable, else the default.

Each value remembers where it came from, so an error or the report header says `K8S_VERSION='1.37'
(environment)` rather than a bare value. The pytest plugin (its options are declared from KNOBS) and
the CLI both call resolve(); nothing else reads these variables.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, Literal, TypeVar

import yaml

from device_conformance.core.errors import BadInput
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
from device_conformance.vendor import spec as vendor_spec

T = TypeVar("T")

# What the local provider's --v and kind's logging.verbosity were before the knob: tests read lines the kubelet
# logs at V(2), e.g. the DRA plugin manager's "Connection changed" (wait/dra.for_kubelet_connection).
DEFAULT_KUBELET_VERBOSITY = 2
# The components a gate of --feature-gates goes to: the names a user may write -> the binary's name.
COMPONENTS = ("kubelet", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
COMPONENT_ALIASES = {
    "kubelet": "kubelet",
    "apiserver": "kube-apiserver",
    "kube-apiserver": "kube-apiserver",
    "controller-manager": "kube-controller-manager",
    "kube-controller-manager": "kube-controller-manager",
    "scheduler": "kube-scheduler",
    "kube-scheduler": "kube-scheduler",
}
# Kubelet flags the providers set themselves (providers/local/components.kubelet_argv; kind's kubeadm): given
# again through --kubelet-arg they would contradict them. The value: what to use instead.
OWNED_KUBELET_FLAGS = {
    "v": "--kubelet-verbosity N",
    "feature-gates": "--feature-gates kubelet:NAME=true",
    "config": "--kubelet-config KEY=VALUE (fields merged into the provider's config file)",
    "kubeconfig": "nothing: the provider writes the kubelet's kubeconfig",
    "root-dir": "nothing: the suites rely on /var/lib/kubelet",
    "hostname-override": "nothing: the node's name is the provider's",
    "node-ip": "nothing: the node's address is the provider's",
}
# KubeletConfiguration fields with a knob of their own.
OWNED_KUBELET_FIELDS = {
    "featureGates": "--feature-gates kubelet:NAME=true",
    "logging.verbosity": "--kubelet-verbosity N",
}
_GATE = re.compile(r"(?:(?P<component>[a-z-]+):)?(?P<name>[A-Za-z][A-Za-z0-9]*)=(?P<value>[A-Za-z]+)")
_FLAG = re.compile(r"--(?P<name>[a-z0-9][a-z0-9-]*)(?:=(?P<value>.*))?", re.DOTALL)
# How a component refuses a gate at start-up (k8s.io/component-base featuregate/feature_gate.go, SetFromMap)
# and the kubelet an unknown flag (spf13/pflag, failed to parse).
_REFUSED_GATE = re.compile(
    r"unrecognized feature gate: (?P<name>[A-Za-z0-9]+)"
    r"|cannot set feature gate (?P<locked>[A-Za-z0-9]+) to \S+, feature is locked to \S+"
    r"|(?P<dependent>[A-Za-z0-9]+) is enabled, but depends on features that are disabled: \[(?P<deps>[A-Za-z0-9 ]*)\]"
)
_UNKNOWN_FLAG = re.compile(r"unknown flag: --(?P<name>[a-z0-9-]+)")


@dataclass(frozen=True)
class ProviderCapabilities:
    """What a provider can do, as the settings, the plugin, the fixtures and the CLI ask it: every question they
    used to answer by comparing the provider's name. The table lives here, not in providers/, because settings sit
    below the providers in the layer contract (pyproject.toml) and validate the knobs against it; the provider's
    code is named by dotted path ("module:function") and imported only when used (providers.load)."""

    # "module:function" making the Provider from the resolved Settings: (settings, *, log, artifacts) -> Provider.
    make: str
    # "module:function" doing `device-conformance setup` for it: (settings, *, install_packages) -> exit status;
    # None: nothing to set up (the cluster is there already, as `make setup PROVIDER=existing`).
    setup: str | None
    # `device-conformance cluster VERB --provider NAME`: each verb it answers -> "module:function" doing it,
    # (settings, args) -> exit status. cli/cluster.py dispatches; a verb missing here is an error naming the
    # providers that answer it. They live with the provider (providers/<provider>/cluster_verbs.py), so a new
    # provider is its folder and this entry.
    cluster_verbs: Mapping[str, str]
    # "module:function" tearing down its clusters whose owning process is gone, (log) -> their names: the xdist
    # controller calls it once its workers are gone, for a worker killed before its teardown
    # (pytest_plugin/worker_leftovers.py). None: it leaves none (one shared cluster) or they go with the session.
    leftovers: str | None
    # Where the Kubernetes under test comes from, as the report header says it: "host binaries" (the cache,
    # K8S_BIN_DIR, or built from K8S_SOURCE, so a source tree and a kubelet of another release can be given),
    # "node image" (kind runs what its image holds), "the cluster" (read from it: kube/versions.read_versions).
    kubernetes_from: Literal["host binaries", "node image", "the cluster"]
    # Brings up clusters of its own (one per xdist worker) and starts their components, so the component knobs
    # apply; False: one cluster given by --kubeconfig that every worker shares, configured as it was set up.
    brings_up_clusters: bool
    # --kind-cluster NAME reuses one of its clusters as it was created (then every worker shares it).
    reuses_named_cluster: bool
    # Its nodes are containers of a Docker engine: the controller owns the engine and checks the prerequisites
    # before xdist spawns workers (pytest_plugin/provider_preflight.py).
    nodes_in_docker: bool
    # Its nodes see a host directory at the same path (kind binds one into every node) for files the kubelet
    # hands to containers; a cluster the suite did not create may lack it (fixtures/cluster.node_tmp_path).
    binds_shared_dir: bool
    # Node access only through the suite's node agent on the nodes the user allows (--allow-node-disruption,
    # --node-agent-image; providers/agent/): local and kind nodes are the suite's own.
    node_agent: bool
    # The node's kubelet binary can be swapped for an older one (the upgrade tests): not through the node agent.
    swaps_kubelet: bool
    # The node's paths are on this host, so the vendor's subject can run as a host process (--vendor-command).
    vendor_command_on_host: bool
    # The vendor's subject can be a DaemonSet driven through the provider's node control (--vendor-daemonset).
    vendor_daemonset: bool
    # Images built here can be loaded into its nodes (upstream's subject as a DaemonSet of an image built here).
    loads_local_images: bool
    # xdist workers `-n auto` starts: floor(per_spare_core x spare cores) + extra (pytest_plugin/workers.py says
    # how these were measured).
    workers_per_spare_core: int
    extra_workers: int

    @property
    def runs_host_binaries(self) -> bool:
        """K8S_SOURCE and KUBELET_VERSION apply: the nodes run Kubernetes binaries from this host."""
        return self.kubernetes_from == "host binaries"


PROVIDER_CAPABILITIES: dict[str, ProviderCapabilities] = {
    "local": ProviderCapabilities(
        make="device_conformance.providers.local.provider:from_settings",
        setup="device_conformance.providers.local.setup:from_settings",
        cluster_verbs={
            "up": "device_conformance.providers.local.cluster_verbs:up",
            "list": "device_conformance.providers.local.cluster_verbs:list_runs",
            "down": "device_conformance.providers.local.cluster_verbs:down",
            "cleanup": "device_conformance.providers.local.cluster_verbs:cleanup",
        },
        leftovers="device_conformance.providers.local.leftovers:clean_leftovers",
        kubernetes_from="host binaries",
        brings_up_clusters=True,
        reuses_named_cluster=False,
        nodes_in_docker=False,
        binds_shared_dir=False,  # the kubelet runs on this host: a test's tmp_path is the node's path already
        node_agent=False,
        swaps_kubelet=True,
        vendor_command_on_host=True,
        vendor_daemonset=False,  # no node control for a DaemonSet's pods: --vendor-command instead
        loads_local_images=True,  # `ctr images import` into its containerd (providers/local/cluster.py)
        # A local cluster is host processes that mostly wait on the kubelet: a quarter of a core each.
        workers_per_spare_core=4,
        extra_workers=0,
    ),
    "kind": ProviderCapabilities(
        make="device_conformance.providers.kind.provider:from_settings",
        setup="device_conformance.providers.kind.setup:from_settings",
        cluster_verbs={
            "config": "device_conformance.providers.kind.cluster_verbs:config",
            "list": "device_conformance.providers.kind.cluster_verbs:list_clusters",
            "down": "device_conformance.providers.kind.cluster_verbs:down",
            "cleanup": "device_conformance.providers.kind.cluster_verbs:cleanup",
            "build-node-image": "device_conformance.providers.kind.cluster_verbs:build_node_image",
        },
        leftovers="device_conformance.providers.kind.provider:sweep_orphans",
        kubernetes_from="node image",
        brings_up_clusters=True,
        reuses_named_cluster=True,
        nodes_in_docker=True,
        binds_shared_dir=True,
        node_agent=False,
        swaps_kubelet=True,
        vendor_command_on_host=False,  # the node's paths are inside its container
        vendor_daemonset=True,
        loads_local_images=True,  # `kind load image-archive` (providers/kind/provider.py)
        # A kind node (systemd, containerd, control plane in a container) costs more at rest: a core each, plus one.
        workers_per_spare_core=1,
        extra_workers=1,
    ),
    "existing": ProviderCapabilities(
        make="device_conformance.providers.existing:from_settings",
        setup=None,
        cluster_verbs={},  # the cluster is the one --kubeconfig names: nothing of the suite's to manage
        leftovers=None,  # its one cluster is the user's
        kubernetes_from="the cluster",
        brings_up_clusters=False,
        reuses_named_cluster=False,
        nodes_in_docker=False,
        binds_shared_dir=False,
        node_agent=True,
        swaps_kubelet=False,
        vendor_command_on_host=False,
        vendor_daemonset=True,  # through the node agent (--allow-node-disruption)
        loads_local_images=False,  # the suite pushes no image to the cluster's registry
        workers_per_spare_core=1,  # the workers share the one cluster, its tests in turn (xdist_groups.py)
        extra_workers=1,
    ),
}
# The --provider choices, in the order messages list them.
PROVIDERS = tuple(PROVIDER_CAPABILITIES)


@dataclass(frozen=True)
class Knob:
    """One setting: its option (pytest and CLI), its environment variable, what it means."""

    name: str
    option: str | None
    env: str | None
    help: str
    flag: bool = False  # a store_true option; the variable counts as set unless empty or "0"
    repeat: bool = False  # an option given any number of times; its variable holds shell words

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
            "kubelet_verbosity",
            "--kubelet-verbosity",
            "KUBELET_VERBOSITY",
            f"the kubelet's log verbosity, klog's --v (default {DEFAULT_KUBELET_VERBOSITY}: the suites read V(2) "
            "lines; the device manager's and DRA manager's decisive lines are V(3)/V(4)); local and kind providers",
        ),
        Knob(
            "feature_gates",
            "--feature-gates",
            "FEATURE_GATES",
            "feature gates on top of what the version needs: [COMPONENT:]NAME=true|false,... with COMPONENT one of "
            "kubelet, apiserver, controller-manager, scheduler (no COMPONENT: all four); repeatable; local and kind "
            "providers",
            repeat=True,
        ),
        Knob(
            "kubelet_args",
            "--kubelet-arg",
            "KUBELET_ARGS",
            "an extra kubelet flag, --NAME=VALUE (repeatable; the variable: shell words); local and kind providers",
            repeat=True,
        ),
        Knob(
            "kubelet_config",
            "--kubelet-config",
            "KUBELET_CONFIG",
            "a KubeletConfiguration field, KEY=VALUE merged into the config the provider writes (KEY a dotted path, "
            "e.g. logging.format=json; VALUE read as YAML: 10, true, {a: b}); repeatable (the variable: shell "
            "words); local and kind providers",
            repeat=True,
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
    raw: str = field(default="", compare=False)  # the text the user gave, where messages quote it

    def __str__(self) -> str:
        return f"{self.value} ({self.source})"


@dataclass(frozen=True)
class ComponentKnobs:
    """What the user asked of the components beyond what the version needs: the kubelet's verbosity, feature
    gates per component, extra kubelet flags and KubeletConfiguration fields. The providers render them
    (providers/local/components.py and configs.py, providers/kind/config.py); `shown` holds each knob as the
    user wrote it, for the error when a component refuses it."""

    kubelet_verbosity: int = DEFAULT_KUBELET_VERBOSITY
    # component (COMPONENTS) -> gate -> on; a gate given without a component is under each of the four
    feature_gates: Mapping[str, Mapping[str, bool]] = field(default_factory=dict)
    kubelet_args: tuple[str, ...] = ()
    kubelet_config: Mapping[str, object] = field(default_factory=dict)  # nested, as in the YAML file
    shown: Mapping[str, str] = field(default_factory=dict)  # knob name -> e.g. "--feature-gates 'Foo=true'"

    def user_gates(self, component: str) -> dict[str, bool]:
        return dict(sorted(self.feature_gates.get(component, {}).items()))

    def gates(self, component: str, base: Mapping[str, bool]) -> dict[str, bool]:
        """The gates `component` runs with: the version's (`base`), then the user's over them."""
        return dict(sorted({**base, **self.user_gates(component)}.items()))

    def gates_flag(self, component: str, base: Mapping[str, bool]) -> list[str]:
        gates = self.gates(component, base)
        if not gates:
            return []
        return ["--feature-gates=" + ",".join(f"{name}={str(on).lower()}" for name, on in gates.items())]

    def merged_kubelet_config(self, config: Mapping[str, object]) -> dict[str, object]:
        """`config` with the user's fields merged in (maps merged key by key, anything else replaced)."""
        return deep_merge(config, self.kubelet_config)

    def refusal(self, component: str, log: str) -> BadInput | None:
        """BadInput naming the knob when `log` (the component's output) shows it refused at start-up a gate or a
        flag the user gave it; None when the failure is not one of theirs."""
        for match in _REFUSED_GATE.finditer(log):
            # A gate the user set, or (the dependency check, featuregate.go Validate) one the user turned off
            # that an enabled gate depends on.
            names = [match.group("name") or match.group("locked") or match.group("dependent")]
            names += (match.group("deps") or "").split()
            name = next((n for n in names if n in self.feature_gates.get(component, {})), None)
            if name is not None:
                line = next(line for line in log.splitlines() if match.group(0) in line).strip()
                return BadInput(
                    f"{self.shown.get('feature_gates', '--feature-gates')}: {component} refuses gate {name} at "
                    f"start-up: {match.group(0)}\n  {component}: {line}",
                    f"drop {name} from the gates of {component}, or test a release whose {component} knows it "
                    "(pkg/features/kube_features.go of that release lists its gates)",
                )
        if component == "kubelet":
            given = {flag.group("name") for flag in map(_FLAG.fullmatch, self.kubelet_args) if flag is not None}
            for match in _UNKNOWN_FLAG.finditer(log):
                if match.group("name") in given:
                    return BadInput(
                        f"{self.shown.get('kubelet_args', '--kubelet-arg')}: the kubelet refuses it at start-up: "
                        f"{match.group(0)}",
                        "drop the flag, or pass one `kubelet --help` of this release lists (a config-file field "
                        "goes through --kubelet-config KEY=VALUE)",
                    )
        return None

    def describe(self) -> list[str]:
        """The knobs for the report header, one phrase each."""
        gates = [
            f"{component}: " + ",".join(f"{n}={str(v).lower()}" for n, v in self.user_gates(component).items())
            for component in COMPONENTS
            if self.feature_gates.get(component)
        ]
        config = ", ".join(f"{k}={v}" for k, v in _flatten(self.kubelet_config))
        return [
            f"kubelet --v={self.kubelet_verbosity}",
            "feature gates " + ("; ".join(gates) if gates else "as the version needs"),
            "kubelet args " + (" ".join(self.kubelet_args) if self.kubelet_args else "none"),
            "kubelet config " + (config or "as the provider writes it"),
        ]


DEFAULT_KNOBS = ComponentKnobs()


def deep_merge(base: Mapping[str, object], over: Mapping[str, object]) -> dict[str, object]:
    """`base` with `over` on top: nested maps merged key by key, any other value replaced."""
    merged = dict(base)
    for key, value in over.items():
        old = merged.get(key)
        merged[key] = deep_merge(old, value) if isinstance(old, Mapping) and isinstance(value, Mapping) else value
    return merged


def _flatten(config: Mapping[str, object], prefix: str = "") -> list[tuple[str, object]]:
    pairs: list[tuple[str, object]] = []
    for key, value in config.items():
        if isinstance(value, Mapping) and value:
            pairs += _flatten(value, f"{prefix}{key}.")
        else:
            pairs.append((f"{prefix}{key}", value))
    return pairs


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
    # The vendor's subject the black-box tests run against; None: our fakes.
    vendor: Setting[vendor_spec.VendorSpec | None] = Setting(None, Source("default"))
    # --provider existing: the nodes the suite may disturb through its node agent (None: none, node tests skip).
    allow_node_disruption: Setting[tuple[str, ...] | None] = Setting(None, Source("default"))
    node_agent_image: Setting[str | None] = Setting(None, Source("default"))
    # What the user asks of the components (local and kind providers): ComponentKnobs' parts, each with its source.
    kubelet_verbosity: Setting[int] = Setting(DEFAULT_KUBELET_VERBOSITY, Source("default"))
    feature_gates: Setting[Mapping[str, Mapping[str, bool]]] = Setting({}, Source("default"))
    kubelet_args: Setting[tuple[str, ...]] = Setting((), Source("default"))
    kubelet_config: Setting[Mapping[str, object]] = Setting({}, Source("default"))

    @property
    def capabilities(self) -> ProviderCapabilities:
        """What the chosen provider can do (resolve() accepts only names in PROVIDER_CAPABILITIES)."""
        return PROVIDER_CAPABILITIES[self.provider.value]

    def component_knobs(self) -> ComponentKnobs:
        return ComponentKnobs(
            kubelet_verbosity=self.kubelet_verbosity.value,
            feature_gates=self.feature_gates.value,
            kubelet_args=self.kubelet_args.value,
            kubelet_config=self.kubelet_config.value,
            shown={
                name: _shown(getattr(self, name))
                for name in ("kubelet_verbosity", "feature_gates", "kubelet_args", "kubelet_config")
                if getattr(self, name).source != DEFAULT
            },
        )

    def knobs_header(self) -> str:
        """The component knobs for the report header, each with where it came from."""
        knobs = self.component_knobs().describe()
        sources = [self.kubelet_verbosity, self.feature_gates, self.kubelet_args, self.kubelet_config]
        return "; ".join(f"{text} ({setting.source})" for text, setting in zip(knobs, sources, strict=True))


def _shown(setting: Setting[object]) -> str:
    """A knob as the user gave it, e.g. `--feature-gates 'kubelet:Foo=true'` or `FEATURE_GATES='Foo=true'
    (environment)`."""
    if setting.source.kind == "option":
        return " ".join(setting.source.shows(value) for value in (setting.raw or str(setting.value)).split("\n"))
    return setting.source.shows(setting.raw or str(setting.value))


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
        can = PROVIDER_CAPABILITIES[provider.value]
        if not can.brings_up_clusters:
            kubeconfig = self.existing_kubeconfig(provider, kubeconfig)
        if source.value is not None and not can.runs_host_binaries:
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
            **self.component_knobs(provider),
        )

    # -- component knobs ------------------------------------------------------------------------------------
    def words(self, name: str) -> tuple[list[str], str, Source]:
        """A repeatable knob: every value of its option, else its variable's shell words; and the raw text."""
        knob = KNOBS[name]
        given = self.options.get(name)
        values = [given] if isinstance(given, str) else [str(v) for v in given] if isinstance(given, list) else []
        if values:
            source = Source("option", self.names.get(name, knob.option or ""))
            return values, "\n".join(values), source  # _shown() writes the option once per value
        text = self.environ.get(knob.env or "", "")
        if not text.strip():
            return [], "", DEFAULT
        source = Source("environment", knob.env or "")
        try:
            return shlex.split(text), text, source
        except ValueError as exc:
            raise BadInput(
                f"{source.shows(text)} is not shell words: {exc}", f"quote each word as a shell would; {source.undo()}"
            ) from None

    def component_knobs(self, provider: Setting[str]) -> dict[str, Setting[object]]:
        knobs: dict[str, Setting[object]] = {
            "kubelet_verbosity": self.kubelet_verbosity(),
            "feature_gates": self.feature_gates(),
            "kubelet_args": self.kubelet_args(),
            "kubelet_config": self.kubelet_config(),
        }
        given = [setting for setting in knobs.values() if setting.source != DEFAULT]
        reused, reused_source = self.raw("kind_cluster")
        can = PROVIDER_CAPABILITIES[provider.value]
        if given and can.reuses_named_cluster and reused is not None:
            raise BadInput(
                f"{_shown(given[0])} configures the components of the cluster the suite creates, and "
                f"{reused_source.shows(reused)} reuses a kind cluster that runs as it was created",
                f"drop the kind cluster to have one created with the knobs, or recreate yours with them; "
                f"{given[0].source.undo()}",
            )
        if given and not can.brings_up_clusters:
            raise BadInput(
                f"{_shown(given[0])} configures the components the suite starts, and provider "
                f"{provider.value} ({provider.source}) starts none: the cluster runs as it was set up",
                f"configure the cluster's kubelet yourself, or use --provider local or kind; {given[0].source.undo()}",
            )
        return knobs

    def kubelet_verbosity(self) -> Setting[object]:
        text, source = self.raw("kubelet_verbosity")
        if text is None:
            return Setting(DEFAULT_KUBELET_VERBOSITY, DEFAULT)
        if not re.fullmatch(r"\d{1,2}", text.strip()):
            raise BadInput(
                f"{source.shows(text)} is not a log verbosity",
                f"give klog's level, a whole number 0-99 (e.g. 4 for the device manager's V(4) lines); {source.undo()}",
            )
        return Setting(int(text), source, text)

    def feature_gates(self) -> Setting[object]:
        words, raw, source = self.words("feature_gates")
        shown = _shown(Setting(None, source, raw))
        gates: dict[str, dict[str, bool]] = {}
        for entry in (e.strip() for word in words for e in word.split(",")):
            if not entry:
                continue
            match = _GATE.fullmatch(entry)
            value = (match.group("value").lower() if match else "") in ("true", "false")
            if match is None or not value:
                raise BadInput(
                    f"{shown}: {entry!r} is not [COMPONENT:]NAME=true|false",
                    "write e.g. kubelet:DRAResourceHealthStatus=true,apiserver:Foo=false (no COMPONENT: all four "
                    f"components); {source.undo()}",
                )
            named = match.group("component")
            if named is not None and named not in COMPONENT_ALIASES:
                raise BadInput(
                    f"{shown}: {named!r} is not a component",
                    f"use one of: kubelet, apiserver, controller-manager, scheduler; {source.undo()}",
                )
            on = match.group("value").lower() == "true"
            for component in (COMPONENT_ALIASES[named],) if named else COMPONENTS:
                gates.setdefault(component, {})[match.group("name")] = on
        if not gates:
            return Setting({}, DEFAULT)
        return Setting({c: gates[c] for c in COMPONENTS if c in gates}, source, raw)

    def kubelet_args(self) -> Setting[object]:
        words, raw, source = self.words("kubelet_args")
        shown = _shown(Setting(None, source, raw))
        for word in words:
            match = _FLAG.fullmatch(word)
            if match is None:
                raise BadInput(
                    f"{shown}: {word!r} is not a flag --NAME or --NAME=VALUE",
                    f"give each flag in one word, e.g. --kubelet-arg=--node-status-max-images=10; {source.undo()}",
                )
            instead = OWNED_KUBELET_FLAGS.get(match.group("name"))
            if instead is not None:
                raise BadInput(
                    f"{shown}: the provider sets the kubelet's --{match.group('name')} itself",
                    f"use {instead}; {source.undo()}",
                )
        if not words:
            return Setting((), DEFAULT)
        return Setting(tuple(words), source, raw)

    def kubelet_config(self) -> Setting[object]:
        words, raw, source = self.words("kubelet_config")
        shown = _shown(Setting(None, source, raw))
        config: dict[str, object] = {}
        for word in words:
            key, eq, text = word.partition("=")
            path = key.strip().split(".")
            if not eq or not all(path):
                raise BadInput(
                    f"{shown}: {word!r} is not KEY=VALUE",
                    f"e.g. --kubelet-config maxPods=20 or --kubelet-config logging.format=json; {source.undo()}",
                )
            for owned, instead in OWNED_KUBELET_FIELDS.items():
                if ".".join(path) == owned or ".".join(path).startswith(owned + "."):
                    raise BadInput(f"{shown}: {owned} has a knob of its own", f"use {instead}; {source.undo()}")
            try:
                value = yaml.safe_load(text) if text.strip() else ""
            except yaml.YAMLError as exc:
                problem = str(exc).replace("\n", " ")
                raise BadInput(
                    f"{shown}: the value of {key} is not YAML: {problem}",
                    f"write a YAML value: 20, true, 1m, {{a: b}}; {source.undo()}",
                ) from None
            target = config
            for part in path[:-1]:
                inner = target.setdefault(part, {})
                if not isinstance(inner, dict):
                    raise BadInput(
                        f"{shown}: {key} goes inside {part}, which is given a value of its own",
                        f"give {part} once, as a map or field by field; {source.undo()}",
                    )
                target = inner
            target[path[-1]] = deep_merge(target[path[-1]], value) if (
                isinstance(target.get(path[-1]), dict) and isinstance(value, dict)
            ) else value  # fmt: skip
        if not config:
            return Setting({}, DEFAULT)
        return Setting(config, source, raw)

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
        if not PROVIDER_CAPABILITIES[provider.value].runs_host_binaries:
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
        can = PROVIDER_CAPABILITIES[provider.value]
        if spec.daemonset and not can.vendor_daemonset:
            raise BadInput(
                f"--vendor-daemonset {spec.daemonset} drives the subject's DaemonSet through the provider's node "
                f"control (kind, or an existing cluster's node agent); the provider is {provider}",
                "use --provider kind, or --provider existing with --allow-node-disruption NODE "
                "(on --provider local pass --vendor-command)",
            )
        if spec.daemonset and spec.upstream is not None and not can.loads_local_images:
            raise BadInput(
                f"--vendor-daemonset {spec.daemonset} deploys upstream's subject from an image built here, which "
                "only kind nodes can be loaded with by the suite",
                "deploy the subject on your cluster yourself (its manifest: "
                "src/device_conformance/vendor/manifests/<name>.yaml) and pass --vendor-daemonset NAMESPACE/NAME",
            )
        if not spec.daemonset and not can.vendor_command_on_host:
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
        if not PROVIDER_CAPABILITIES[provider.value].node_agent:
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
        if text is not None and not PROVIDER_CAPABILITIES[provider.value].node_agent:
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
                f"provider {provider.value} ({provider.source}) needs the kubeconfig of the cluster under test; "
                "none is given",
                "pass --kubeconfig PATH, or set DEVICE_CONFORMANCE_KUBECONFIG (or KUBECONFIG)",
            )
        if not kubeconfig.value.exists():
            raise BadInput(
                f"kubeconfig {kubeconfig.value} ({kubeconfig.source}) does not exist",
                "point it at the kubeconfig of the cluster under test",
            )
        return kubeconfig
