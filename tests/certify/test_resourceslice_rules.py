"""The ResourceSlice checks (certify/resourceslices.py), on the bodies our fake driver publishes."""

import copy

import pytest

from device_conformance.certify import resourceslices
from device_conformance.certify.clauses import BY_ID
from device_conformance.certify.dra_driver import SLICES_TIMEOUT, DraDriverCertifier, DraDriverTarget
from device_conformance.certify.verdicts import FAIL, NOT_APPLICABLE, PASS, Evidence, run_step
from device_conformance.fakes.dra_driver import DeviceSpec
from device_conformance.fakes.dra_driver.resourceslices import build_resource_slice

DRIVER, NODE = "dra.example.com", "node-1"


def fake_slice(api_version="resource.k8s.io/v1"):
    devices = [
        DeviceSpec("dev-0", attributes={"model": "x1", "index": 0}, capacity={"memory": "16Gi"}),
        DeviceSpec("dev-1", taints=[{"key": "example.com/broken", "value": "yes", "effect": "NoExecute"}]),
    ]
    return build_resource_slice(
        driver=DRIVER, node_name=NODE, pool=NODE, generation=1, devices=devices, api_version=api_version
    )


@pytest.mark.parametrize("api_version", ["resource.k8s.io/v1", "resource.k8s.io/v1beta1"])
def test_what_the_fake_publishes_is_valid(api_version):
    assert resourceslices.problems([fake_slice(api_version)], DRIVER, NODE) == []


def broken(edit):
    body = copy.deepcopy(fake_slice())
    edit(body["spec"])
    return body


@pytest.mark.parametrize(
    "edit,problem",
    [
        (lambda s: s["devices"].append(copy.deepcopy(s["devices"][0])), "device names ['dev-0'] appear more than once"),
        (lambda s: s["devices"][0].update(name="Dev_0"), "device name 'Dev_0' is not a DNS label"),
        (lambda s: s["pool"].update(generation=-1), "pool generation -1 is not a non-negative integer"),
        (lambda s: s["pool"].update(resourceSliceCount=2), "1 slice(s), resourceSliceCount says [2]"),
        (lambda s: s.update(allNodes=True), "exactly one of"),
        (lambda s: s.update(nodeName="node-2"), "nodeName 'node-2', expected 'node-1'"),
        (lambda s: s["devices"][0]["attributes"].update(bad={"int": 1, "bool": True}), "must set exactly one of"),
        (lambda s: s["devices"][0]["attributes"].update(v={"version": "1.2"}), "version '1.2' is not semver"),
        (lambda s: s["devices"][0]["capacity"].update(memory={"value": "lots"}), "is not a quantity"),
        (lambda s: s["devices"][1]["taints"][0].update(effect="Evict"), "taint effect 'Evict'"),
    ],
)
def test_each_broken_rule_is_reported(edit, problem):
    found = resourceslices.problems([broken(edit)], DRIVER, NODE)
    assert len(found) == 1 and problem in found[0], found


class SliceApi:
    """resourceslices.SliceApi answering each list with the next of `answers` (the last one repeated)."""

    def __init__(self, answers):
        self.answers, self.calls = answers, 0

    def resource_versions(self):
        return ["v1"]

    def node_labels(self, name):
        return {}

    def list_slices(self, version, driver):
        self.calls += 1
        return self.answers[min(self.calls, len(self.answers)) - 1]

    def close(self):
        pass


def slices_step(*answers, kubeconfig="kubeconfig", timeout=0.0, before_restart=False):
    """The DRA-SLICES step of the certifier, with the API server's answers (one per list call, the last one
    repeated) replaced by `answers`; before_restart: DRA-RESTART judged them first, as it does with --command."""
    target = DraDriverTarget(
        registry_dir="/nonexistent", driver=DRIVER, kubeconfig=kubeconfig, node_name=NODE, slices_timeout=timeout
    )
    certifier = DraDriverCertifier(target, slice_api=SliceApi(answers))
    if before_restart:
        certifier._slices_before = certifier._judge_slices(Evidence(), "before the restart")
    return run_step(BY_ID["DRA-SLICES"], certifier.slices)


def test_the_slices_clause_passes_valid_slices_and_fails_broken_ones():
    assert slices_step([fake_slice()]).verdict == PASS
    failed = slices_step([broken(lambda s: s["pool"].update(generation=-1))])
    assert (failed.verdict, failed.message) == (
        FAIL,
        "now (after 0s): slice 'node-1-dra.example.com': pool generation -1 is not a non-negative integer",
    )
    none = slices_step([])
    assert (none.verdict, none.message) == (
        FAIL,
        "now (after 0s): no ResourceSlice of driver dra.example.com for node node-1",
    )


def test_slices_published_late_pass_within_the_kubelets_wiping_delay():
    """A driver publishing only after NotifyRegistrationStatus (or a while after a restart) is polled for, up to
    the kubelet's defaultWipingDelay (pkg/kubelet/cm/dra/manager.go); one LIST would have failed it."""
    assert SLICES_TIMEOUT == 30.0
    late = slices_step([], [], [fake_slice()], timeout=10.0)
    assert (late.verdict, late.message) == (PASS, "valid")
    assert late.evidence[0].startswith("now: 1 ResourceSlice(s) of dra.example.com serving node node-1 (")


def test_slices_are_judged_before_and_after_the_restart():
    both = slices_step([fake_slice()], before_restart=True)
    assert (both.verdict, both.message) == (PASS, "valid before and after the restart")
    gone = slices_step([fake_slice()], [], before_restart=True)
    assert (gone.verdict, gone.message) == (
        FAIL,
        "after the restart (after 0s): no ResourceSlice of driver dra.example.com for node node-1",
    )


def test_without_a_kubeconfig_slices_are_not_applicable():
    result = slices_step([fake_slice()], kubeconfig=None)
    assert result.verdict == NOT_APPLICABLE and "no API server in sanity mode" in result.message
