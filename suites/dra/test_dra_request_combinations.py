"""Request names in combination: one container naming two requests of the same claim separately
(`resources.claims: [{name: c, request: r1}, {name: c, request: r2}]`) gets the CDI devices of both, and none
of a third request of that claim it did not name, which a second container names alone.

Proved against one-line breaks of a 1.37.1 tree (K8S_SOURCE; `pytest <this module> -n 1 -m ''
--k8s-source DIR --k8s-version 1.37.1`), each reverted afterwards (the same run passes):

- dra manager.go GetResources: `containerClaimsMap[claim.Name] = append(containerClaimsMap[claim.Name],
  claim.Request)` -> `containerClaimsMap[claim.Name] = []string{claim.Request}` (only the last request a
  container names of a claim counts):
  `AssertionError: main names r1 and r2, not r3 of {'r1': 'dev-0', 'r2': 'dev-1', 'r3': 'dev-2'}: it sees
  ['DRA_CLAIM_UID_DEV_1=e25e7609-…', 'DRA_DEVICE_DEV_1=dc-a2ce1002/claim-ee2896'], expected
  ['DRA_CLAIM_UID_DEV_0=e25e7609-…', 'DRA_CLAIM_UID_DEV_1=e25e7609-…', 'DRA_DEVICE_DEV_0=dc-a2ce1002/claim-ee2896',
  'DRA_DEVICE_DEV_1=dc-a2ce1002/claim-ee2896']`
- dra manager.go GetResources: `claimInfo.cdiDevicesAsList(requestName)` ->
  `claimInfo.cdiDevicesAsList(requestName[:0])` (the request name is ignored: every device of the claim):
  `AssertionError: main names r1 and r2, not r3 of {'r1': 'dev-0', 'r2': 'dev-1', 'r3': 'dev-2'}: it sees
  ['DRA_CLAIM_UID_DEV_0=c0a146eb-…', 'DRA_CLAIM_UID_DEV_1=c0a146eb-…', 'DRA_CLAIM_UID_DEV_2=c0a146eb-…',
  'DRA_DEVICE_DEV_0=dc-431f61f3/claim-4376ec', 'DRA_DEVICE_DEV_1=…', 'DRA_DEVICE_DEV_2=…'], expected
  ['DRA_CLAIM_UID_DEV_0=c0a146eb-…', 'DRA_CLAIM_UID_DEV_1=c0a146eb-…', 'DRA_DEVICE_DEV_0=dc-431f61f3/claim-4376ec',
  'DRA_DEVICE_DEV_1=dc-431f61f3/claim-4376ec']`
"""

import pytest
from device_conformance.fixtures.dra_pods import allocation, claim_with_requests, claims_pod, expected_env, seen_env

from device_conformance.framework import PREPARE, SINCE_DRA, claim_record, timeouts

pytestmark = [pytest.mark.dra, SINCE_DRA]


@pytest.mark.scenario("DRA-X1", "DRA-E6")
def test_container_naming_two_requests_of_a_claim_gets_both_and_not_the_third(dra_driver, dra_objects, cdi_runtime):
    """A claim of three requests r1, r2, r3 (one device each, distinct): container `main` names r1 and r2 of it
    as two entries, container `other` names r3. main sees exactly the CDI env of the r1 and r2 devices, other
    exactly that of r3 (dra manager.go GetResources: the request names of every entry of a claim are collected
    per claim, then cdiDevicesAsList(requestName) per name)."""
    driver = dra_driver(devices=("dev-0", "dev-1", "dev-2"))
    name = driver.config.driver_name
    claim = claim_with_requests(dra_objects, {"r1": name, "r2": name, "r3": name})
    pod = claims_pod(dra_objects, "twice", {"c": claim}, {"main": ["c/r1", "c/r2"], "other": ["c/r3"]})
    pod.wait_running(timeout=timeouts.CLAIM_POD_START)

    uid, results = allocation(dra_objects, claim)
    by_request = {r["request"]: r["device"] for r in results}
    assert sorted(by_request) == ["r1", "r2", "r3"] and len(set(by_request.values())) == 3, (
        f"each request gets its own device: {by_request}"
    )
    assert claim_record(driver.calls(PREPARE)) == [([uid], "ok")], "prepared once for the pod"
    named = expected_env(dra_objects, claim, ["r1", "r2"])
    assert len(named) == 4, f"two devices, two DRA_ lines each: {named}"
    seen = {c: seen_env(pod, c) for c in ("main", "other")}
    wanted = {"main": named, "other": expected_env(dra_objects, claim, ["r3"])}
    for container, refs in (("main", "r1 and r2, not r3"), ("other", "only r3")):
        assert seen[container] == wanted[container], (
            f"{container} names {refs} of {by_request}: it sees {seen[container]}, expected {wanted[container]}"
        )
