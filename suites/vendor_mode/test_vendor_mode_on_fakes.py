"""Vendor mode judged on our fakes as the vendor's subject, against a real kubelet: a fake showing a real-world
PATTERN (a behaviour the API allows) passes every black-box test or is NOT APPLICABLE for a reason the pattern
explains, never fails; a fake with a DEFECT fails exactly the black-box tests the test modules' docstrings name
for it, and nothing else. A test that passes with checks it had nothing to judge (fixtures/reports.py not_judged:
a `not_judged` property in the JUnit XML) must name exactly the checks the run expects: a pattern that leaves a
check nothing to judge must never read as a plain pass, and a plain pass must judge every check.

Each run below is one nested vendor-mode session, `python -m pytest suites -m vendor_blackbox
--vendor-dra-driver NAME | --vendor-device-plugin RESOURCE --vendor-command CMD --junitxml=...`, with the outer
session's provider and version options passed on; the outcome of every test is read from its JUnit XML and
compared with the table here. A difference fails with the table of differences and the tail of the nested run's
own output (its whole log and vendor report stay in the test's tmp_path).

A device-plugin run takes every device-plugin black-box test (2-4 min). A DRA defect's run takes only the modules
whose docstrings name the defect (Run.modules): a whole DRA run is 28 min here, and one per defect would be hours.
What that leaves out is shown by the clean fake's runs, which pass every DRA test, and by a defect changing one
kind of answer of the fake (NodePrepareResources, NodeUnprepareResources or its CDI specs), which a test that does
not depend on that answer does not see.

Nothing leaks: the nested pytest runs in a session of its own (a Ctrl-C reaches it once, from here), dies with
this process (setpriv --pdeathsig INT: its own Ctrl-C handling then tears its cluster down), and when this test
is interrupted (Ctrl-C, or SIGTERM turned into one) it gets SIGINT and TEARDOWN_GRACE seconds to tear its
cluster down before it is SIGKILLed (a cluster left then is cleaned by the next run's start-up, as after any
SIGKILL).
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.vendor_patterns]

# -- expected outcomes ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """A test's outcome in a nested run: passed, failed (its failure text containing `text`), or skipped with
    a reason starting with `text`. Of a pass, `not_judged`: its checks that could not judge the subject, each note
    starting with one of them, one for one (expected) or the notes themselves (got)."""

    result: str
    text: str = ""
    not_judged: tuple[str, ...] = ()

    def matches(self, got: Outcome) -> bool:
        if self.result != got.result:
            return False
        if self.result == "skipped":
            return got.text.startswith(self.text)
        if self.result == "passed":
            return notes_match(self.not_judged, got.not_judged)
        return self.text in got.text

    def __str__(self) -> str:
        shown = f"{self.result} ({self.text})" if self.text else self.result
        return shown + (f"; not judged: {list(self.not_judged)}" if self.not_judged else "")


def notes_match(prefixes: tuple[str, ...], notes: tuple[str, ...]) -> bool:
    """Each note starts with its own one of `prefixes`, and each prefix has its note."""
    left = list(notes)
    for prefix in prefixes:
        found = next((note for note in left if note.startswith(prefix)), None)
        if found is None:
            return False
        left.remove(found)
    return not left


PASSED = Outcome("passed")


def passed_not_judging(*checks: str) -> Outcome:
    """Passed, with exactly these checks not judged (each a note's start, e.g. "CDI checks: NOT APPLICABLE: ...")."""
    return Outcome("passed", not_judged=checks)


def failed(text: str = "") -> Outcome:
    return Outcome("failed", text)


def skipped(reason: str) -> Outcome:
    return Outcome("skipped", reason)


DRA, DP = "dra-driver", "device-plugin"
# Every `vendor_blackbox` test, by subject kind: a new one fails every run here until it is added (and, where a
# pattern or defect changes its outcome, listed in that run's `expected`).
TESTS = {
    DRA: (
        "test_dra_vendor_blackbox.py::test_claim_is_prepared_once_reaches_the_container_and_is_unprepared_once",
        "test_dra_vendor_blackbox.py::test_kubelet_restart_does_not_prepare_again_and_unprepares_after",
        "test_dra_vendor_blackbox.py::test_killed_driver_restarted_keeps_running_pods_and_prepares_new_ones",
        "test_dra_vendor_blackbox.py::test_noexecute_device_taint_rule_evicts_the_pod_and_unprepares",
        "test_dra_vendor_claims.py::test_two_pods_share_one_claim_prepared_once_unprepared_after_the_last",
        "test_dra_vendor_claims.py::test_two_claims_in_one_pod_are_prepared_in_one_call_and_unprepared_together",
        "test_dra_vendor_claims.py::test_template_claim_pod_recreated_gets_a_new_claim_prepared_once",
        "test_dra_vendor_claims.py::test_pod_whose_container_cannot_start_unprepares_its_claim_on_delete",
        "test_dra_vendor_driver_restart.py::test_driver_restarted_while_the_pod_runs_unprepares_its_claim_after",
        "test_dra_vendor_driver_restart.py::test_pod_deleted_while_the_driver_is_down_is_unprepared_once_it_is_back",
        "test_dra_vendor_isolation.py::test_container_without_the_claim_sees_none_of_its_device",
        "test_dra_vendor_kubelet_restart.py::"
        "test_kubelet_sigkilled_right_after_the_pod_is_created_runs_it_and_unprepares_once",
        "test_dra_vendor_kubelet_restart.py::test_pod_deleted_while_the_kubelet_is_down_is_unprepared_once_it_is_back",
        "test_dra_vendor_kubelet_restart.py::"
        "test_checkpoint_after_a_kubelet_restart_holds_the_claim_as_the_driver_answered",
        "test_dra_vendor_kubelet_restart.py::test_sandbox_lost_after_a_kubelet_restart_prepares_the_claim_again",
        "test_dra_vendor_reboot.py::test_reboot_with_the_driver_running_prepares_the_claim_again",
        "test_dra_vendor_reboot.py::test_reboot_with_lost_cdi_specs_and_the_driver_back_late",
    ),
    DP: (
        "test_vendor_blackbox.py::test_registered_devices_are_offered_and_podresources_lists_the_same",
        "test_vendor_blackbox.py::test_pods_get_distinct_offered_devices_until_none_is_left",
        "test_vendor_blackbox.py::test_over_request_fails_admission_without_an_allocate",
        "test_vendor_blackbox.py::test_kubelet_restart_keeps_the_device_and_the_plugin_registers_again",
        "test_vendor_blackbox.py::test_killed_plugin_restarted_keeps_assignments_and_serves_new_pods",
        "test_vendor_blackbox.py::test_reboot_never_runs_the_pod_without_its_device",
        "test_vendor_isolation.py::test_container_without_the_resource_sees_none_of_the_device",
        "test_vendor_lifecycle.py::test_init_container_devices_are_reused_by_the_app_container",
        "test_vendor_lifecycle.py::test_deleted_pod_frees_its_devices_for_the_next_pod",
        "test_vendor_lifecycle.py::test_plugin_restarted_twice_in_a_row_registers_and_serves",
        "test_vendor_lifecycle.py::test_kubelet_sigkill_keeps_pods_devices_and_checkpoint",
        "test_vendor_lifecycle.py::test_pods_admitted_together_get_distinct_devices",
        "test_vendor_lifecycle.py::test_containers_of_one_pod_get_distinct_devices",
        "test_vendor_lifecycle.py::test_kubelet_restart_with_every_device_held_admits_no_more",
        "test_vendor_lifecycle.py::test_pod_deleted_while_the_plugin_is_down_frees_its_devices",
    ),
}
# The DRA tests with CDI checks (fixtures/dra_blackbox.py note_cdi_not_judged), and those of them that check a
# claim's CDI devices are gone after unprepare (startup=), with the starts of the notes each records when it has
# nothing to judge.
CDI_REMOVAL_TESTS = (
    "test_dra_vendor_blackbox.py::test_claim_is_prepared_once_reaches_the_container_and_is_unprepared_once",
    "test_dra_vendor_claims.py::test_two_pods_share_one_claim_prepared_once_unprepared_after_the_last",
    "test_dra_vendor_claims.py::test_two_claims_in_one_pod_are_prepared_in_one_call_and_unprepared_together",
    "test_dra_vendor_claims.py::test_template_claim_pod_recreated_gets_a_new_claim_prepared_once",
    "test_dra_vendor_claims.py::test_pod_whose_container_cannot_start_unprepares_its_claim_on_delete",
    "test_dra_vendor_kubelet_restart.py::"
    "test_kubelet_sigkilled_right_after_the_pod_is_created_runs_it_and_unprepares_once",
    "test_dra_vendor_kubelet_restart.py::test_pod_deleted_while_the_kubelet_is_down_is_unprepared_once_it_is_back",
)
CDI_TESTS = (
    *CDI_REMOVAL_TESTS,
    "test_dra_vendor_kubelet_restart.py::test_checkpoint_after_a_kubelet_restart_holds_the_claim_as_the_driver_answered",
    "test_dra_vendor_kubelet_restart.py::test_sandbox_lost_after_a_kubelet_restart_prepares_the_claim_again",
    "test_dra_vendor_reboot.py::test_reboot_with_the_driver_running_prepares_the_claim_again",
    "test_dra_vendor_reboot.py::test_reboot_with_lost_cdi_specs_and_the_driver_back_late",
)
NO_CDI_NOT_JUDGED = "CDI checks: NOT APPLICABLE: the driver prepared claim"
CDI_REMOVAL_NOT_JUDGED = "CDI removal check: NOT APPLICABLE: every CDI device of claim"
NO_DEVICES_NOT_JUDGED = "devices answered: NOT APPLICABLE: "
# What vendor mode says of a test of the other kind (pytest_plugin/vendor.py not_applicable).
OTHER_KIND = {
    DRA: skipped("NOT APPLICABLE in vendor mode: a black-box test of device-plugin; the subject is a DRA driver"),
    DP: skipped("NOT APPLICABLE in vendor mode: a black-box test of dra-driver; the subject is a device plugin"),
}


@dataclass(frozen=True)
class Run:
    """One nested vendor-mode run: the subject (our fake with these patterns / defects), why it is what it is,
    and the outcomes that are not PASSED (every other test of the kind must pass). `modules` (file names of
    black-box modules, e.g. "test_dra_vendor_claims.py") restricts the nested run to those modules: only their
    tests are run and judged, those of the kind elsewhere and of the other kind are neither; empty, all of them."""

    id: str
    kind: str
    patterns: tuple[str, ...] = ()
    defects: tuple[str, ...] = ()
    why: str = ""
    expected: dict[str, Outcome] = field(default_factory=dict)
    modules: tuple[str, ...] = ()


# The DRA black-box modules that count the kubelet's calls (fixtures/dra_answered_calls.py): the claim-error patterns
# change no answer a test of another module reads.
CALL_COUNTING_DRA_MODULES = (
    "test_dra_vendor_blackbox.py",
    "test_dra_vendor_claims.py",
    "test_dra_vendor_driver_restart.py",
    "test_dra_vendor_kubelet_restart.py",
    "test_dra_vendor_reboot.py",
)

RUNS = (
    Run(
        "dp-list-empty-then-full",
        DP,
        patterns=("list-empty-then-full",),
        # Every ListAndWatch stream sends an empty list first and the full one LIST_DELAY later (a plugin that
        # answers before its scan is done). The kubelet replaces the resource's device set with each response
        # (pkg/kubelet/cm/devicemanager/manager.go genericDeviceUpdateCallback); the tests wait for the devices
        # offered. With an Allocate env named with hyphens (as_subject --env-name): the API's envs is a
        # map<string, string> that the kubelet hands the runtime as it is (manager.go
        # GetDeviceRunContainerOptions), and a container's environment is read from /proc/1/environ.
        why="an empty device list before the full one; an env name with hyphens",
        expected={},
    ),
    Run(
        "dp-long-socket-name",
        DP,
        patterns=("long-socket-name",),
        # A socket (Register endpoint) named with 60 characters: the API sets no limit on the endpoint
        # (deviceplugin/v1beta1 api.proto RegisterRequest.endpoint), the kubelet dials
        # /var/lib/kubelet/device-plugins/<endpoint>, 92 bytes of sun_path's 107 (unix(7)). On the test host the
        # directory's own path is 69+ bytes; vendor mode gives {plugin_dir} through a short link
        # (vendor/handles.py SOCKET_DIRS), so the plugin binds where the kubelet can dial.
        why="a 60-character socket name",
        expected={},
    ),
    Run(
        "dp-device-on-two-numa-nodes",
        DP,
        patterns=("device-on-two-numa-nodes",),
        # The first device's topology names NUMA nodes 0 and 1 (api.proto TopologyInfo.nodes is repeated). The
        # kubelet counts it once in capacity and lists it once per NUMA node in podresources
        # (pkg/kubelet/cm/container_manager.go containerDevicesFromResourceDeviceInstances): the tests count
        # devices, not podresources entries.
        why="a device on two NUMA nodes",
        expected={},
    ),
    Run(
        "dp-another-resource-first",
        DP,
        patterns=("another-resource-first",),
        # The process also serves <resource>-other on a socket of its own and registers it first, every time it
        # registers (NVIDIA k8s-device-plugin: one plugin per resource of a mixed MIG strategy, each with its own
        # socket and Register, internal/plugin/server.go). The kubelet keeps an endpoint per resource name
        # (pkg/kubelet/cm/devicemanager/manager.go PluginConnected): the node has both resources, and every test
        # judges the one asked for (--vendor-device-plugin).
        why="a second resource registered first from the same process",
        expected={},
    ),
    Run(
        "dp-no-preference",
        DP,
        patterns=("no-preference",),
        # GetPreferredAllocation advertised and answered with an empty response, as upstream's stub behind the
        # sample device plugin does (pkg/kubelet/cm/devicemanager/plugin/v1beta1/stub.go
        # defaultGetPreferredAllocFunc): the kubelet picks the devices itself (manager.go
        # callGetPreferredAllocationIfAvailable, devicesToAllocate's fallback).
        why="GetPreferredAllocation advertised, no preference given",
        expected={},
    ),
    Run(
        "dp-defect-allocate-refuses-handed-out-id",
        DP,
        defects=("allocate-refuses-handed-out-id",),
        # Allocate fails for an ID the process handed out before: the kubelet tells a plugin of no release, and
        # hands an init container's devices to the app containers again (manager.go devicesToAllocate). The two
        # tests test_vendor_lifecycle.py names for this defect, and no other:
        why="a plugin keeping its own 'in use' book",
        expected={
            "test_vendor_lifecycle.py::test_init_container_devices_are_reused_by_the_app_container": failed(
                "UnexpectedAdmissionError"
            ),
            "test_vendor_lifecycle.py::test_deleted_pod_frees_its_devices_for_the_next_pod": failed(
                "UnexpectedAdmissionError"
            ),
        },
    ),
    Run(
        "dp-defect-ids-change-per-start",
        DP,
        defects=("ids-change-per-start",),
        # Device IDs made at start-up ("<id>-p<pid>"): a plugin restart renames every device, so the kubelet sees
        # the held ones vanish and renamed copies free (manager.go genericDeviceUpdateCallback); api.proto
        # ListAndWatch changes the list when "a Device state change or a Device disappears". The tests that restart
        # the plugin (test_vendor_blackbox.py, test_vendor_lifecycle.py docstrings), and no other:
        why="device IDs made anew by every start of the plugin",
        expected={
            "test_vendor_blackbox.py::test_killed_plugin_restarted_keeps_assignments_and_serves_new_pods": failed(
                "main; expected one of the offered"
            ),
            "test_vendor_lifecycle.py::test_plugin_restarted_twice_in_a_row_registers_and_serves": failed(
                "after restart 1 of the plugin: podresources GetAllocatableResources lists"
            ),
            "test_vendor_lifecycle.py::test_pod_deleted_while_the_plugin_is_down_frees_its_devices": failed(
                "after the plugin came back: podresources GetAllocatableResources lists"
            ),
        },
    ),
    Run(
        "dp-defect-unstable-device-ids",
        DP,
        defects=("unstable-device-ids",),
        # Every ListAndWatch stream after the process's first renames the devices ("<id>-r<n>"): the kubelet opens a
        # new stream when the plugin registers again after a kubelet restart, and takes each list as the device set
        # (manager.go genericDeviceUpdateCallback), so held devices vanish and renamed copies are free; api.proto
        # ListAndWatch changes the list when "a Device state change or a Device disappears". The tests with a
        # kubelet restart that compare the IDs or admit a pod after it (test_vendor_blackbox.py,
        # test_vendor_lifecycle.py docstrings), and no other:
        why="device IDs renamed on every new ListAndWatch stream",
        expected={
            "test_vendor_blackbox.py::test_kubelet_restart_keeps_the_device_and_the_plugin_registers_again": failed(
                "'dev-0-r2', 'dev-1-r2'"
            ),
            "test_vendor_lifecycle.py::test_kubelet_sigkill_keeps_pods_devices_and_checkpoint": failed(
                "after the kubelet's SIGKILL: podresources GetAllocatableResources lists ['dev-0-r2', 'dev-1-r2']"
            ),
            "test_vendor_lifecycle.py::test_kubelet_restart_with_every_device_held_admits_no_more": failed(
                "after the kubelet restart, although the 2 pods hold every device"
            ),
        },
    ),
    Run(
        "dp-defect-list-omits-allocated",
        DP,
        defects=("list-omits-allocated",),
        # ListAndWatch lists free devices only, LIST_DELAY after Allocate handed one out: the node's capacity shrinks
        # while pods hold devices (node status counts what the plugin lists, manager.go GetCapacity), so the
        # scheduler places fewer pods and a restarted kubelet or plugin offers fewer than it has. Every test that
        # counts or lists the devices while one is held (test_vendor_blackbox.py, test_vendor_lifecycle.py
        # docstrings), and no other:
        why="a plugin listing free devices only",
        expected={
            "test_vendor_blackbox.py::test_pods_get_distinct_offered_devices_until_none_is_left": failed(
                "to be Running and Ready"
            ),
            "test_vendor_blackbox.py::test_kubelet_restart_keeps_the_device_and_the_plugin_registers_again": failed(
                "assert 1 == 2"
            ),
            "test_vendor_blackbox.py::test_killed_plugin_restarted_keeps_assignments_and_serves_new_pods": failed(
                "to report example.com/dev capacity=2 allocatable=0"
            ),
            "test_vendor_blackbox.py::test_reboot_never_runs_the_pod_without_its_device": failed("assert 1 == 2"),
            "test_vendor_lifecycle.py::test_init_container_devices_are_reused_by_the_app_container": failed(
                "while the pod holds one device: podresources GetAllocatableResources lists"
            ),
            "test_vendor_lifecycle.py::test_deleted_pod_frees_its_devices_for_the_next_pod": failed(
                "to be Running and Ready"
            ),
            "test_vendor_lifecycle.py::test_kubelet_sigkill_keeps_pods_devices_and_checkpoint": failed("assert 1 == 2"),
            "test_vendor_lifecycle.py::test_pods_admitted_together_get_distinct_devices": failed(
                "while the pods hold every device: podresources GetAllocatableResources lists []"
            ),
            "test_vendor_lifecycle.py::test_containers_of_one_pod_get_distinct_devices": failed(
                "while the pod holds two devices: podresources GetAllocatableResources lists []"
            ),
            "test_vendor_lifecycle.py::test_kubelet_restart_with_every_device_held_admits_no_more": failed(
                "to offer example.com/dev"
            ),
            "test_vendor_lifecycle.py::test_pod_deleted_while_the_plugin_is_down_frees_its_devices": failed(
                "to report example.com/dev capacity=2 allocatable=0"
            ),
        },
    ),
    Run(
        "dra-kubeletplugin-helper",
        DRA,
        patterns=("fetch-claims-first", "serve-after-notify", "cdi-common-device"),
        # The three touch different calls (NodePrepareResources' reading of claims, the start, the CDI IDs), so one
        # run shows them together, as a driver on upstream's helper and the example driver's CDI layout is:
        # - fetch-claims-first is k8s.io/dynamic-resource-allocation/kubeletplugin (draplugin.go,
        #   nodePluginImplementation.NodePrepareResources -> getResourceClaims: one unreadable claim fails the
        #   whole call); dra/v1 api.proto allows it: "NodePrepareResources will be called again for those that
        #   are missing". With a real kubelet every claim is readable, so nothing may change.
        # - serve-after-notify: the kubelet calls NotifyRegistrationStatus on every new registration socket
        #   (pkg/kubelet/pluginmanager/operationexecutor/operation_generator.go GenerateRegisterPluginFunc), so a
        #   driver may wait for it before it serves and publishes; also after each restart.
        # - cdi-common-device is kubernetes-sigs/dra-example-driver (cmd/dra-example-kubeletplugin/cdi.go
        #   CreateCommonSpecFile; GetClaimDevices lists cdiCommonDeviceName "common" first): a driver-wide CDI
        #   device in every claim's answer, never removed. The tests judge claim-specific CDI devices only.
        why="upstream's kubeletplugin helper, notified before serving, dra-example-driver's common CDI device",
    ),
    Run(
        "dra-cdi-static-per-device",
        DRA,
        patterns=("cdi-static-per-device",),
        # One CDI spec per device written at start-up, never removed; answers name those devices and no per-claim
        # spec is written. dra/v1 api.proto Device.cdi_device_ids only names "the CDI device IDs" of the device;
        # the container gets them while the claim is prepared (pkg/kubelet/cm/dra/manager.go GetResources), and
        # no text asks that a device's spec go with the claim. Its own run: with cdi-common-device the claims
        # would still have no claim-specific CDI device, and that pattern's point is the two side by side.
        # Every CDI ID is the driver's own, defined before the claim was prepared: the check that a claim's CDI
        # devices are gone after unprepare has nothing to judge in each test that has it.
        why="a CDI spec per device, written at start-up (not per claim)",
        expected={test: passed_not_judging(CDI_REMOVAL_NOT_JUDGED) for test in CDI_REMOVAL_TESTS},
    ),
    Run(
        "dra-prepare-no-devices",
        DRA,
        patterns=("prepare-no-devices",),
        # Every claim answered with zero devices, no CDI spec (devices applied out of band, e.g. through NRI):
        # dra/v1 api.proto NodePrepareResourceResponse.devices, "each request may have zero or more devices".
        # Its own run: it takes the place of whatever CDI layout another pattern has.
        # Every test's CDI checks then have nothing to judge, and where a test compares the devices answered with
        # the allocated ones, that check neither: each is a not-judged note, the rest of the test is judged.
        why="zero devices per claim, no CDI (a driver applying devices through NRI)",
        expected={
            "test_dra_vendor_isolation.py::test_container_without_the_claim_sees_none_of_its_device": skipped(
                "NOT APPLICABLE: the claim's CDI devices [] give no env, device node or mount a container could be "
                "seen to see"
            ),
            **{test: passed_not_judging(NO_CDI_NOT_JUDGED) for test in CDI_TESTS},
            "test_dra_vendor_blackbox.py::test_claim_is_prepared_once_reaches_the_container_and_is_unprepared_once": (
                passed_not_judging(f"{NO_DEVICES_NOT_JUDGED}podresources for claim", NO_CDI_NOT_JUDGED)
            ),
            "test_dra_vendor_kubelet_restart.py::"
            "test_checkpoint_after_a_kubelet_restart_holds_the_claim_as_the_driver_answered": passed_not_judging(
                f"{NO_DEVICES_NOT_JUDGED}the checkpoint", NO_CDI_NOT_JUDGED
            ),
        },
    ),
    Run(
        "dra-claim-error-once",
        DRA,
        patterns=("claim-error-once",),
        # The first NodePrepareResources and NodeUnprepareResources of each claim answer OK with the claim's
        # `error` set; the kubelet tries again and the retry succeeds. dra/v1 api.proto: "If non-empty, preparing
        # the ResourceClaim failed"; the kubeletplugin helper answers a PrepareResult.Err so (draplugin.go). The
        # kubelet's gRPC metric counts the failed answer as OK: the tests count the calls answered without a
        # failed claim (fixtures/dra_answered_calls.py). Only the modules that count calls: the pattern changes
        # no answer a test of another module reads.
        why="a claim failed once in an OK answer, prepared and unprepared on the kubelet's retry",
        modules=CALL_COUNTING_DRA_MODULES,
    ),
    Run(
        "dra-on-registration-socket",
        DRA,
        patterns=("dra-on-registration-socket",),
        # Everything on the registration socket and no endpoint in GetInfo: optional (pluginregistration/v1
        # api.proto PluginInfo.endpoint), the kubelet then calls the registration socket
        # (pkg/kubelet/pluginmanager/operationexecutor/operation_generator.go). The modules that restart the
        # driver, the kubelet or the node, where one socket instead of two matters.
        why="the DRA service on the registration socket, GetInfo naming no endpoint",
        modules=CALL_COUNTING_DRA_MODULES,
    ),
    Run(
        "dra-claim-error-for-a-while",
        DRA,
        patterns=("claim-error-for-a-while",),
        # Each claim's NodePrepareResources and NodeUnprepareResources answer OK with the claim's `error` set for
        # 12 s from its first call, then succeed, as NVIDIA/k8s-dra-driver-gpu does while its node-wide prepare
        # lock is held (cmd/gpu-kubelet-plugin/driver.go). The kubelet prepares again at the pod's next sync, a
        # resync 60-90 s later (pkg/kubelet/kuberuntime/kuberuntime_manager.go SyncPod records
        # FailedPrepareDynamicResources; pkg/kubelet/pod_workers.go requeues it), and unprepares again after its
        # back-off: the tests wait for a claim pod per failed prepare the kubelet recorded (wait/dra.py) and count
        # the calls answered without a failed claim (fixtures/dra_answered_calls.py). Only the modules that count
        # calls, as for claim-error-once: the pattern changes no answer a test of another module reads.
        why="a claim failed in OK answers for 12 s, prepared and unprepared on the kubelet's later retries",
        modules=CALL_COUNTING_DRA_MODULES,
    ),
    Run(
        "dra-defect-prepare-rejects-repeat",
        DRA,
        defects=("prepare-rejects-repeat",),
        # Not idempotent: NodePrepareResources of a claim the process holds prepared fails ("already prepared").
        # The kubelet prepares again when it makes a new sandbox (kuberuntime_manager.go SyncPod), e.g. after a
        # reboot; kubernetes#141966 documents the idempotence. The two tests test_dra_vendor_kubelet_restart.py and
        # test_dra_vendor_reboot.py name for this defect, and no other:
        why="NodePrepareResources not idempotent",
        expected={
            "test_dra_vendor_kubelet_restart.py::test_sandbox_lost_after_a_kubelet_restart_prepares_the_claim_again": (
                failed()
            ),
            "test_dra_vendor_reboot.py::test_reboot_with_the_driver_running_prepares_the_claim_again": failed(
                "already prepared"
            ),
        },
    ),
    # The DRA defects below run only the modules whose docstrings name them (Run.modules; why: the module's
    # docstring). The clean fake's runs above (dra-kubeletplugin-helper, dra-cdi-static-per-device) pass every test.
    Run(
        "dra-defect-unprepare-keeps-cdi",
        DRA,
        defects=("unprepare-keeps-cdi",),
        # NodeUnprepareResources leaves the claim's CDI spec behind; dra/v1 api.proto: NodeUnprepareResources "is
        # the opposite of NodePrepareResources" (certify clause DRA-UNPREPARE-CDI). Every test of the three
        # modules that checks the claim's CDI devices are gone after the unprepare, and no other:
        why="CDI spec left behind by NodeUnprepareResources",
        modules=("test_dra_vendor_blackbox.py", "test_dra_vendor_claims.py", "test_dra_vendor_kubelet_restart.py"),
        expected={
            "test_dra_vendor_blackbox.py::test_claim_is_prepared_once_reaches_the_container_and_is_unprepared_once": (
                failed("still defined in")
            ),
            **{
                f"test_dra_vendor_claims.py::{test}": failed("CDI devices still defined after NodeUnprepareResources")
                for test in (
                    "test_two_pods_share_one_claim_prepared_once_unprepared_after_the_last",
                    "test_two_claims_in_one_pod_are_prepared_in_one_call_and_unprepared_together",
                    "test_template_claim_pod_recreated_gets_a_new_claim_prepared_once",
                    "test_pod_whose_container_cannot_start_unprepares_its_claim_on_delete",
                )
            },
            **{
                f"test_dra_vendor_kubelet_restart.py::{test}": failed(
                    "CDI devices still defined after NodeUnprepareResources"
                )
                for test in (
                    "test_kubelet_sigkilled_right_after_the_pod_is_created_runs_it_and_unprepares_once",
                    "test_pod_deleted_while_the_kubelet_is_down_is_unprepared_once_it_is_back",
                )
            },
        },
    ),
    Run(
        "dra-defect-unprepare-unknown-claim-error",
        DRA,
        defects=("unprepare-unknown-claim-error",),
        # NodeUnprepareResources of a claim this process did not prepare fails: a driver keeping its claims in memory
        # only, restarted. The kubelet retries and the pod stays Terminating (pkg/kubelet/cm/dra/manager.go
        # UnprepareResources). test_dra_vendor_driver_restart.py's two tests; not test_dra_vendor_blackbox.py's
        # killed-driver test, which its docstring also names (seen failing there at the same pod.wait_gone()): its
        # claim stays prepared after the test, and on the same cluster the kubelet goes on retrying that claim's
        # unprepare with the next test's driver, whose exact call counts then fail (the eviction test saw (1, 70)
        # unprepare calls), so which blackbox tests fail would depend on xdist's order. The two tests here fail
        # at their own pod's deletion whatever ran before them.
        why="NodeUnprepareResources failing for a claim prepared before the driver restarted",
        modules=("test_dra_vendor_driver_restart.py",),
        expected={
            "test_dra_vendor_driver_restart.py::test_driver_restarted_while_the_pod_runs_unprepares_its_claim_after": (
                failed("to be deleted")
            ),
            "test_dra_vendor_driver_restart.py::"
            "test_pod_deleted_while_the_driver_is_down_is_unprepared_once_it_is_back": failed("to be deleted"),
        },
    ),
    Run(
        "dra-defect-cdi-claim-edits-global",
        DRA,
        defects=("cdi-claim-edits-global",),
        # Every claim's edits also in the spec-level containerEdits of one spec shared by all claims, which the
        # runtime applies for every device of that spec: a claim's container sees the env of the other claims.
        why="claim edits in one shared spec's spec-level containerEdits",
        modules=("test_dra_vendor_isolation.py",),
        expected={
            "test_dra_vendor_isolation.py::test_container_without_the_claim_sees_none_of_its_device": failed(
                "which only the other pod's claim's CDI devices define"
            ),
        },
    ),
    Run(
        "dra-defect-prepare-first-device-only",
        DRA,
        defects=("prepare-first-device-only",),
        # A claim of several devices answered with its first only; the kubelet records the answer as it is
        # (pkg/kubelet/cm/dra/manager.go prepareResources), which must name the allocated devices (DRA-PREPARE).
        why="NodePrepareResources answering the first device of a claim only",
        modules=("test_dra_vendor_kubelet_restart.py",),
        expected={
            "test_dra_vendor_kubelet_restart.py::"
            "test_checkpoint_after_a_kubelet_restart_holds_the_claim_as_the_driver_answered": failed(
                "the checkpoint holds devices"
            ),
        },
    ),
    Run(
        "dra-defect-prepare-keeps-lost-cdi-spec",
        DRA,
        defects=("prepare-keeps-lost-cdi-spec",),
        # A claim prepared before is answered from the driver's state without writing its CDI spec again when the
        # file is gone (a reboot empties /var/run/cdi): dra-example-driver's bug behind kubernetes#141433, fixed by
        # kubernetes-sigs/dra-example-driver#259.
        why="a lost CDI spec not written again for a claim prepared before",
        modules=("test_dra_vendor_reboot.py",),
        expected={
            "test_dra_vendor_reboot.py::test_reboot_with_lost_cdi_specs_and_the_driver_back_late": failed(
                "unresolvable CDI devices"
            ),
        },
    ),
)

# -- the nested run ------------------------------------------------------------------------------------------

DRIVER = "dc-vendor.example.com"
RESOURCE = "example.com/dev"
HYPHEN_ENV = "DC-DEVICE-IDS"
# A nested run took 94-142 s for the device plugin, 28 min for the DRA driver (2 cores shared with other runs); the
# limit only stops a hung one.
RUN_LIMIT = 60 * 60
# What a nested run gets after SIGINT to tear its cluster down (a local cluster's teardown takes seconds to a
# minute on a loaded host) before it is SIGKILLed.
TEARDOWN_GRACE = 300
TAIL_LINES = 80
# Knobs of the outer session not passed on: the subject is this run's, and no nested cluster is kept.
NOT_PASSED = ("vendor_device_plugin", "vendor_dra_driver", "vendor_command", "vendor_daemonset", "keep_cluster")
ROOT = Path(__file__).resolve().parents[2]
# The nested run's environment drops what would change its selection or make it look like an xdist worker, and
# the variables of the knobs not passed on.
DROPPED_ENV_PREFIXES = ("PYTEST_XDIST_", "PYTEST_ADDOPTS", "PYTEST_CURRENT_TEST")


def vendor_command(run: Run) -> str:
    python = shlex.quote(sys.executable)
    if run.kind == DRA:
        words = [
            f"{python} -m device_conformance.fakes.dra_driver.as_subject --driver {{driver}}",
            "--node-name {node_name} --registry-dir {registry_dir} --plugins-dir {plugins_dir}",
            "--cdi-dir {cdi_dir} --kubeconfig {kubeconfig}",
        ]
        words += [f"--pattern {p}" for p in run.patterns]
    elif run.patterns:
        words = [f"{python} -m device_conformance.fakes.device_plugin.as_subject --env-name {HYPHEN_ENV}"]
        words += [f"--pattern {p}" for p in run.patterns]
        words.append("--socket-dir {plugin_dir} --resource {resource}")
    else:
        words = [f"{python} -m device_conformance.fakes.device_plugin.as_subject --socket-dir {{plugin_dir}}"]
        words.append("--resource {resource}")
    words += [f"--defect {d}" for d in run.defects]
    return " ".join(words)


def passed_on(config: pytest.Config) -> list[str]:
    """The outer session's device-conformance options (provider, versions, binaries, knobs), for the nested run."""
    from device_conformance.pytest_plugin.options import IGNORE_KNOWN_BUGS
    from device_conformance.settings import KNOBS

    argv: list[str] = []
    for name, knob in KNOBS.items():
        if knob.option is None or name in NOT_PASSED:
            continue
        value = config.getoption(knob.option)
        if value is None or value is False:
            continue
        if knob.flag:
            argv.append(knob.option)
        else:
            argv += [f"{knob.option}={v}" for v in (value if knob.repeat else [value])]
    if config.getoption(IGNORE_KNOWN_BUGS):
        argv.append(IGNORE_KNOWN_BUGS)
    return argv


def nested_env() -> dict[str, str]:
    from device_conformance.settings import KNOBS

    dropped = {KNOBS[name].env for name in NOT_PASSED}
    return {
        k: v
        for k, v in os.environ.items()
        if k not in dropped and not any(k.startswith(p) for p in DROPPED_ENV_PREFIXES)
    }


def _sigterm_as_interrupt(*_: object) -> None:
    raise KeyboardInterrupt


@contextmanager
def interrupts_raise() -> Iterator[None]:
    """While the nested run is started and waited for (main thread only): SIGTERM (CI's stop) raises
    KeyboardInterrupt as Ctrl-C does, and SIGINT has Python's handler, also where this process was started
    ignoring it (`nohup ... &`): an ignored signal stays ignored across exec, and the nested pytest would never
    see the SIGINT that makes it tear its cluster down."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {
        signal.SIGTERM: signal.signal(signal.SIGTERM, _sigterm_as_interrupt),
        signal.SIGINT: signal.signal(signal.SIGINT, signal.default_int_handler),
    }
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)


def nested_run(argv: list[str], log: Path, limit: float) -> int:
    """Run argv (a pytest) to its end, output in `log`; its exit code. Interrupted (or past `limit`), it gets one
    SIGINT and TEARDOWN_GRACE seconds to tear its cluster down, then SIGKILL; an interrupt is raised again."""
    deathsig = ["setpriv", "--pdeathsig", "INT", "--"] if shutil.which("setpriv") else []
    with interrupts_raise():
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [*deathsig, *argv],
                cwd=ROOT,
                env=nested_env(),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            return proc.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            stop(proc.pid)
            return -signal.SIGINT
        except BaseException:
            stop(proc.pid)
            raise


def stop(pid: int) -> None:
    """SIGINT to the nested pytest (its Ctrl-C: the session tears its cluster down), SIGKILL after TEARDOWN_GRACE
    seconds, then SIGKILL to what is left of its process group; a second Ctrl-C meanwhile waits for it."""
    from device_conformance.core.interrupts import deferred_interrupts
    from device_conformance.host.process import kill_group_of_reaped_leader, terminate

    with deferred_interrupts():
        terminate(pid, grace=TEARDOWN_GRACE, sig=signal.SIGINT)
        kill_group_of_reaped_leader(pid)


def outcomes(junit: Path) -> dict[str, Outcome]:
    """'module.py::test' -> its outcome, from a pytest JUnit XML (an error in setup or teardown is 'error'). A test
    that failed and then errored in teardown has two <testcase> entries (pytest's junitxml writes one per failed
    phase): it is 'failed', with both texts. A pass carries its `not_judged` properties (fixtures/reports.py)."""
    found: dict[str, Outcome] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        module = case.get("classname", "").rsplit(".", 1)[-1]
        name = f"{module}.py::{case.get('name')}"
        children = {child.tag: child for child in case}
        if "failure" in children:
            child = children["failure"]
            outcome = failed(f"{child.get('message', '')}\n{child.text or ''}")
        elif "error" in children:
            child = children["error"]
            outcome = Outcome("error", f"{child.get('message', '')}\n{child.text or ''}")
        elif "skipped" in children:
            child = children["skipped"]
            kind = "xfailed" if child.get("type") == "pytest.xfail" else "skipped"
            outcome = Outcome(kind, child.get("message", ""))
        else:
            outcome = Outcome("passed", not_judged=not_judged_of(case))
        earlier = found.get(name)
        if earlier is not None and earlier.result in ("failed", "error"):
            result = "failed" if "failed" in (earlier.result, outcome.result) else earlier.result
            outcome = Outcome(result, f"{earlier.text}\n{outcome.text}")
        found[name] = outcome
    return found


def not_judged_of(case: ET.Element) -> tuple[str, ...]:
    """The `not_judged` user properties pytest's junitxml wrote on a test case (fixtures/reports.py NOT_JUDGED)."""
    from device_conformance.fixtures.reports import NOT_JUDGED

    return tuple(p.get("value", "") for p in case.iter("property") if p.get("name") == NOT_JUDGED)


def module_of(test: str) -> str:
    return test.split("::", 1)[0]


def nested_paths(run: Run) -> list[str]:
    """What the nested pytest collects: `suites`, or the run's modules (each found once under suites/)."""
    if not run.modules:
        return ["suites"]
    paths = []
    for name in run.modules:
        found = sorted(ROOT.glob(f"suites/*/{name}"))
        assert len(found) == 1, f"run {run.id}: module {name} is {len(found)} files under suites/: {found}"
        paths.append(str(found[0].relative_to(ROOT)))
    return paths


def expected_outcomes(run: Run) -> dict[str, Outcome]:
    other = DP if run.kind == DRA else DRA
    unknown = sorted(set(run.expected) - set(TESTS[run.kind]))
    assert not unknown, f"run {run.id} expects outcomes of tests that are not {run.kind} black-box tests: {unknown}"
    if run.modules:
        known = {module_of(t) for t in TESTS[run.kind]}
        assert set(run.modules) <= known, f"run {run.id}: {sorted(set(run.modules) - known)} hold no {run.kind} test"
        outside = sorted(t for t in run.expected if module_of(t) not in run.modules)
        assert not outside, f"run {run.id} expects outcomes of tests outside its modules {run.modules}: {outside}"
        return {t: run.expected.get(t, PASSED) for t in TESTS[run.kind] if module_of(t) in run.modules}
    return {t: run.expected.get(t, PASSED) for t in TESTS[run.kind]} | {t: OTHER_KIND[run.kind] for t in TESTS[other]}


def first_line(outcome: Outcome) -> str:
    lines = [line for line in outcome.text.splitlines() if line.strip()]
    shown = f"{outcome.result}: {lines[0][:300]}" if lines else outcome.result
    return shown + (f"; not judged: {list(outcome.not_judged)}" if outcome.not_judged else "")


def differences(expected: dict[str, Outcome], got: dict[str, Outcome]) -> list[str]:
    rows = []
    for test in sorted(set(expected) | set(got)):
        want, seen = expected.get(test), got.get(test)
        if want is None:
            rows.append(f"- {test}: not in this module's TESTS (a new black-box test?), got {first_line(seen)}")
        elif seen is None:
            rows.append(f"- {test}: expected {want}, not in the nested run")
        elif not want.matches(seen):
            rows.append(f"- {test}: expected {want}, got {first_line(seen)}")
    return rows


def tail(log: Path, lines: int = TAIL_LINES) -> str:
    text = log.read_text(encoding="utf-8", errors="replace").splitlines() if log.exists() else []
    return "\n".join(text[-lines:])


# -- the test ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("run", RUNS, ids=[r.id for r in RUNS])
def test_vendor_mode_on_a_fake(run: Run, request, tmp_path):
    """The nested vendor-mode run of our fake with the run's patterns or defects gives exactly the run's outcomes:
    every black-box test of the subject's kind passes unless listed, those of the other kind are NOT APPLICABLE."""
    from device_conformance.fixtures.session import session_settings

    config = request.config
    settings = session_settings(config)
    if not settings.capabilities.vendor_command_on_host:
        pytest.skip(
            f"NOT APPLICABLE: --vendor-command starts the subject as a host process: local provider only, "
            f"this session's is {settings.provider.value}"
        )
    subject = ["--vendor-dra-driver", DRIVER] if run.kind == DRA else ["--vendor-device-plugin", RESOURCE]
    junit, log = tmp_path / "junit.xml", tmp_path / "pytest.log"
    argv = [sys.executable, "-m", "pytest", *nested_paths(run), "-m", "vendor_blackbox", "-p", "no:cacheprovider"]
    argv.append("-q")
    argv += [*subject, "--vendor-command", vendor_command(run), f"--vendor-report={tmp_path / 'vendor-report'}"]
    argv += [f"--junitxml={junit}", *passed_on(config)]
    if run.kind == DRA:
        # As make certify-upstream runs a DRA subject: the black-box tests share no module fixture, so each goes
        # to a worker (cluster) of its own; -n auto sizes the workers for the machine as it is.
        argv += ["-n", "auto", "--dist", "load"]
    request.node.user_properties.append(("nested_run", shlex.join(argv)))
    started = time.monotonic()
    code = nested_run(argv, log, RUN_LIMIT)
    request.node.user_properties.append(("nested_run_seconds", round(time.monotonic() - started)))
    where = f"nested run (exit {code}, {time.monotonic() - started:.0f} s): {log}\n{shlex.join(argv)}"
    if not junit.exists():
        pytest.fail(f"{where}\nno JUnit XML; its output's last {TAIL_LINES} lines:\n{tail(log)}", pytrace=False)
    expected = expected_outcomes(run)
    rows = differences(expected, outcomes(junit))
    if rows:
        pytest.fail(
            f"{run.id} ({run.why}): {len(rows)} outcome(s) differ from the expected ones\n"
            + "\n".join(rows)
            + f"\n{where}\n--- its output's last {TAIL_LINES} lines ---\n{tail(log)}",
            pytrace=False,
        )
    wanted_code = 1 if any(o.result == "failed" for o in expected.values()) else 0
    assert code == wanted_code, f"{where}\n--- its output's last {TAIL_LINES} lines ---\n{tail(log)}"
