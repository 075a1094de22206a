"""What the device-plugin scenarios check again and again: the kubelet's admission error, the calls a plugin gets
when it registers, podresources against the plugin's Allocate call, a pod that must live through a restart
unchanged, and the restarted kubelet taking a pod through admission again."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from kubernetes import client

from device_conformance.core import timeouts
from device_conformance.fakes.device_plugin import AllocateConfig, DeviceSpecConfig, MountConfig
from device_conformance.framework.handles import PodHandle
from device_conformance.kube import pods
from device_conformance.wait.core import Pending, until

# The reason of a pod the device manager refused at admission (pkg/kubelet/lifecycle, UnexpectedAdmissionError),
# and its message when the plugin of a resource is not registered (pkg/kubelet/cm/devicemanager/manager.go).
ADMISSION_ERROR = "UnexpectedAdmissionError"
NO_HEALTHY_DEVICES = "no healthy devices present; cannot allocate unhealthy devices"
# What a plugin that advertises neither PreStartContainer nor GetPreferredAllocation is asked when it registers, in
# order (a list: tests compare it with the call log's list of methods).
REGISTRATION_CALLS = ["GetDevicePluginOptions", "ListAndWatch"]


def allocate_every_field(env: str, host_dir: str | os.PathLike[str], annotation: str) -> AllocateConfig:
    """An Allocate answer that uses every field, for a container's devices: env `env` = their IDs, each device's
    host directory <host_dir>/<id> mounted read-only at /dev-info/<id>, /dev/null as device node /dev/dc-<id>,
    annotation `annotation` = their IDs, and each device's CDI device <resource>=<id> (the fake writes its spec)."""
    return AllocateConfig(
        envs={env: "{ids}"},
        mounts=[MountConfig(container_path="/dev-info/{id}", host_path=f"{host_dir}/{{id}}", read_only=True)],
        devices=[DeviceSpecConfig(container_path="/dev/dc-{id}", host_path="/dev/null", permissions="rw")],
        annotations={annotation: "{ids}"},
        cdi_devices=["{resource}={id}"],
    )


def assert_lists(pod: PodHandle, resource: str, granted: Sequence[str], when: str) -> None:
    """podresources lists exactly the device IDs the kubelet allocated to container main (`granted`, from the
    plugin's Allocate call), in any order: podresources lists a set."""
    listed = sorted(pod.devices(resource))
    assert listed == sorted(granted), (
        f"{when}: podresources lists {listed} for {pod} main, the kubelet allocated {granted}"
    )


def main_container(current: client.V1Pod) -> client.V1ContainerStatus | None:
    """The status of container "main" of a pod as read, None while it has none."""
    return next((s for s in current.status.container_statuses or [] if s.name == "main"), None)


def restarted_or_replaced(current: client.V1Pod, uid: str, *, running: bool = False) -> bool:
    """Whether `current` is no longer the pod of `uid`, Running, with a status of container main that never
    restarted (with `running`: and is in state running)."""
    main = main_container(current)
    if main is None or (running and not main.state.running):
        return True
    return current.metadata.uid != uid or current.status.phase != "Running" or bool(main.restart_count)


def keeps_running(pod: PodHandle, duration: float = 5, *, admission: bool = False) -> None:
    """The pod stays the object it was created as, Running, its container main never restarted, for `duration`
    seconds. With `admission` (the kubelet may reject the pod when it admits it again): main must be in state
    running too, and what broke it names the kubelet's admission events (a rejected pod can show phase Running
    without container statuses until its containers are stopped)."""

    def changed(current: client.V1Pod) -> str | None:
        if not restarted_or_replaced(current, pod.uid, running=admission):
            return None
        if admission:
            return f"{pods.summary(current)}; admission events: {[e for e in pod.events() if ADMISSION_ERROR in e]}"
        if main_container(current) is None:
            return f"no status of container main: {pods.summary(current)}"
        return pods.summary(current)

    pod.stays(changed, what="to keep running unrestarted", duration=duration)


def assert_running_unrestarted(pod: PodHandle, uid: str, when: str) -> None:
    """The pod is now still the pod of `uid`, Running, its container main never restarted."""
    current = pod.read()
    assert not restarted_or_replaced(current, uid), (
        f"{when}: {pod} is no longer the Running, never restarted pod it was: {pods.summary(current)}"
    )


def readmission_line(node: Any, pod: PodHandle, mark: int) -> str:
    """The restarted kubelet's "SyncLoop ADD" line naming `pod` (V(2)), logged since `mark`: it has taken the pod
    from the API server, and runs HandlePodAdditions, the pod's admission, right after it in the same goroutine
    (pkg/kubelet/kubelet.go syncLoopIteration; the same in module source v1.28.15 and v1.37.1)."""
    wanted = f'"{pod.namespace}/{pod.name}"'

    def added() -> str | Pending:
        lines = [line for line in node.kubelet.log_since(mark).splitlines() if "SyncLoop ADD" in line]
        found = [line for line in lines if wanted in line]
        return found[0] if found else Pending(f"SyncLoop ADD lines {lines[-3:]}")

    return until(added, what=f"the restarted kubelet's SyncLoop ADD of {pod}", timeout=timeouts.NODE_READY)
