"""How to configure each Kubernetes version's components. Version differences live here, as data.

Every entry names the upstream change behind it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

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
    """What the suites need switched on for `version` (DRA, device taints, cgroup v1 hosts)."""
    gates: dict[str, bool] = {}
    runtime: list[str] = []
    kubelet: dict[str, object] = {}
    if version.at_least(35):
        # 1.35 flipped failCgroupV1 to true (KEP-5573, kubernetes#134298); our hosts are cgroup v1.
        kubelet["failCgroupV1"] = False
    if not version.at_least(34):
        # DRA is GA and on by default from 1.34 (KEP-4381); before that it is a beta gate + API.
        gates["DynamicResourceAllocation"] = True
        runtime.append("resource.k8s.io/v1beta1=true")
    if not version.at_least(36):
        # DRADeviceTaints: alpha 1.33-1.35, beta on in 1.36, GA in 1.37 (KEP-5055, kubernetes/enhancements#6299).
        gates["DRADeviceTaints"] = True
    if version.at_least(33) and not version.at_least(37):
        # DeviceTaintRule: v1alpha3 until 1.35, v1beta2 (gate off by default) in 1.36, v1 in 1.37.
        if version.at_least(35):
            gates["DRADeviceTaintRules"] = True
        runtime.append("resource.k8s.io/v1beta2=true" if version.at_least(36) else "resource.k8s.io/v1alpha3=true")
    return ComponentSettings(feature_gates=gates, runtime_config=runtime, kubelet_config=kubelet)
