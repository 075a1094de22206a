"""framework/device_plugin.py: what the device-plugin suites check again and again, against stand-ins for a
pod handle and a node (no cluster)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from kubernetes import client

from device_conformance.fakes.device_plugin.allocate import container_response
from device_conformance.framework import device_plugin


def pod_as_read(uid="uid-1", phase="Running", main=True, restarts=0, running=True) -> client.V1Pod:
    statuses = []
    if main:
        state = client.V1ContainerState(
            running=client.V1ContainerStateRunning() if running else None,
            waiting=None if running else client.V1ContainerStateWaiting(reason="ContainerCreating"),
        )
        statuses.append(
            client.V1ContainerStatus(
                name="main", restart_count=restarts, image="i", image_id="", ready=running, state=state
            )
        )
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name="p", namespace="ns", uid=uid),
        status=client.V1PodStatus(phase=phase, container_statuses=statuses),
    )


@pytest.mark.parametrize(
    ("fields", "running", "broken"),
    [
        ({}, False, False),
        ({}, True, False),
        ({"uid": "uid-2"}, False, True),  # a new pod of the same name
        ({"phase": "Failed"}, False, True),
        ({"restarts": 1}, False, True),
        ({"main": False}, False, True),  # no status of main: a pod rejected at admission shows none
        ({"running": False}, False, False),  # main not running: only the admission check minds
        ({"running": False}, True, True),
    ],
)
def test_restarted_or_replaced(fields, running, broken):
    assert device_plugin.restarted_or_replaced(pod_as_read(**fields), "uid-1", running=running) is broken


class Handle:
    """A PodHandle stand-in: what keeps_running reads and how it is asked to watch."""

    uid = "uid-1"

    def __init__(self, current: client.V1Pod, events: list[str] = ()):
        self.current = current
        self._events = list(events)
        self.watched = []

    def stays(self, broken, *, what, duration):
        self.watched.append((what, duration))
        seen = broken(self.current)
        if seen is not None:
            raise AssertionError(f"expected {self} {what}, but {seen}")

    def events(self) -> list[str]:
        return self._events

    def read(self) -> client.V1Pod:
        return self.current

    def devices(self, resource: str) -> list[str]:
        return ["dev-1", "dev-0"]

    def __str__(self) -> str:
        return "pod ns/p"


def test_keeps_running_watches_five_seconds_unless_told_and_passes_an_unchanged_pod():
    pod = Handle(pod_as_read())
    device_plugin.keeps_running(pod)
    device_plugin.keeps_running(pod, duration=2, admission=True)
    assert pod.watched == [("to keep running unrestarted", 5), ("to keep running unrestarted", 2)]


def test_keeps_running_says_what_changed():
    with pytest.raises(AssertionError, match=r"but phase=Failed"):
        device_plugin.keeps_running(Handle(pod_as_read(phase="Failed")))
    with pytest.raises(AssertionError, match=r"but no status of container main: phase=Running"):
        device_plugin.keeps_running(Handle(pod_as_read(main=False)))


def test_keeps_running_for_an_admission_names_the_kubelets_admission_events():
    events = ["Warning UnexpectedAdmissionError Pod/p: Allocate failed", "Normal Scheduled Pod/p: x"]
    pod = Handle(pod_as_read(running=False), events)
    device_plugin.keeps_running(pod)  # a main not running yet is no change to the plain check
    with pytest.raises(AssertionError, match=r"admission events: \['Warning UnexpectedAdmissionError Pod/p"):
        device_plugin.keeps_running(pod, admission=True)


def test_assert_running_unrestarted():
    device_plugin.assert_running_unrestarted(Handle(pod_as_read()), "uid-1", "after the restart")
    with pytest.raises(AssertionError, match=r"^after the restart: pod ns/p is no longer the Running, never restarted"):
        device_plugin.assert_running_unrestarted(Handle(pod_as_read(restarts=2)), "uid-1", "after the restart")
    with pytest.raises(AssertionError):
        device_plugin.assert_running_unrestarted(Handle(pod_as_read()), "uid-0", "after the restart")


def test_assert_lists_compares_podresources_with_the_allocation_as_sets():
    device_plugin.assert_lists(Handle(pod_as_read()), "example.com/dev", ["dev-0", "dev-1"], "now")
    with pytest.raises(AssertionError, match=r"now: podresources lists \['dev-0', 'dev-1'\] for pod ns/p main"):
        device_plugin.assert_lists(Handle(pod_as_read()), "example.com/dev", ["dev-0"], "now")


def test_the_every_field_answer_renders_each_field_for_the_allocated_devices(tmp_path: Path):
    config = device_plugin.allocate_every_field("DC_DEVICES", tmp_path, "dc.example.com/devices")
    rendered = container_response(config, ["dev-0", "dev-1"], "example.com/gpu")
    assert dict(rendered.envs) == {"DC_DEVICES": "dev-0,dev-1"}
    assert [(m.container_path, m.host_path, m.read_only) for m in rendered.mounts] == [
        (f"/dev-info/{d}", f"{tmp_path}/{d}", True) for d in ("dev-0", "dev-1")
    ]
    assert [(d.container_path, d.host_path, d.permissions) for d in rendered.devices] == [
        (f"/dev/dc-{d}", "/dev/null", "rw") for d in ("dev-0", "dev-1")
    ]
    assert dict(rendered.annotations) == {"dc.example.com/devices": "dev-0,dev-1"}
    assert [c.name for c in rendered.cdi_devices] == ["example.com/gpu=dev-0", "example.com/gpu=dev-1"]


class Named:
    namespace, name = "ns", "p"

    def __str__(self) -> str:
        return "pod ns/p"


def test_the_readmission_line_is_the_sync_loop_add_naming_the_pod():
    log = "\n".join(
        [
            'I1128 08:13:39.1 kubelet.go:2400] "SyncLoop ADD" source="api" pods=["ns/other"]',
            'I1128 08:13:39.2 kubelet.go:2400] "SyncLoop ADD" source="api" pods=["ns/p"]',
        ]
    )
    node = SimpleNamespace(kubelet=SimpleNamespace(log_since=lambda mark: log if mark == 7 else ""))
    assert device_plugin.readmission_line(node, Named(), 7).endswith('pods=["ns/p"]')
