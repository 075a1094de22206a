"""Extended resources served by DRA (DRAExtendedResource, KEP-5004): a DeviceClass names an extended
resource, a pod asks for it in its container limits, the scheduler writes a claim for the pod
(pod.status.extendedResourceClaimStatus) and the kubelet admits the pod although the node advertises no
such resource, prepares that claim and gives each container the devices of its own requests.

The gate is beta and on from 1.36, GA in 1.37 (module source v1.36.4 / v1.37.1 pkg/features/
kube_features.go); expectations/cluster.py turns no alpha gate on, so the suite checks it from 1.36.
"""

import pytest
from device_conformance.fixtures.dra_drivers import KEEP_FINALIZER

from device_conformance.framework import (
    DRA_EXTENDED_RESOURCE_POD_NOT_EVICTED,
    DRA_EXTENDED_RESOURCE_TAKEN_FOR_DEVICE_PLUGIN_RESOURCE,
    PREPARE,
    ClaimPodHandle,
    OptionsConfig,
    Pending,
    assert_evicted,
    build_device_class,
    cdi,
    cdi_support,
    claim_record,
    dra,
    parse_env,
    pods,
    print_env_script,
    timeouts,
    until,
)

pytestmark = [pytest.mark.dra, pytest.mark.since("1.36", "DRAExtendedResource is beta and on from 1.36 (KEP-5004)")]

SCRIPT = f"{print_env_script('DRA_')}; exec sleep 86400"


@pytest.fixture
def extended_class(kube, dra_objects, dra_driver):
    """(driver, extended resource name): a DeviceClass of a new two-device driver naming the resource."""
    driver = dra_driver(devices=("dev-0", "dev-1"))
    name = driver.config.driver_name
    resource = f"{name.split('.')[0]}.example.com/dev"
    class_name = f"{name}-ext"
    body = build_device_class(name, api_version=dra_objects.api, name=class_name)
    body["spec"]["extendedResourceName"] = resource
    dra.create_device_class(kube, body)
    yield driver, resource
    # The driver's teardown drains the pods first; the class goes before the driver, which is harmless:
    # a class is read only at scheduling.
    dra.delete_device_class(kube, dra_objects.api, class_name)


def extended_pod(kube, namespace, resource, prefix, containers=("main", "second"), keep=False):
    """Containers (the first one "main"), each asking for one device through the extended resource; keep:
    a finalizer holds the deleted pod (DraObjects.release drops it)."""
    finalizers = [KEEP_FINALIZER] if keep else []
    manifest = pods.pod_manifest(
        pods.unique_name(prefix), ["sh", "-c", SCRIPT], resources={resource: 1}, finalizers=finalizers
    )
    for name in containers[1:]:
        manifest["spec"]["containers"].append(pods.container_spec(name, ["sh", "-c", SCRIPT], resources={resource: 1}))
    return pods.create(kube, namespace, manifest)


def extended_claim_status(kube, namespace, name):
    def probe():
        status = pods.read(kube, namespace, name).status.extended_resource_claim_status
        return status if status and status.resource_claim_name else Pending(f"extendedResourceClaimStatus={status}")

    return until(probe, what=f"pod {namespace}/{name} to name its extended resource claim", timeout=timeouts.CLAIM)


@pytest.mark.scenario("DRA-E22", "DM-U9")
def test_extended_resource_pod_is_admitted_and_each_container_gets_its_device(
    node, kube, namespace, extended_class, dra_objects
):
    cdi_ok, why = cdi_support(node.runtime_info(), "the node's container runtime")
    if not cdi_ok:
        pytest.skip(f"the container runtime has no CDI, so DRA devices cannot reach containers: {why}")
    driver, resource = extended_class
    created = extended_pod(kube, namespace, resource, "ext")
    status = extended_claim_status(kube, namespace, created.metadata.name)
    claim_name = status.resource_claim_name
    pod = ClaimPodHandle.of(kube, created, dra_objects.nodes, resource_api=dra_objects.api, shared_claim=claim_name)
    pod.wait_running()
    allocatable = kube.core.read_node(node.name).status.allocatable or {}
    assert resource not in allocatable, f"the node advertises {resource}: {allocatable.get(resource)}"

    mappings = {(m.container_name, m.resource_name): m.request_name for m in status.request_mappings or []}
    assert sorted(mappings) == [("main", resource), ("second", resource)], f"requestMappings: {mappings}"
    claim = pod.claim()
    uid = claim["metadata"]["uid"]
    by_request = {r["request"]: r["device"] for r in claim["status"]["allocation"]["devices"]["results"]}
    assert sorted(by_request) == sorted(mappings.values()), f"allocation {by_request}, mappings {mappings}"
    assert sorted(by_request.values()) == ["dev-0", "dev-1"], f"allocation {by_request}"
    assert claim_record(driver.calls(PREPARE)) == [([uid], "ok")], "the pod's claim, prepared exactly once"

    resources = pod.wait_podresources()
    for container in ("main", "second"):
        device = by_request[mappings[(container, resource)]]
        pod.log_line("END-OF-ENV", container=container)
        seen = parse_env(pod.logs(container), "DRA_")
        assert seen == sorted(cdi.device_env(namespace, claim_name, uid, device)), (
            f"container {container} sees exactly its device {device}"
        )
        # podresources lists the whole claim for each container using it, not just the container's
        # requests (GetDynamicResources, pkg/kubelet/cm/container_manager_linux.go, module source v1.37.1).
        listed = [
            (d.claim_name, sorted(r.device_name for r in d.claim_resources))
            for d in resources.container(container).dynamic_resources
        ]
        assert listed == [(claim_name, ["dev-0", "dev-1"])], f"podresources of container {container}"


KEY = "example.com/broken"


@pytest.mark.taints
@pytest.mark.known_bug(DRA_EXTENDED_RESOURCE_POD_NOT_EVICTED)
def test_extended_resource_pod_is_evicted_by_a_noexecute_rule(
    kube, namespace, extended_class, dra_objects, shows_known_bug
):
    """kubernetes#141290: a NoExecute DeviceTaintRule on the driver evicts a pod whose device came through
    an extended resource, like the pod with an ordinary claim next to it."""
    driver, resource = extended_class
    ordinary = dra_objects.claim_pod("claim", driver, keep=True)
    ordinary.wait_running()
    created = extended_pod(kube, namespace, resource, "ext", containers=("main",), keep=True)
    claim_name = extended_claim_status(kube, namespace, created.metadata.name).resource_claim_name
    extended = ClaimPodHandle.of(
        kube, created, dra_objects.nodes, resource_api=dra_objects.api, shared_claim=claim_name
    )
    try:
        extended.wait_running()
        dra_objects.taint_rule(dra.device_taint(KEY, "NoExecute"), driver=driver.config.driver_name)
        assert_evicted(ordinary)
        with shows_known_bug(DRA_EXTENDED_RESOURCE_POD_NOT_EVICTED):
            assert_evicted(extended)
    finally:
        dra_objects.release(created.metadata.name)


def running_or_config_error(kube, namespace, name):
    """The pod once it is Running and Ready, or once the kubelet failed to build a container's config
    (waiting CreateContainerConfigError): the device manager refused the container's start."""

    def probe():
        pod = pods.read(kube, namespace, name)
        waiting = [
            cs.state.waiting
            for cs in pod.status.container_statuses or []
            if cs.state.waiting and cs.state.waiting.reason == "CreateContainerConfigError"
        ]
        if waiting or (pod.status.phase == "Running" and pods.is_ready(pod)):
            return pod
        return Pending(pods.summary(pod))

    return until(
        probe, what=f"pod {namespace}/{name} to run or fail its container config", timeout=timeouts.CLAIM_POD_START
    )


@pytest.mark.known_bug(DRA_EXTENDED_RESOURCE_TAKEN_FOR_DEVICE_PLUGIN_RESOURCE)
def test_extended_resource_named_like_a_departed_device_plugins_resource_starts_its_pod(
    node, kube, namespace, extended_class, register_plugin, node_resource, dra_objects, shows_known_bug
):
    """kubernetes#141426: a device plugin served the extended resource's name (with PreStartContainer required) and
    went away, as in a move from a device plugin to a DRA driver; while the kubelet still knows the resource (the
    grace period after the plugin's disconnect) the node offers none of it, so the scheduler gives the pod a DRA
    claim. The kubelet prepares the claim and starts the container; it must not handle the request as the
    departed plugin's (PreStartContainer with no device-plugin devices: "no devices found allocated in local
    cache")."""
    driver, resource = extended_class
    plugin = register_plugin(("dev-0", "dev-1"), resource, options=OptionsConfig(pre_start_required=True))
    plugin.stop()
    node_resource(resource).wait_counts(2, 0, timeouts.DEVICE_COUNTS_AFTER_RESTART)

    created = extended_pod(kube, namespace, resource, "ext", containers=("main",))
    claim_name = extended_claim_status(kube, namespace, created.metadata.name).resource_claim_name
    pod = ClaimPodHandle.of(kube, created, dra_objects.nodes, resource_api=dra_objects.api, shared_claim=claim_name)
    uid = pod.claim()["metadata"]["uid"]
    until(
        lambda: driver.calls(PREPARE) or None,
        what=f"{driver.config.driver_name} to be asked to prepare the claim",
        timeout=timeouts.CLAIM_POD_START,
    )
    seen = running_or_config_error(kube, namespace, created.metadata.name)
    with shows_known_bug(DRA_EXTENDED_RESOURCE_TAKEN_FOR_DEVICE_PLUGIN_RESOURCE):
        assert seen.status.phase == "Running", f"the pod's container did not start: {pods.summary(seen)}; " + "; ".join(
            pods.events(kube, namespace, created.metadata.name)[-3:]
        )
    assert claim_record(driver.calls(PREPARE)) == [([uid], "ok")], "the pod's claim, prepared once"
    assert plugin.calls("PreStartContainer") == [], "the departed plugin is asked nothing"
