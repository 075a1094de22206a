"""Isolation for DRA: a pod that names no ResourceClaim sees nothing of a driver's devices.

A device reaches a container only through the CDI devices the kubelet hands the runtime for the claims that
container names (pkg/kubelet/cm/dra/manager.go GetResources); the fake driver's CDI spec gives each device a
pair of DRA_ variables (fakes/dra_driver/cdi.py device_env). The probe is run in a pod holding both devices
too, so a probe that could not see them cannot pass the check.
"""

import pytest
from device_conformance.fixtures.dra_pods import PRINT_DRA_ENV, seen_env

from device_conformance.framework import PREPARE, SINCE_DRA, UNPREPARE, cdi, claim_record

pytestmark = [pytest.mark.dra, SINCE_DRA]

PROBE = ["sh", "-c", f"{PRINT_DRA_ENV}; exec sleep 86400"]


def test_pod_without_a_claim_sees_no_dra_device(dra_driver, dra_objects, pod_factory, cdi_runtime):
    driver = dra_driver(devices=("dev-0", "dev-1"))
    holder = dra_objects.claim_pod("holder", driver, PROBE, request={"count": 2})
    holder.wait_running()
    claim = holder.claim()
    name, uid = claim["metadata"]["name"], claim["metadata"]["uid"]
    expected = sorted(line for d in ("dev-0", "dev-1") for line in cdi.device_env(holder.namespace, name, uid, d))
    assert seen_env(holder) == expected, "the probe does not see the holder's devices: it proves nothing"

    plain = pod_factory("plain", PROBE)
    plain.wait_running()
    assert seen_env(plain) == [], "a pod that names no ResourceClaim sees DRA_ variables of the driver's CDI spec"
    entry = plain.wait_podresources()
    listed = {c.name: c.dynamic_resources for c in entry.containers if c.dynamic_resources}
    assert listed == {}, f"podresources lists dynamic resources for the pod without a claim: {listed}"
    calls = {m: claim_record(driver.calls(m)) for m in (PREPARE, UNPREPARE)}
    assert calls == {PREPARE: [([uid], "ok")], UNPREPARE: []}, "a call for the pod without a claim"
