"""The component knobs (--kubelet-verbosity, --feature-gates, --kubelet-arg, --kubelet-config): resolved with their
source, refused with the fix when malformed, rendered exactly into the local provider's argv and kubelet config and
into kind's kubeadm patches, and a component's refusal of a user's gate turned into BadInput naming the knob."""

from pathlib import Path

import pytest
import yaml

from device_conformance.core.errors import BadInput
from device_conformance.expectations.cluster import settings_for
from device_conformance.expectations.versions import KubeVersion
from device_conformance.providers.kind import config as kind_config
from device_conformance.providers.kind.layout import KindLayout
from device_conformance.providers.local import components, configs
from device_conformance.providers.local.pki import Pki
from device_conformance.providers.local.ports import Ports
from device_conformance.pytest_plugin.header import header_lines
from device_conformance.settings import DEFAULT_KNOBS, ComponentKnobs, resolve

PORTS = Ports.from_base(21000)
V137 = KubeVersion(1, 37, 1)
V135 = KubeVersion(1, 35, 8)  # gates of its own: DRADeviceTaints, DRADeviceTaintRules

GIVEN = {
    "kubelet_verbosity": "4",
    "feature_gates": ["kubelet:ResourceHealthStatus=false,apiserver:Foo=true", "Bar=true"],
    "kubelet_args": ["--node-status-max-images=7", "--fail-swap-on"],
    "kubelet_config": ["maxPods=50", "logging.format=json", 'evictionHard={"memory.available": 200Mi}'],
}


def test_knobs_resolve_from_options_with_every_gate_under_its_component():
    settings = resolve(GIVEN, {})
    knobs = settings.component_knobs()
    assert knobs.kubelet_verbosity == 4
    assert knobs.feature_gates == {
        "kubelet": {"ResourceHealthStatus": False, "Bar": True},
        "kube-apiserver": {"Foo": True, "Bar": True},
        "kube-controller-manager": {"Bar": True},
        "kube-scheduler": {"Bar": True},
    }
    assert knobs.kubelet_args == ("--node-status-max-images=7", "--fail-swap-on")
    assert knobs.kubelet_config == {
        "maxPods": 50,
        "logging": {"format": "json"},
        "evictionHard": {"memory.available": "200Mi"},
    }
    assert knobs.shown["feature_gates"] == (
        "--feature-gates 'kubelet:ResourceHealthStatus=false,apiserver:Foo=true' --feature-gates 'Bar=true'"
    )


def test_knobs_from_the_environment_are_shell_words_and_say_so():
    env = {
        "KUBELET_VERBOSITY": "5",
        "FEATURE_GATES": "scheduler:Foo=false",
        "KUBELET_ARGS": "--node-status-max-images=7 '--node-labels=a=b'",
        "KUBELET_CONFIG": "maxPods=50 'logging.options={json: {infoBufferSize: \"1\"}}'",
    }
    settings = resolve({}, env)
    knobs = settings.component_knobs()
    assert (knobs.kubelet_verbosity, str(settings.kubelet_verbosity.source)) == (5, "environment KUBELET_VERBOSITY")
    assert knobs.feature_gates == {"kube-scheduler": {"Foo": False}}
    assert knobs.kubelet_args == ("--node-status-max-images=7", "--node-labels=a=b")
    assert knobs.kubelet_config == {"maxPods": 50, "logging": {"options": {"json": {"infoBufferSize": "1"}}}}
    assert knobs.shown["feature_gates"] == "FEATURE_GATES='scheduler:Foo=false' (environment)"


def test_defaults_change_nothing():
    settings = resolve({}, {})
    assert settings.component_knobs() == DEFAULT_KNOBS
    assert settings.knobs_header() == (
        "kubelet --v=2 (default); feature gates as the version needs (default); kubelet args none (default); "
        "kubelet config as the provider writes it (default)"
    )


@pytest.mark.parametrize(
    "given,problem,fix",
    [
        (
            {"kubelet_verbosity": "high"},
            "--kubelet-verbosity 'high' is not a log verbosity",
            "give klog's level, a whole number 0-99",
        ),
        (
            {"feature_gates": ["kubelet:Foo=yes"]},
            "--feature-gates 'kubelet:Foo=yes': 'kubelet:Foo=yes' is not [COMPONENT:]NAME=true|false",
            "write e.g. kubelet:DRAResourceHealthStatus=true",
        ),
        (
            {"feature_gates": ["kubelt:Foo=true"]},
            "--feature-gates 'kubelt:Foo=true': 'kubelt' is not a component",
            "use one of: kubelet, apiserver, controller-manager, scheduler",
        ),
        (
            {"kubelet_args": ["node-ip=1.2.3.4"]},
            "--kubelet-arg 'node-ip=1.2.3.4': 'node-ip=1.2.3.4' is not a flag --NAME or --NAME=VALUE",
            "give each flag in one word",
        ),
        (
            {"kubelet_args": ["--v=4"]},
            "--kubelet-arg '--v=4': the provider sets the kubelet's --v itself",
            "use --kubelet-verbosity N",
        ),
        (
            {"kubelet_args": ["--feature-gates=Foo=true"]},
            "--kubelet-arg '--feature-gates=Foo=true': the provider sets the kubelet's --feature-gates itself",
            "use --feature-gates kubelet:NAME=true",
        ),
        (
            {"kubelet_config": ["maxPods"]},
            "--kubelet-config 'maxPods': 'maxPods' is not KEY=VALUE",
            "e.g. --kubelet-config maxPods=20",
        ),
        (
            {"kubelet_config": ["featureGates.Foo=true"]},
            "--kubelet-config 'featureGates.Foo=true': featureGates has a knob of its own",
            "use --feature-gates kubelet:NAME=true",
        ),
        (
            {"kubelet_config": ["logging.verbosity=4"]},
            "--kubelet-config 'logging.verbosity=4': logging.verbosity has a knob of its own",
            "use --kubelet-verbosity N",
        ),
        (
            {"kubelet_config": ["logging=x", "logging.format=json"]},
            "--kubelet-config 'logging=x' --kubelet-config 'logging.format=json': logging.format goes inside "
            "logging, which is given a value of its own",
            "give logging once",
        ),
        (
            {"kubelet_config": ["maxPods=[1"]},
            "--kubelet-config 'maxPods=[1': the value of maxPods is not YAML",
            "write a YAML value",
        ),
    ],
)
def test_malformed_knobs_are_refused_with_the_fix(given, problem, fix):
    with pytest.raises(BadInput) as caught:
        resolve(given, {})
    assert caught.value.problem.startswith(problem), caught.value.problem
    assert caught.value.fix.startswith(fix), caught.value.fix


def test_knobs_are_refused_where_the_suite_starts_no_component(tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("")
    with pytest.raises(BadInput) as caught:
        resolve({"provider": "existing", "kubeconfig": str(kubeconfig), "kubelet_verbosity": "4"}, {})
    assert caught.value.problem == (
        "--kubelet-verbosity '4' configures the components the suite starts, and provider existing (option "
        "--provider) starts none: the cluster runs as it was set up"
    )
    with pytest.raises(BadInput) as caught:
        resolve({"provider": "kind", "kind_cluster": "mine", "feature_gates": ["Foo=true"]}, {})
    assert caught.value.problem == (
        "--feature-gates 'Foo=true' configures the components of the cluster the suite creates, and --kind-cluster "
        "'mine' reuses a kind cluster that runs as it was created"
    )


def test_the_header_says_each_knob_and_where_it_came_from():
    lines = header_lines(resolve(GIVEN, {}))
    assert [line for line in lines if line.startswith("  components:")] == [
        "  components: kubelet --v=4 (option --kubelet-verbosity); feature gates kubelet: Bar=true,"
        "ResourceHealthStatus=false; kube-apiserver: Bar=true,Foo=true; kube-controller-manager: Bar=true; "
        "kube-scheduler: Bar=true (option --feature-gates); kubelet args --node-status-max-images=7 --fail-swap-on "
        "(option --kubelet-arg); kubelet config maxPods=50, logging.format=json, evictionHard.memory.available=200Mi "
        "(option --kubelet-config)"
    ]


# -- the local provider -------------------------------------------------------------------------------------


def test_local_kubelet_argv_carries_verbosity_gates_and_extra_flags_last():
    knobs = resolve(GIVEN, {}).component_knobs()
    argv = components.kubelet_argv(
        Path("/b/kubelet"), Path("/r/k.yaml"), Path("/r/k.kubeconfig"), "dc-r1", "10.9.0.1", settings_for(V135), knobs
    )
    assert argv == [
        "/b/kubelet",
        "--config=/r/k.yaml",
        "--kubeconfig=/r/k.kubeconfig",
        "--hostname-override=dc-r1",
        "--node-ip=10.9.0.1",
        "--root-dir=/var/lib/kubelet",
        "--v=4",
        "--feature-gates=Bar=true,DRADeviceTaintRules=true,DRADeviceTaints=true,ResourceHealthStatus=false",
        "--node-status-max-images=7",
        "--fail-swap-on",
    ]
    default = components.kubelet_argv(
        Path("/b/kubelet"), Path("/r/k.yaml"), Path("/r/k.kubeconfig"), "dc-r1", "10.9.0.1", settings_for(V137)
    )
    assert default[-1] == "--v=2"


def test_local_control_plane_gets_only_its_own_gates():
    knobs = ComponentKnobs(
        feature_gates={"kube-apiserver": {"Foo": True}, "kube-scheduler": {"DRADeviceTaints": False}}
    )
    pki = Pki(Path("/r/pki"))
    settings = settings_for(V135)
    apiserver = components.apiserver_argv(Path("/b/a"), pki, PORTS, settings, knobs=knobs)
    kcm = components.controller_manager_argv(Path("/b/c"), pki, PORTS, Path("/r/c.kc"), settings, knobs=knobs)
    scheduler = components.scheduler_argv(Path("/b/s"), PORTS, Path("/r/s.kc"), Path("/r/s.yaml"), settings, knobs)
    gates = [[arg for arg in argv if arg.startswith("--feature-gates=")] for argv in (apiserver, kcm, scheduler)]
    assert gates == [
        ["--feature-gates=DRADeviceTaintRules=true,DRADeviceTaints=true,Foo=true"],
        ["--feature-gates=DRADeviceTaintRules=true,DRADeviceTaints=true"],
        ["--feature-gates=DRADeviceTaintRules=true,DRADeviceTaints=false"],
    ]
    # 1.37 needs no gate: a component the user gave none has no flag at all.
    plain = components.apiserver_argv(Path("/b/a"), pki, PORTS, settings_for(V137), knobs=ComponentKnobs())
    assert not any(arg.startswith("--feature-gates") for arg in plain)


def test_local_kubelet_config_merges_the_users_fields_map_by_map():
    knobs = resolve(GIVEN, {}).component_knobs()
    text = configs.kubelet_config(
        "10.90.0.1", PORTS, Path("/r/ca.crt"), Path("/r/c.sock"), "/dc-r1", settings_for(V137)
    )
    merged = configs.kubelet_config(
        "10.90.0.1", PORTS, Path("/r/ca.crt"), Path("/r/c.sock"), "/dc-r1", settings_for(V137), knobs
    )
    plain = yaml.safe_load(text)
    assert yaml.safe_load(merged) == {
        **plain,
        "maxPods": 50,
        "logging": {"format": "json"},
        "evictionHard": {"memory.available": "200Mi", "nodefs.available": "1%", "imagefs.available": "1%"},
    }


# -- kind -----------------------------------------------------------------------------------------------------


def _patches(rendered):
    return [yaml.safe_load(patch) for patch in rendered["kubeadmConfigPatches"]]


def test_kind_renders_the_knobs_as_kubeadm_patches(tmp_path):
    knobs = resolve(GIVEN, {}).component_knobs()
    rendered = kind_config.render(V135, KindLayout(tmp_path / "dc-abc123-gw0"), "img", knobs=knobs)
    # The version's gates stay kind's top-level featureGates (every component and kube-proxy).
    assert rendered["featureGates"] == {"DRADeviceTaintRules": True, "DRADeviceTaints": True}
    assert _patches(rendered) == [
        {
            "kind": "KubeletConfiguration",
            "nodeStatusUpdateFrequency": "1s",
            "nodeStatusReportFrequency": "1m",
            "logging": {"verbosity": 4, "format": "json"},
            "failCgroupV1": False,
            "maxPods": 50,
            "evictionHard": {"memory.available": "200Mi"},
            "featureGates": {"Bar": True, "ResourceHealthStatus": False},
        },
        {
            "kind": "ClusterConfiguration",
            "apiServer": {
                "extraArgs": {"feature-gates": "Bar=true,DRADeviceTaintRules=true,DRADeviceTaints=true,Foo=true"}
            },
            "controllerManager": {
                "extraArgs": {"feature-gates": "Bar=true,DRADeviceTaintRules=true,DRADeviceTaints=true"}
            },
            "scheduler": {"extraArgs": {"feature-gates": "Bar=true,DRADeviceTaintRules=true,DRADeviceTaints=true"}},
        },
        {
            "kind": "InitConfiguration",
            "nodeRegistration": {"kubeletExtraArgs": {"node-status-max-images": "7", "fail-swap-on": "true"}},
        },
        {
            "kind": "JoinConfiguration",
            "nodeRegistration": {"kubeletExtraArgs": {"node-status-max-images": "7", "fail-swap-on": "true"}},
        },
    ]


def test_kind_without_knobs_renders_what_it_rendered_before(tmp_path):
    rendered = kind_config.render(V137, KindLayout(tmp_path / "dc-abc123-gw0"), "img")
    assert _patches(rendered) == [
        {
            "kind": "KubeletConfiguration",
            "nodeStatusUpdateFrequency": "1s",
            "nodeStatusReportFrequency": "1m",
            "logging": {"verbosity": 2},
            "failCgroupV1": False,
        }
    ]


# -- a component's refusal ------------------------------------------------------------------------------------

APISERVER_LOG = (
    "I1128 02:50:01.123456   4242 options.go:249] external host was not specified, using 127.0.0.1\n"
    'E1128 02:50:01.223456   4242 run.go:72] "command failed" err="invalid argument \\"Foo=true\\" for '
    '\\"--feature-gates\\" flag: unrecognized feature gate: Foo"\n'
)


def test_a_refused_gate_of_the_users_is_bad_input_naming_the_knob():
    knobs = resolve({"feature_gates": ["apiserver:Foo=true"]}, {}).component_knobs()
    refused = knobs.refusal("kube-apiserver", APISERVER_LOG)
    assert refused is not None
    assert refused.problem == (
        "--feature-gates 'apiserver:Foo=true': kube-apiserver refuses gate Foo at start-up: unrecognized feature "
        "gate: Foo\n  kube-apiserver: " + APISERVER_LOG.splitlines()[1]
    )
    assert refused.fix.startswith("drop Foo from the gates of kube-apiserver")
    # Not the user's gate, or not this component's: not the user's input.
    assert knobs.refusal("kube-scheduler", APISERVER_LOG) is None
    assert DEFAULT_KNOBS.refusal("kube-apiserver", APISERVER_LOG) is None


def test_a_gate_locked_to_its_default_and_an_unknown_kubelet_flag_are_refusals_too():
    knobs = resolve({"feature_gates": ["kubelet:DynamicResourceAllocation=false"], "kubelet_args": ["--no-such"]}, {})
    knobs = knobs.component_knobs()
    locked = (
        "E1128 run.go:72] failed to set feature gates from initial flags-based config: cannot set feature gate "
        "DynamicResourceAllocation to false, feature is locked to true"
    )
    refused = knobs.refusal("kubelet", locked)
    assert refused is not None and refused.problem.startswith(
        "--feature-gates 'kubelet:DynamicResourceAllocation=false': kubelet refuses gate DynamicResourceAllocation "
        "at start-up: cannot set feature gate DynamicResourceAllocation to false, feature is locked to true"
    )
    flag = knobs.refusal(
        "kubelet", 'E1128 run.go:74] "command failed" err="failed to parse kubelet flag: unknown flag: --no-such"'
    )
    assert flag is not None and flag.problem == (
        "--kubelet-arg '--no-such': the kubelet refuses it at start-up: unknown flag: --no-such"
    )


def test_a_gate_turned_off_under_an_enabled_dependent_is_a_refusal():
    """What a 1.37.1 kubelet said here to --feature-gates kubelet:ResourceHealthStatus=false
    (ResourceHealthStatusMessage, beta and on, depends on it: pkg/features/kube_features.go)."""
    knobs = resolve({"feature_gates": ["kubelet:ResourceHealthStatus=false"]}, {}).component_knobs()
    log = (
        'E1128 02:48:51.797565   19290 run.go:72] "command failed" err="failed to set feature gates from initial '
        "flags-based config: ResourceHealthStatusMessage is enabled, but depends on features that are disabled: "
        '[ResourceHealthStatus]"'
    )
    refused = knobs.refusal("kubelet", log)
    assert refused is not None and refused.problem == (
        "--feature-gates 'kubelet:ResourceHealthStatus=false': kubelet refuses gate ResourceHealthStatus at start-up: "
        "ResourceHealthStatusMessage is enabled, but depends on features that are disabled: [ResourceHealthStatus]"
        f"\n  kubelet: {log}"
    )
