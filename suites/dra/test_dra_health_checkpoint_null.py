"""A DRA health checkpoint that decodes to a nil map must not panic the kubelet at the next health update.

The kubelet keeps the devices' health (KEP-4680) in /var/lib/kubelet/dra_health_state and loads it at start
(pkg/kubelet/cm/dra/healthinfo.go loadFromCheckpoint: `json.Unmarshal(data, cache.HealthInfo)`). A file that
holds `null` decodes without an error into a nil map, and the next update from a driver's health stream writes
into it: "assignment to entry in nil map" in healthInfoCache.updateHealthInfo, a panic, again at every start
while the file stays (kubernetes PR #140904, in 1.38.0-alpha.1: loadFromCheckpoint replaces nil maps).

Seen failing on 1.37.1 and 1.37.2 (`KubeletExited: ... did not stay up for 15s after a health update on a
dra_health_state of `null`: exited with status 2`, then `panic: assignment to entry in nil map`), and passing on
a 1.37.1 tree with #140904's loadFromCheckpoint (`device-conformance reproduce --test <this test> --affected
1.37.1 --fixed-source <tree>`: "reproduced", "fixed as expected"; docs/reproducing-a-new-bug.md, worked example).
"""

import pytest
from device_conformance.fixtures.dra_health import health_key, wait_health, wait_stream

from device_conformance.framework import (
    FIRST_RESOURCE_HEALTH_STATUS_MINOR,
    NULL_HEALTH_CHECKPOINT_PANICS,
    SavedFiles,
    drahealth,
)

pytestmark = [
    pytest.mark.dra,
    pytest.mark.disruptive,
    pytest.mark.since(f"1.{FIRST_RESOURCE_HEALTH_STATUS_MINOR}", "ResourceHealthStatus on by default (beta)"),
]

# How long the kubelet must stay up once the update is pushed: the health stream's handler applies an update as
# it arrives (pkg/kubelet/cm/dra/manager.go HandleWatchResourcesStream -> updateHealthInfo), so an affected kubelet
# panics within a second of it; the rest is slack for a loaded node. The wait for the pod status after it shows
# the update was applied.
UPDATE_APPLIED_WINDOW = 15


@pytest.mark.known_bug(NULL_HEALTH_CHECKPOINT_PANICS)
def test_null_health_checkpoint_survives_the_next_health_update(node, dra_driver, dra_objects):
    saved = SavedFiles.take(node, (drahealth.DEFAULT_PATH,))
    with node.kubelet.stopped():
        node.write_file(drahealth.DEFAULT_PATH, b"null")
    try:
        driver = dra_driver(devices=("dev-0",), health_service=True)
        pod = dra_objects.claim_pod("nullhealth", driver)
        pod.wait_running()
        wait_stream(driver)
        key = health_key(driver, pod.claim_uid())
        driver.push_health({"dev-0": "Unhealthy"})
        node.kubelet.stays_up(UPDATE_APPLIED_WINDOW, what="after a health update on a dra_health_state of `null`")
        wait_health([(pod, key)], "Unhealthy")
    finally:  # an affected kubelet crash-loops on the file (its supervisor restarts it): put it back stopped
        node.kubelet.stop()
        saved.put_back(node)
        node.kubelet.start()
