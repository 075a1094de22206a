"""How to configure each Kubernetes version's components. Version differences live here, as data.

Every entry names the upstream change behind it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from device_conformance.expectations.dra import (
    device_taint_rule_api_version,
    has_device_taints,
    resource_api_version,
    supports_dra,
)
from device_conformance.expectations.versions import KubeVersion


@dataclass(frozen=True)
class ComponentSettings:
    """Feature gates and API versions to turn on, per component, for one Kubernetes version."""

    feature_gates: dict[str, bool] = field(default_factory=dict)
    runtime_config: list[str] = field(default_factory=list)
    kubelet_config: dict[str, object] = field(default_factory=dict)

    def gates_flag(self) -> list[str]:
        if not self.feature_gates:
            return []
        gates = ",".join(f"{name}={str(on).lower()}" for name, on in sorted(self.feature_gates.items()))
        return [f"--feature-gates={gates}"]


def settings_for(version: KubeVersion) -> ComponentSettings:
    """What the suites need switched on for `version` (DRA, device taints, cgroup v1 hosts).

    A gate a release does not know is fatal to every component given it, so each gate is set only in the
    minors whose pkg/features/kube_features.go (module source of the newest patch of each minor) has it:
    DynamicResourceAllocation 1.26+ (beta, off, in 1.32-1.33; GA from 1.34), DRADeviceTaints 1.33+ (alpha,
    off, 1.33-1.35; beta, on, 1.36; GA 1.37), DRADeviceTaintRules 1.35+ (alpha, off, 1.35; beta, off, 1.36;
    GA, on, 1.37). Before 1.32 nothing is turned on: no release before it serves an API the DRA suites use.
    """
    gates: dict[str, bool] = {}
    runtime: list[str] = []
    kubelet: dict[str, object] = {}
    if version.at_least(35):
        # 1.35 flipped failCgroupV1 to true (KEP-5573, kubernetes#134298); our hosts are cgroup v1.
        kubelet["failCgroupV1"] = False
    if supports_dra(version) and not version.at_least(34):
        # DRA is GA and on by default from 1.34 (KEP-4381); in 1.32-1.33 it is a beta gate + API.
        gates["DynamicResourceAllocation"] = True
        runtime.append("resource.k8s.io/v1beta1=true")
    if has_device_taints(version) and not version.at_least(36):
        # DRADeviceTaints: alpha 1.33-1.35, beta on in 1.36, GA in 1.37 (KEP-5055, kubernetes/enhancements#6299).
        gates["DRADeviceTaints"] = True
    if version.at_least(35) and not version.at_least(37):
        # DeviceTaintRule's own gate, from 1.35 (kubernetes#135068); before, DRADeviceTaints covers rules.
        gates["DRADeviceTaintRules"] = True
    if has_device_taints(version) and not version.at_least(37):
        # DeviceTaintRule: v1alpha3 in 1.33-1.35, v1beta2 (off by default) in 1.36, v1 in 1.37.
        runtime.append(f"{device_taint_rule_api_version(version)}=true")
    return ComponentSettings(feature_gates=gates, runtime_config=runtime, kubelet_config=kubelet)


def control_plane_settings_for(control_plane: KubeVersion, kubelet: KubeVersion) -> ComponentSettings:
    """The control plane's settings under a kubelet of an older release (KUBELET_VERSION): its own, plus the
    resource.k8s.io version that kubelet reads ResourceClaims in. A 1.32-1.33 kubelet reads v1beta1 (the
    typed client of its release, pkg/kubelet/cm/dra), which a 1.34+ API server no longer serves by default:
    without it the kubelet's prepare fails with "the server could not find the requested resource"."""
    settings = settings_for(control_plane)
    if kubelet == control_plane or not supports_dra(kubelet) or not supports_dra(control_plane):
        return settings
    needed = f"{resource_api_version(kubelet)}=true"
    if resource_api_version(kubelet) != resource_api_version(control_plane) and needed not in settings.runtime_config:
        settings.runtime_config.append(needed)
    return settings
