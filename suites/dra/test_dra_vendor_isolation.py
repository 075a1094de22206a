"""Black-box isolation: a container without the claim sees none of its device, with a DRA driver our fake's or a
vendor's (vendor mode, fixtures/vendor.py `subject_driver`).

A claim's device reaches a container only as the CDI devices the kubelet hands the runtime for the claims that
container names (pkg/kubelet/cm/dra/manager.go GetResources; KEP-4381), which are the CDI IDs the driver answered
in NodePrepareResources and the kubelet keeps in its DRA checkpoint (dra_manager_state; read from there, so this
runs before podresources lists claims). The runtime merges, for each CDI device, the spec's own containerEdits
and the device's (CDI spec, "containerEdits" at spec and at device level): edits at spec level reach every
container that gets any device of that spec. What a container sees is printed from inside it
(fixtures/vendor_isolation.py PROBE: /proc/1/environ, every device node, /proc/self/mountinfo) and compared with
the node's CDI specs as they were when it started.

Each test, the fake defect it fails on (fakes/dra_driver/config.py DEFECTS) and the failing line:
- test_container_without_the_claim_sees_none_of_its_device
    cdi-claim-edits-global: `assert not problems` ("container main of the holder pod sees env ['DRA_CLAIM_UID_DEV_0=
    ...', ...], which only the other pod's claim's CDI devices define: a container sees nothing that only a CDI
    device of another claim defines (...)")
"""

import pytest
from device_conformance.fixtures.dra_blackbox import claim_cdi_ids
from device_conformance.fixtures.reports import not_judged
from device_conformance.fixtures.vendor import cdi_specs, wait_slices
from device_conformance.fixtures.vendor_isolation import (
    cdi_items,
    claim_pod_with_plain,
    device_level_items,
    judge_holder,
    judge_other_claim,
    judge_without,
    seen,
)

pytestmark = [pytest.mark.dra, pytest.mark.vendor_blackbox("dra-driver")]


def test_container_without_the_claim_sees_none_of_its_device(
    kube, resource_api, node, dra_objects, subject_driver, request, tmp_path
):
    """Where the driver has two devices, first a pod of another claim runs (the other pod); then a pod whose
    container main names a claim and whose container plain names none. Main sees exactly what its claim's CDI
    devices give (env lines, device nodes, mount points, in the CDI specs as they were when it started); plain
    sees none of it; neither container of the two claims sees what only the other claim's CDI devices define
    (device-level edits). NOT APPLICABLE when the claim's CDI devices give nothing a container could be seen to
    see (no CDI device: a driver applying devices through NRI)."""
    driver = subject_driver.driver_name
    devices = wait_slices(kube, resource_api, node, driver)
    other = None
    if len(devices) >= 2:
        other = claim_pod_with_plain(dra_objects, "other", driver, plain=False)
        other.wait_running()
        other_ids = claim_cdi_ids(node, driver, other.claim_uid())
        other_expected = cdi_items(cdi_specs(node, tmp_path / "cdi-other"), other_ids)
    else:
        # A driver may publish any number of devices (resource.k8s.io ResourceSlice spec.devices).
        reason = f"{driver} offers {len(devices)} device(s) on the node ({devices}); the other claim needs a second"
        not_judged(request.node, "other claim's check", reason)
    holder = claim_pod_with_plain(dra_objects, "holder", driver)
    holder.wait_running()
    ids = claim_cdi_ids(node, driver, holder.claim_uid())
    specs = cdi_specs(node, tmp_path / "cdi")
    expected = cdi_items(specs, ids)
    request.node.user_properties.append(("cdi_devices", ids))
    if expected.empty:
        pytest.skip(
            f"NOT APPLICABLE: the claim's CDI devices {ids} give no env, device node or mount a container could be "
            "seen to see"
        )
    listed = holder.wait_podresources().container("plain").dynamic_resources
    assert not listed, f"podresources lists claims {[d.claim_name for d in listed]} for container plain of {holder}"

    main, plain = seen(holder, "main"), seen(holder, "plain")
    who, other_who = "container main of the holder pod", "container main of the other pod"
    problems = judge_holder(who, expected, main)
    problems += judge_without("container plain of the holder pod", who, expected, plain)
    if other is not None:
        other_view = seen(other, "main")
        problems += judge_holder(other_who, other_expected, other_view)
        mine, theirs = set(ids), set(other_ids)
        own, their_own = device_level_items(specs, mine - theirs), device_level_items(specs, theirs - mine)
        if (their_own - own).empty or (own - their_own).empty:
            # Every containerEdits field is optional (CDI SPEC.md): a claim's devices may add nothing of their own.
            not_judged(
                request.node,
                "other claim's check",
                f"the CDI devices of one of the two claims ({sorted(mine)}, {sorted(theirs)}) define no device-level "
                "edit the other's do not",
            )
        problems += judge_other_claim(who, "the other pod's claim", their_own, own, main)
        problems += judge_other_claim(other_who, "the holder pod's claim", own, their_own, other_view)
    assert not problems, "\n".join(problems)
