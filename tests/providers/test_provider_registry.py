"""settings.PROVIDER_CAPABILITIES is the one provider registry: every --provider choice has its capabilities, its
code is reached by the dotted paths there, and only the chosen provider's code is imported."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path
from typing import get_args, get_type_hints

import pytest

from device_conformance.providers import load, make_provider
from device_conformance.providers.base import ClusterHandle
from device_conformance.settings import KNOBS, PROVIDER_CAPABILITIES, PROVIDERS, ProviderCapabilities, resolve

PROVIDER_DIR = Path(__file__).resolve().parents[2] / "src" / "device_conformance" / "providers"


def test_the_choices_are_the_registry_in_the_order_messages_list_them():
    assert PROVIDERS == ("local", "kind", "existing")
    assert tuple(PROVIDER_CAPABILITIES) == PROVIDERS


def test_every_provider_in_the_package_is_registered():
    """A provider is a folder with a provider.py, or a module defining from_settings (existing.py)."""
    folders = {path.parent.name for path in PROVIDER_DIR.glob("*/provider.py")}
    modules = {p.stem for p in PROVIDER_DIR.glob("*.py") if "def from_settings(" in p.read_text()}
    assert folders | modules == set(PROVIDERS)


@pytest.mark.parametrize("name", PROVIDERS)
def test_each_provider_fills_every_capability(name):
    can = PROVIDER_CAPABILITIES[name]
    hints = get_type_hints(ProviderCapabilities)
    for field in dataclasses.fields(ProviderCapabilities):
        value = getattr(can, field.name)
        if field.name == "kubernetes_from":
            assert value in get_args(hints[field.name])
        elif field.name not in ("setup", "leftovers"):  # optional: None says the provider has none
            assert value is not None, field.name
    assert can.workers_per_spare_core >= 1 and can.extra_workers >= 0


@pytest.mark.parametrize("name", PROVIDERS)
def test_the_dotted_paths_name_functions(name):
    can = PROVIDER_CAPABILITIES[name]
    for target in (can.make, can.setup, can.leftovers):
        if target is not None:
            assert callable(load(target)), target
            assert target.startswith(f"device_conformance.providers.{name}"), target


def test_capabilities_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        PROVIDER_CAPABILITIES["local"].node_agent = True  # type: ignore[misc]


def test_the_capabilities_say_what_each_provider_did_by_name():
    """The answers the name comparisons used to give (docs/providers/*.md)."""
    local, kind, existing = (PROVIDER_CAPABILITIES[name] for name in PROVIDERS)
    assert [c.runs_host_binaries for c in (local, kind, existing)] == [True, False, False]
    assert [c.brings_up_clusters for c in (local, kind, existing)] == [True, True, False]
    assert [c.reuses_named_cluster for c in (local, kind, existing)] == [False, True, False]
    assert [c.nodes_in_docker for c in (local, kind, existing)] == [False, True, False]
    assert [c.binds_shared_dir for c in (local, kind, existing)] == [False, True, False]
    assert [c.node_agent for c in (local, kind, existing)] == [False, False, True]
    assert [c.swaps_kubelet for c in (local, kind, existing)] == [True, True, False]
    assert [c.vendor_command_on_host for c in (local, kind, existing)] == [True, False, False]
    assert [c.vendor_daemonset for c in (local, kind, existing)] == [False, True, True]
    assert [c.loads_local_images for c in (local, kind, existing)] == [True, True, False]
    assert [(c.workers_per_spare_core, c.extra_workers) for c in (local, kind, existing)] == [(4, 0), (1, 1), (1, 1)]
    assert existing.setup is None


def test_settings_and_cluster_handles_answer_for_their_provider(tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("")
    for options, name in (({}, "local"), ({"provider": "kind"}, "kind"), ({"kubeconfig": str(kubeconfig)}, "existing")):
        settings = resolve(options, {})
        assert settings.provider.value == name
        assert settings.capabilities is PROVIDER_CAPABILITIES[name]
        handle = ClusterHandle(name="c", provider=name, kubeconfig=kubeconfig, k8s_version=settings.k8s_version.value)
        assert handle.capabilities is PROVIDER_CAPABILITIES[name]


def test_make_provider_builds_the_chosen_provider(tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("")
    made = make_provider(resolve({"provider": "kind", "kind_cluster": "mine"}, {}), log=lambda _: None)
    assert type(made).__name__ == "KindProvider" and made.name == "kind"
    made = make_provider(resolve({"provider": "local"}, {}), log=lambda _: None)
    assert type(made).__name__ == "LocalProvider" and made.name == "local"


def test_the_provider_knob_lists_every_choice():
    assert all(name in KNOBS["provider"].help for name in PROVIDERS)


def _imported_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"import sys\n{code}\nprint('\\n'.join(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {name for name in out.split() if name.startswith("device_conformance.providers.")}


def test_settings_and_the_cli_import_no_provider():
    assert _imported_after("import device_conformance.settings, device_conformance.cli.main") == set()


def test_making_a_provider_imports_only_its_own_code():
    loaded = _imported_after(
        "from device_conformance.providers import make_provider\n"
        "from device_conformance.settings import resolve\n"
        "make_provider(resolve({'provider': 'local'}, {}), log=print)"
    )
    assert any(name.startswith("device_conformance.providers.local.") for name in loaded)
    others = ("device_conformance.providers.kind", "device_conformance.providers.existing")
    assert not any(name.startswith(others) for name in loaded)
