"""Request kinds beyond "one device of a class", through the kubelet: prioritized lists (firstAvailable:
the sub-request chosen, the container's request name, the checkpoint), admin access (namespace label,
a DaemonSet sharing a device another pod holds), consumable capacity (ShareIDs) and partitionable devices
(partitions drawing on a shared counter set).

Gates (module source v1.37.1 pkg/features/kube_features.go): DRAPrioritizedList and DRAAdminAccess are GA
and locked on in 1.37 (beta, on, from 1.34); DRAConsumableCapacity is beta and on from 1.36;
DRAPartitionableDevices is alpha (off) from 1.33 and beta, on, from 1.36.
"""

import pytest
from kubernetes import client

from device_conformance.framework import (
    PARTITIONABLE_DEVICES_SINCE,
    PREPARE,
    SINCE_ADMIN_ACCESS,
    ClaimPodHandle,
    DeviceSpec,
    Pending,
    cdi,
    cdi_support,
    claim_record,
    dra,
    dra_checkpoint_entry,
    parse_env,
    pods,
    print_env_script,
    timeouts,
    until,
)

pytestmark = [pytest.mark.dra]

ADMIN_LABEL = "resource.kubernetes.io/admin-access"


def claim_pod(kube, dra_objects, prefix, spec, command, *, container_request=None, **options):
    """A pod whose container uses a claim generated from a new template with `spec`; container_request:
    the request name the container names in resources.claims (all of the claim when None)."""
    template = pods.unique_name("tmpl")
    body = dra.claim_template_manifest(template, spec, dra_objects.api)
    dra.create(kube, dra_objects.namespace, "resourceclaimtemplates", body)
    manifest = dra.with_claims(
        pods.pod_manifest(pods.unique_name(prefix), list(command), **options), templates={"dev": template}
    )
    if container_request:
        manifest["spec"]["containers"][0]["resources"]["claims"][0]["request"] = container_request
    created = pods.create(kube, dra_objects.namespace, manifest)
    return ClaimPodHandle.of(kube, created, dra_objects.nodes, resource_api=dra_objects.api)


def results_of(claim):
    results = claim["status"]["allocation"]["devices"]["results"]
    return [(r["request"], r["device"]) for r in results]


@pytest.mark.since("1.34", "DRAPrioritizedList is beta and on from 1.34 (KEP-4816)")
@pytest.mark.scenario("DRA-E18")
def test_prioritized_list_subrequest_is_prepared_and_reaches_the_container(node, kube, dra_driver, dra_objects):
    """No device matches the first sub-request, so the second is allocated ("dev/small"); the kubelet
    prepares the claim once, checkpoints what the driver answered, and gives the container that names
    request "dev" the device's CDI device."""
    cdi_ok, why = cdi_support(node.runtime_info(), "the node's container runtime")
    if not cdi_ok:
        pytest.skip(f"the container runtime has no CDI, so DRA devices cannot reach containers: {why}")
    driver = dra_driver(devices=(DeviceSpec("dev-0", attributes={"size": "small"}),))
    name = driver.config.driver_name
    spec = dra.claim_spec(
        [
            {
                "name": "dev",
                "firstAvailable": [
                    {
                        "name": "big",
                        "deviceClassName": name,
                        "selectors": [{"cel": {"expression": f'device.attributes["{name}"].size == "big"'}}],
                    },
                    {"name": "small", "deviceClassName": name},
                ],
            }
        ]
    )
    script = f"{print_env_script('DRA_')}; exec sleep 86400"
    pod = claim_pod(kube, dra_objects, "prio", spec, ["sh", "-c", script], container_request="dev")
    pod.wait_running()
    pod.log_line("END-OF-ENV")
    claim = pod.claim()
    uid, claim_name = claim["metadata"]["uid"], claim["metadata"]["name"]
    assert results_of(claim) == [("dev/small", "dev-0")], "the second sub-request, as no big device exists"
    assert claim_record(driver.calls(PREPARE)) == [([uid], "ok")], "prepared exactly once"
    (answered,) = driver.prepared()[uid]["devices"]
    (device,) = dra_checkpoint_entry(node, uid).drivers[name]
    assert (device.device_name, device.request_names, device.cdi_device_ids) == (
        "dev-0",
        answered["request_names"],
        answered["cdi_device_ids"],
    ), "the checkpoint holds the driver's answer for the sub-request"
    seen = parse_env(pod.logs(), "DRA_")
    assert seen == sorted(cdi.device_env(pod.namespace, claim_name, uid, "dev-0")), (
        "the container naming request 'dev' sees the device allocated for 'dev/small'"
    )


def admin_claim_spec(device_class):
    request = dra.device_request(device_class)
    request["exactly"]["adminAccess"] = True
    return dra.claim_spec([request])


@SINCE_ADMIN_ACCESS
@pytest.mark.scenario("DRA-E26")
def test_admin_access_needs_the_namespace_label(kube, namespace, dra_driver, dra_objects):
    driver = dra_driver(devices=("dev-0",))
    spec = admin_claim_spec(driver.config.driver_name)
    body = dra.claim_manifest("admin", spec, dra_objects.api)
    with pytest.raises(client.ApiException) as refused:
        dra.create(kube, namespace, "resourceclaims", body)
    expected = f"admin access to devices requires the `{ADMIN_LABEL}: true` label on the containing namespace"
    assert refused.value.status == 422 and expected in refused.value.body, f"refusal: {refused.value.body}"

    kube.core.patch_namespace(namespace, {"metadata": {"labels": {ADMIN_LABEL: "true"}}})
    created = until(
        lambda: _created_or_pending(kube, namespace, body),
        what="an admin-access claim to be accepted in the labelled namespace",
        timeout=timeouts.CLAIM,
    )
    assert created["spec"]["devices"]["requests"][0]["exactly"].get("adminAccess") is True, "kept, not dropped"


def _created_or_pending(kube, namespace, body):
    try:
        return dra.create(kube, namespace, "resourceclaims", body)
    except client.ApiException as exc:
        return Pending(f"HTTP {exc.status}: {exc.body[:200]}")


@SINCE_ADMIN_ACCESS
@pytest.mark.scenario("DRA-E8")
def test_admin_access_daemonset_runs_beside_the_device_owner(node, kube, namespace, dra_driver, dra_objects):
    """The only device is held by an ordinary pod; a DaemonSet pod with admin access gets the same device
    (admin access ignores other allocations) and the kubelet prepares its claim too."""
    driver = dra_driver(devices=("dev-0",))
    owner = dra_objects.claim_pod("owner", driver)
    owner.wait_running()
    kube.core.patch_namespace(namespace, {"metadata": {"labels": {ADMIN_LABEL: "true"}}})
    template = pods.unique_name("admin")
    spec = admin_claim_spec(driver.config.driver_name)
    dra.create(kube, namespace, "resourceclaimtemplates", dra.claim_template_manifest(template, spec, dra_objects.api))
    pod_spec = dra.with_claims(pods.pod_manifest("monitor", ["sleep", "86400"]), templates={"dev": template})["spec"]
    pod_spec["restartPolicy"] = "Always"
    pod_spec["nodeSelector"] = {"kubernetes.io/hostname": node.name}
    labels = {"app": "dc-monitor", pods.RUN_LABEL: "true"}
    daemonset = {
        "metadata": {"name": "monitor"},
        "spec": {
            "selector": {"matchLabels": {"app": "dc-monitor"}},
            "template": {"metadata": {"labels": labels}, "spec": pod_spec},
        },
    }
    apps = client.AppsV1Api(kube.api_client)
    apps.create_namespaced_daemon_set(namespace, daemonset)
    try:

        def daemon_pod():
            listed = kube.core.list_namespaced_pod(namespace, label_selector="app=dc-monitor").items
            running = [p for p in listed if p.status.phase == "Running" and p.spec.node_name == node.name]
            return running[0] if running else Pending(f"{[pods.summary(p) for p in listed]}")

        running = until(daemon_pod, what="the DaemonSet's pod to run on the node", timeout=timeouts.CLAIM_POD_START)
        monitor = ClaimPodHandle.of(kube, running, dra_objects.nodes, resource_api=dra_objects.api)
        claim = monitor.claim()
        results = claim["status"]["allocation"]["devices"]["results"]
        assert [(r["device"], r.get("adminAccess")) for r in results] == [("dev-0", True)], f"allocation {results}"
        assert owner.allocated_devices() == ["dev-0"], "the owner keeps its device"
        uids = [owner.claim_uid(), claim["metadata"]["uid"]]
        assert claim_record(driver.calls(PREPARE)) == [([uids[0]], "ok"), ([uids[1]], "ok")], "each claim once"
        assert sorted(driver.prepared()) == sorted(uids)
    finally:
        apps.delete_namespaced_daemon_set("monitor", namespace)
        until(
            lambda: (
                True
                if not kube.core.list_namespaced_pod(namespace, label_selector="app=dc-monitor").items
                else Pending("DaemonSet pods still there")
            ),
            what="the DaemonSet's pods to go",
            timeout=timeouts.POD_GONE,
        )


def capacity_claim_spec(device_class, memory):
    request = dra.device_request(device_class)
    request["exactly"]["capacity"] = {"requests": {"memory": memory}}
    return dra.claim_spec([request])


@pytest.mark.since("1.36", "DRAConsumableCapacity is beta and on from 1.36 (KEP-5075)")
@pytest.mark.scenario("DRA-H7", "DRA-E18")
def test_two_claims_sharing_a_device_prepare_and_unprepare_with_their_share_ids(node, kube, dra_driver, dra_objects):
    """One device with allowMultipleAllocations and 4Gi of memory, two pods asking for 1Gi each: the
    scheduler gives both the device with different ShareIDs; the kubelet prepares each claim once, keeps
    each ShareID the driver answered in its checkpoint, and unprepares each claim when its pod goes."""
    driver = dra_driver(devices=(DeviceSpec("dev-0", capacity={"memory": "4Gi"}, allow_multiple_allocations=True),))
    spec = capacity_claim_spec(driver.config.driver_name, "1Gi")
    sharing = [claim_pod(kube, dra_objects, f"share{i}", spec, ["sleep", "86400"]) for i in range(2)]
    claims = []
    for pod in sharing:
        pod.wait_running()
        claims.append(pod.claim())
    uids = [c["metadata"]["uid"] for c in claims]
    share_ids = []
    for claim in claims:
        (result,) = claim["status"]["allocation"]["devices"]["results"]
        assert (result["device"], result.get("consumedCapacity")) == ("dev-0", {"memory": "1Gi"}), f"{result}"
        share_ids.append(result.get("shareID"))
    assert all(share_ids) and share_ids[0] != share_ids[1], f"ShareIDs of the two allocations: {share_ids}"
    assert sorted(claim_record(driver.calls(PREPARE))) == sorted([([u], "ok") for u in uids]), "each claim once"
    for uid, share_id in zip(uids, share_ids, strict=True):
        (answered,) = driver.prepared()[uid]["devices"]
        (device,) = dra_checkpoint_entry(node, uid).drivers[driver.config.driver_name]
        assert (answered.get("share_id"), device.device_name, device.share_id) == (share_id, "dev-0", share_id), (
            f"the driver's answer and the kubelet's checkpoint for claim {uid}"
        )
    for pod, uid in zip(sharing, uids, strict=True):
        pod.delete()
        pod.wait_gone(timeout=timeouts.UNPREPARE)
        assert uid not in driver.prepared(), f"claim {uid} unprepared when its pod went"
    unprepares = claim_record(driver.calls("NodeUnprepareResources"))
    assert unprepares == [([uids[0]], "ok"), ([uids[1]], "ok")], "each claim unprepared once, in pod order"


def size_request(device_class, size, count=1):
    """`count` devices of `device_class` whose attribute size is `size`."""
    return {"count": count, "selectors": [f'device.attributes["{device_class}"].size == "{size}"']}


def checkpointed_claim_devices(node, driver, uid):
    """The device names the kubelet recorded in dra_manager_state for the claim: what the driver answered."""
    return sorted(d.device_name for d in dra_checkpoint_entry(node, uid).drivers[driver.config.driver_name])


@pytest.mark.since(PARTITIONABLE_DEVICES_SINCE, "DRAPartitionableDevices is beta and on from 1.36 (KEP-4815)")
@pytest.mark.scenario("DRA-E18")
def test_partitions_are_allocated_only_as_far_as_their_shared_counters_allow(node, dra_driver, dra_objects):
    """One GPU with 4Gi, published as a counter set, and three partitions drawing on it: two halves (2Gi
    each) and the whole (4Gi). A pod asking for both halves gets them, and the kubelet prepares its claim
    once and checkpoints both partitions the driver answered; a pod asking for the whole stays
    unschedulable while the halves hold the counters, with the scheduler's reason, and runs on the whole
    once the first pod is gone."""
    half = {"gpu-0": {"memory": "2Gi"}}
    driver = dra_driver(
        devices=(
            DeviceSpec("gpu-0-half-a", attributes={"size": "half"}, consumes_counters=half),
            DeviceSpec("gpu-0-half-b", attributes={"size": "half"}, consumes_counters=half),
            DeviceSpec("gpu-0-full", attributes={"size": "full"}, consumes_counters={"gpu-0": {"memory": "4Gi"}}),
        ),
        shared_counters={"gpu-0": {"memory": "4Gi"}},
    )
    name = driver.config.driver_name
    halves = dra_objects.claim_pod("halves", driver, request=size_request(name, "half", count=2))
    halves.wait_running()
    halves_uid = halves.claim_uid()
    assert sorted(halves.allocated_devices()) == ["gpu-0-half-a", "gpu-0-half-b"]
    assert claim_record(driver.calls(PREPARE)) == [([halves_uid], "ok")], "prepared once"
    assert checkpointed_claim_devices(node, driver, halves_uid) == ["gpu-0-half-a", "gpu-0-half-b"], "both halves"

    whole = dra_objects.claim_pod("whole", driver, request=size_request(name, "full"))
    message = whole.wait_unschedulable()
    assert "cannot allocate all claims" in message, f"the scheduler's message: {message}"
    assert whole.allocated_devices() == [], "the whole GPU was allocated while its halves hold the counters"
    assert claim_record(driver.calls(PREPARE)) == [([halves_uid], "ok")], "only the halves' claim prepared"

    halves.delete()
    halves.wait_gone(timeout=timeouts.UNPREPARE)
    whole.wait_running()
    whole_uid = whole.claim_uid()
    assert whole.allocated_devices() == ["gpu-0-full"]
    assert claim_record(driver.calls(PREPARE)) == [([halves_uid], "ok"), ([whole_uid], "ok")], "each claim once"
    assert sorted(driver.prepared()) == [whole_uid], "the halves' claim unprepared, the whole's prepared"
    assert checkpointed_claim_devices(node, driver, whole_uid) == ["gpu-0-full"]
