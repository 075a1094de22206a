"""settings.resolve(): option, else environment variable, else default; every value says where it came from."""

import subprocess
import sys
from pathlib import Path

import pytest

from device_conformance.core.errors import BadInput
from device_conformance.expectations.versions import DEFAULT_K8S_VERSION, PREVIOUS_MINOR_VERSION, KubeVersion
from device_conformance.settings import KNOBS, Source, from_options, resolve

# The names users and CI rely on (README, Makefile, workflows): none may go away.
OPTIONS = {
    "--provider": "PROVIDER",
    "--k8s-version": "K8S_VERSION",
    "--kubeconfig": "DEVICE_CONFORMANCE_KUBECONFIG",
    "--k8s-bin-dir": "K8S_BIN_DIR",
    "--k8s-source": "K8S_SOURCE",
    "--kubelet-version": "KUBELET_VERSION",
    "--upgrade-from": "UPGRADE_FROM",
    "--keep-cluster": "KEEP_CLUSTER",
    "--kind-cluster": "KIND_CLUSTER",
    "--kind-image": "KIND_NODE_IMAGE",
    "--kind-profile": "KIND_PROFILE",
    "--vendor-device-plugin": "VENDOR_DEVICE_PLUGIN",
    "--vendor-dra-driver": "VENDOR_DRA_DRIVER",
    "--vendor-command": "VENDOR_COMMAND",
    "--vendor-daemonset": "VENDOR_DAEMONSET",
    "--allow-node-disruption": "ALLOW_NODE_DISRUPTION",
    "--node-agent-image": "NODE_AGENT_IMAGE",
    "--kubelet-verbosity": "KUBELET_VERBOSITY",
    "--feature-gates": "FEATURE_GATES",
    "--kubelet-arg": "KUBELET_ARGS",
    "--kubelet-config": "KUBELET_CONFIG",
}


def test_every_option_keeps_its_name_and_environment_variable():
    declared = {knob.option: knob.env for knob in KNOBS.values() if knob.option}
    assert declared == OPTIONS
    assert KNOBS["containerd_version"].env == "CONTAINERD_VERSION"


def test_pytest_declares_every_option_with_its_variable_in_the_help():
    help_text = subprocess.run(
        [sys.executable, "-m", "pytest", "--help", "-p", "no:cacheprovider"], capture_output=True, text=True, check=True
    ).stdout
    help_text = " ".join(help_text.split())  # argparse wraps long help lines
    for option, env in OPTIONS.items():
        assert option in help_text and f"env {env}" in help_text


def test_defaults_say_they_are_defaults():
    settings = resolve({}, {})
    assert settings.k8s_version.value == DEFAULT_K8S_VERSION and settings.k8s_version.source == Source("default")
    assert settings.upgrade_from.value == PREVIOUS_MINOR_VERSION
    assert (settings.provider.value, str(settings.provider.source)) == ("local", "default: auto, no kubeconfig given")
    assert settings.kubeconfig.value is None and settings.k8s_bin_dir.value is None
    assert settings.keep_cluster.value is False
    assert settings.kind_image.value == f"kindest/node:v{DEFAULT_K8S_VERSION}"
    assert str(settings.kind_image.source) == f"default: for {DEFAULT_K8S_VERSION}"
    assert settings.containerd_version.value == "v2.3.4"


def test_the_option_wins_over_the_environment_which_wins_over_the_default():
    env = {"K8S_VERSION": "1.36.4", "UPGRADE_FROM": "1.35.8", "K8S_BIN_DIR": "/env/bin", "KIND_PROFILE": "two-nodes"}
    from_env = resolve({}, env)
    assert from_env.k8s_version.value == KubeVersion(1, 36, 4)
    assert str(from_env.k8s_version.source) == "environment K8S_VERSION"
    assert from_env.k8s_bin_dir.value == Path("/env/bin") and from_env.kind_profile.value == "two-nodes"
    assert from_env.kind_image.value == "kindest/node:v1.36.4"  # follows the version under test
    from_option = resolve({"k8s_version": "v1.37.0", "k8s_bin_dir": "/opt/bin"}, env)
    assert from_option.k8s_version.value == KubeVersion(1, 37, 0)
    assert str(from_option.k8s_version.source) == "option --k8s-version"
    assert str(from_option.k8s_bin_dir) == "/opt/bin (option --k8s-bin-dir)"
    assert from_option.upgrade_from.value == KubeVersion(1, 35, 8)  # not given as an option: the variable


def test_empty_variables_count_as_unset():
    settings = resolve({}, {"K8S_VERSION": "", "PROVIDER": "", "K8S_BIN_DIR": "", "KIND_NODE_IMAGE": ""})
    assert settings.k8s_version.source == Source("default") and settings.provider.value == "local"
    assert settings.k8s_bin_dir.value is None and settings.kind_image.value == f"kindest/node:v{DEFAULT_K8S_VERSION}"


@pytest.mark.parametrize("env,expected", [("1", True), ("yes", True), ("0", False), ("", False)])
def test_keep_cluster_from_the_environment(env, expected):
    assert resolve({}, {"KEEP_CLUSTER": env}).keep_cluster.value is expected
    assert resolve({"keep_cluster": True}, {}).keep_cluster.source == Source("option", "--keep-cluster")


@pytest.mark.parametrize(
    "options,env,shown,undo",
    [
        ({"k8s_version": "1.37"}, {}, "--k8s-version '1.37'", "drop --k8s-version"),
        ({}, {"K8S_VERSION": "latest"}, "K8S_VERSION='latest' (environment)", "unset K8S_VERSION"),
        ({"upgrade_from": "1.36"}, {}, "--upgrade-from '1.36'", "drop --upgrade-from"),
        ({}, {"UPGRADE_FROM": "v1.36.x"}, "UPGRADE_FROM='v1.36.x' (environment)", "unset UPGRADE_FROM"),
        ({"k8s_version": ""}, {"K8S_VERSION": "1.37.1"}, "K8S_VERSION", None),  # empty option: as not given
    ],
)
def test_a_bad_version_names_its_source_and_the_fix(options, env, shown, undo):
    if undo is None:
        assert str(resolve(options, env).k8s_version.source) == f"environment {shown}"
        return
    with pytest.raises(BadInput) as excinfo:
        resolve(options, env)
    assert excinfo.value.problem.startswith(f"{shown} is not usable")
    assert "MAJOR.MINOR.PATCH" in excinfo.value.fix and undo in excinfo.value.fix


def test_an_unknown_provider_is_refused_with_the_choices():
    with pytest.raises(BadInput) as excinfo:
        resolve({}, {"PROVIDER": "minikube"})
    assert excinfo.value.problem == "PROVIDER='minikube' (environment) is not a provider"
    assert "local, kind, existing" in excinfo.value.fix


def test_auto_picks_existing_when_a_kubeconfig_is_given(tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("{}")
    settings = resolve({"provider": "auto"}, {"DEVICE_CONFORMANCE_KUBECONFIG": str(kubeconfig)})
    assert settings.provider.value == "existing" and settings.kubeconfig.value == kubeconfig
    assert str(settings.provider.source) == (
        "option --provider: auto, a kubeconfig is given (environment DEVICE_CONFORMANCE_KUBECONFIG)"
    )


@pytest.mark.parametrize(
    "options,env,undo",
    [
        ({"kubeconfig": ""}, {}, "drop --kubeconfig"),
        ({"kubeconfig": "  "}, {}, "drop --kubeconfig"),
        ({}, {"DEVICE_CONFORMANCE_KUBECONFIG": ""}, "unset DEVICE_CONFORMANCE_KUBECONFIG"),
    ],
)
def test_an_empty_kubeconfig_is_refused_not_taken_for_the_current_directory(options, env, undo):
    with pytest.raises(BadInput) as excinfo:
        resolve(options, env)
    assert "is empty" in excinfo.value.problem
    assert "path of the cluster's kubeconfig" in excinfo.value.fix and undo in excinfo.value.fix


def test_existing_falls_back_to_kubeconfig_and_refuses_none_or_a_missing_file(tmp_path):
    kubeconfig = tmp_path / "config"
    kubeconfig.write_text("{}")
    settings = resolve({"provider": "existing"}, {"KUBECONFIG": str(kubeconfig)})
    assert settings.kubeconfig.value == kubeconfig and settings.kubeconfig.source == Source("environment", "KUBECONFIG")
    with pytest.raises(BadInput) as excinfo:
        resolve({"provider": "existing"}, {"KUBECONFIG": ""})
    assert "needs the kubeconfig" in excinfo.value.problem and "--kubeconfig PATH" in excinfo.value.fix
    with pytest.raises(BadInput) as excinfo:
        resolve({"provider": "existing", "kubeconfig": str(tmp_path / "nope")}, {})
    assert excinfo.value.problem == f"kubeconfig {tmp_path / 'nope'} (option --kubeconfig) does not exist"


def test_a_kubeconfig_for_another_provider_is_not_checked(tmp_path):
    settings = resolve({"provider": "local", "kubeconfig": str(tmp_path / "nope")}, {})
    assert settings.provider.value == "local"


@pytest.mark.parametrize("value,expected", [("2.2.7", "v2.2.7"), ("v2.3.4", "v2.3.4")])
def test_containerd_version_is_normalised(value, expected):
    settings = resolve({}, {"CONTAINERD_VERSION": value})
    assert settings.containerd_version.value == expected
    assert settings.containerd_version.source == Source("environment", "CONTAINERD_VERSION")


@pytest.mark.parametrize("value", ["1.7.28", "v2.3", "latest"])
def test_a_version_that_is_not_containerd_2_is_refused_with_the_fix(value):
    with pytest.raises(BadInput) as excinfo:
        resolve({}, {"CONTAINERD_VERSION": value})
    assert value in excinfo.value.problem and "unset CONTAINERD_VERSION" in excinfo.value.fix


def test_a_command_with_its_own_option_names_is_named_in_messages():
    with pytest.raises(BadInput) as excinfo:
        resolve({"kind_profile": "x", "k8s_version": "bad"}, {}, option_names={"k8s_version": "--version"})
    assert excinfo.value.problem.startswith("--version 'bad'")


def test_from_options_reads_pytest_style_options(tmp_path):
    given = {"--k8s-version": "1.36.4", "--keep-cluster": True, "--kind-cluster": "mine"}
    settings = from_options(lambda option: given.get(option), {"PROVIDER": "kind"})
    assert settings.k8s_version.value == KubeVersion(1, 36, 4) and settings.keep_cluster.value is True
    assert settings.provider.value == "kind" and settings.kind_cluster.value == "mine"
