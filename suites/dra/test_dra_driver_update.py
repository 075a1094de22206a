"""Driver updates with two instances of one driver (upstream test/e2e/dra/dra.go, "kubelet" individual
configurations: "rolling update", "failed update", "sequential update with pods replacing each other", all
KubeletMinVersion 1.33: seamless driver upgrades, kubernetes#129832).

Rolling and failed update: a second process of the same driver registers on sockets of its own
(`DriverConfig.instance`: <driver>-<instance>-reg.sock and dra-<instance>.sock, the kubeletplugin helper's
RollingUpdate names), then one of the two goes away. The kubelet keeps every registration of a driver and
calls the newest connected one (pkg/kubelet/cm/dra/plugin/dra_plugin_manager.go, module source v1.37.1:
`get`, `remove`, `sync`); the driver stays usable, so its ResourceSlices must not be wiped: they stay the
very same objects for the kubelet's wiping delay (timeouts.DRA_WIPING_DELAY, `defaultWipingDelay`) and
beyond. Each update is a module fixture of its own (`rolling_update`, `failed_update`); the `overlapping`
marker starts both before the module's first test, so their slice windows run side by side while the tests
do their pods.

Sequential update (`slow`): the old process stops, a new one starts on the same sockets; the slices survive
the short downtime and are wiped once the driver stays away longer than the wiping delay.
"""

import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from device_conformance.framework import (
    FIRST_SEAMLESS_DRIVER_UPDATE_MINOR,
    PREPARE,
    SINCE_SEAMLESS_DRIVER_UPDATE,
    DraDriverHandle,
    Watch,
    claim_record,
    dra,
    slice_name,
    stays,
    timeouts,
    wait_dra,
    watch,
)

pytestmark = [pytest.mark.dra, SINCE_SEAMLESS_DRIVER_UPDATE, pytest.mark.overlapping("rolling_update", "failed_update")]

# The slices must outlive the wiping delay by a margin: a wipe is a timed work item of the kubelet.
SLICES_KEPT_WINDOW = timeouts.DRA_WIPING_DELAY + 10


def driver_slices(kube, api, node_name, driver_name):
    """The driver's slices on the node, whole objects (uid, resourceVersion, managedFields), by name."""
    items = dra.list_slices(kube, api, node=node_name, driver=driver_name)
    return sorted(items, key=lambda item: item["metadata"]["name"])


def versions(items):
    return [(i["metadata"]["name"], i["metadata"]["resourceVersion"]) for i in items]


def slices_changed(kube, api, node_name, driver_name, before):
    """None while the driver's slices are exactly `before`, else how they differ."""
    now = driver_slices(kube, api, node_name, driver_name)
    return None if now == before else f"slices (name, resourceVersion) now {versions(now)}, before {versions(before)}"


def slices_kept(kube, api, node_name, driver_name, before, what) -> Watch:
    """A background window in which the driver's slices stay exactly `before`."""
    return watch(
        lambda: slices_changed(kube, api, node_name, driver_name, before), what=what, duration=SLICES_KEPT_WINDOW
    )


@dataclass
class Update:
    """Two instances of one driver, one of them gone; the window guarding the slices already running."""

    serving: DraDriverHandle  # the instance that stayed
    gone: DraDriverHandle  # the instance that went away (stopped cleanly: its sockets removed)
    slices_before: list[dict]
    slices_window: Watch


def two_instances(shared, *, stop: str) -> Update:
    """An "old" instance, then a "new" one of the same driver; `stop` ("old" or "new") is stopped after both
    are registered. Each fixture call waits for its instance's registration and published slice."""
    old = shared.driver(devices=("dev-0",), instance="old")
    name = old.config.driver_name
    before = driver_slices(shared.kube, old.config.resource_api_version, shared.node.name, name)
    assert [i["metadata"]["name"] for i in before] == [slice_name(shared.node.name, name)], (
        f"slices of {name} before the update: {before}"
    )
    new = shared.driver(devices=("dev-0",), driver_name=name, instance="new")
    gone, serving = (old, new) if stop == "old" else (new, old)
    assert gone.stop() == 0, f"{gone.name} did not stop cleanly: {gone.log_tail()}"
    what = f"the slices of {name} to stay the same objects after its {stop} instance went"
    window = slices_kept(shared.kube, old.config.resource_api_version, shared.node.name, name, before, what)
    return Update(serving, gone, before, window)


def update_with_slices_window(request: pytest.FixtureRequest, cluster, *, stop: str) -> Iterator[Update | None]:
    """two_instances(stop=...) for a module fixture; cancels its slices window at teardown. A test's module
    fixtures set up before its `since` marker skips it: below the release there is nothing to start."""
    if not cluster.k8s_version.at_least(FIRST_SEAMLESS_DRIVER_UPDATE_MINOR):
        yield None  # the module's since marker skips every test
        return
    update = two_instances(request.getfixturevalue("shared_dra"), stop=stop)
    yield update
    update.slices_window.cancel()


@pytest.fixture(scope="module")
def rolling_update(request, cluster):
    """The old instance went after the new one registered; the new one serves."""
    yield from update_with_slices_window(request, cluster, stop="old")


@pytest.fixture(scope="module")
def failed_update(request, cluster):
    """The new instance went (failed) after registering; the old one keeps serving."""
    yield from update_with_slices_window(request, cluster, stop="new")


def prepared_by_the_serving_instance_only(update, shared):
    pod = shared.objects.claim_pod("updated", update.serving)
    pod.wait_running()
    uid = pod.claim_uid()
    assert claim_record(update.serving.calls(PREPARE)) == [([uid], "ok")], f"prepared once by {update.serving}"
    assert update.gone.calls(PREPARE) == [], f"NodePrepareResources reached the instance that went, {update.gone}"
    assert pod.allocated_devices() == ["dev-0"]
    pod.delete()
    pod.wait_gone(timeout=timeouts.UNPREPARE)


@pytest.mark.scenario("DRA-E15")
def test_rolling_update_new_instance_serves_and_slices_stay(rolling_update, shared_dra):
    prepared_by_the_serving_instance_only(rolling_update, shared_dra)
    rolling_update.slices_window.holds()


@pytest.mark.scenario("DRA-E16")
def test_failed_update_old_instance_keeps_serving_and_slices_stay(failed_update, shared_dra):
    prepared_by_the_serving_instance_only(failed_update, shared_dra)
    failed_update.slices_window.holds()


@pytest.mark.slow  # the downtime window and the wipe each last the kubelet's 30 s wiping delay
@pytest.mark.scenario("DRA-E17")
def test_sequential_update_keeps_slices_and_uninstall_wipes_them(kube, node, resource_api, dra_driver, dra_objects):
    old = dra_driver(devices=("dev-0",))
    name = old.config.driver_name
    before = driver_slices(kube, resource_api, node.name, name)
    assert len(before) == 1, f"slices of {name}: {before}"
    down_at = time.monotonic()
    assert old.stop() == 0, f"{old.name} did not stop cleanly: {old.log_tail()}"
    new = dra_driver(devices=("dev-0",), driver_name=name)  # same sockets, a new process and call log
    pod = dra_objects.claim_pod("sequential", new)
    pod.wait_running()
    assert claim_record(new.calls(PREPARE)) == [([pod.claim_uid()], "ok")], "prepared once, by the new process"
    assert old.calls(PREPARE) == []
    remaining = SLICES_KEPT_WINDOW - (time.monotonic() - down_at)
    stays(
        lambda: slices_changed(kube, resource_api, node.name, name, before),
        what=f"the slices of {name} to stay the same objects past the wiping delay after the downtime",
        duration=max(remaining, 0),
    )
    pod.delete()
    pod.wait_gone(timeout=timeouts.UNPREPARE)

    uninstalled_at = time.monotonic()
    assert new.stop() == 0, f"{new.name} did not stop cleanly: {new.log_tail()}"
    wait_dra.for_slice_count(kube, resource_api, node.name, name, 0, timeout=timeouts.DRA_SLICE_WIPE)
    waited = time.monotonic() - uninstalled_at
    assert waited >= timeouts.DRA_WIPING_DELAY - 2, f"slices wiped {waited:.0f}s after uninstall, before the delay"
