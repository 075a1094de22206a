"""Behaviours real DRA drivers have that the DRA API allows (DriverConfig.patterns): the certifier passes each on
every clause it can judge, with the reason in the message or evidence, never a FAIL."""

import functools

import pytest
from certify_subjects import run_dra_driver

from device_conformance.certify.clauses import DRA_DRIVER_CLAUSES
from device_conformance.certify.verdicts import NOT_APPLICABLE, PASS

NO_CDI = "the driver answered no devices (the API allows zero or more), so there are no CDI device IDs"
BOTH_REPORT = (
    "v1: reports 2 device(s) ['node-1/dev-0', 'node-1/dev-1']; v1alpha1: reports 2 device(s) ['node-1/dev-0', "
    "'node-1/dev-1']"
)
DECLINED = (
    "declines health reporting: v1: declined (UNIMPLEMENTED: device health reporting is not supported by this driver); "
    "v1alpha1: declined (UNIMPLEMENTED: device health reporting is not supported by this driver)"
)
# pattern -> (clauses judged NOT APPLICABLE and why, besides DRA-SLICES; (clause, expected message))
PATTERNS = {
    "fetch-claims-first": (
        {},
        ("DRA-PREPARE-MULTI", "the whole call failed with an error (allowed: the kubelet calls again)"),
    ),
    "cdi-common-device": ({}, ("DRA-CDI-REMOVED", "none of 3 claim-specific CDI device ID(s) resolves any more")),
    "cdi-static-per-device": (
        {},
        ("DRA-CDI-REMOVED", "no claim-specific CDI device IDs; 2 shared or static one(s) may stay"),
    ),
    "serve-after-notify": (
        {},
        ("DRA-RESTART", "the same devices and CDI IDs after the restart, claim-b prepared in the same call"),
    ),
    "prepare-no-devices": (
        {"DRA-CDI-VALID": NO_CDI, "DRA-CDI-REMOVED": NO_CDI},
        ("DRA-PREPARE", "claim ns-1/claim-a: 0 devices (allowed: zero or more)"),
    ),
    "claim-error-once": (
        {},
        (
            "DRA-PREPARE",
            "claim ns-1/claim-a: 2 device(s) (after 1 failed answer(s) ['transient failure, try again (pattern "
            "claim-error-once)'], which the kubelet calls again for)",
        ),
    ),
    "health-not-supported": ({"DRA-HEALTH": DECLINED}, ("DRA-HEALTH", DECLINED)),
    "dra-on-registration-socket": ({}, ("DRA-HEALTH", BOTH_REPORT)),
    # Fails each claim for 12 s from its first call: the certifier calls again 2, 4 and 8 s apart, so the fourth
    # answer, 14 s after the first, is the first without the error (3 x 2 s would have given up at 6 s).
    "claim-error-for-a-while": (
        {},
        (
            "DRA-PREPARE",
            "claim ns-1/claim-a: 2 device(s) (after 3 failed answer(s) ['device still being set up, try again "
            "(pattern claim-error-for-a-while)'], which the kubelet calls again for)",
        ),
    ),
}


def result(cert, clause):
    return next(r for r in cert.results if r.clause.id == clause)


@functools.cache
def certified(pattern):
    return run_dra_driver(patterns=[pattern])


@pytest.mark.parametrize("pattern", sorted(PATTERNS))
def test_each_pattern_passes_every_clause_it_can_be_judged_on(pattern):
    cert = certified(pattern)
    not_applicable, (clause, message) = PATTERNS[pattern]
    expected = {c.id: PASS for c in DRA_DRIVER_CLAUSES} | {c: NOT_APPLICABLE for c in not_applicable}
    expected["DRA-SLICES"] = NOT_APPLICABLE
    assert {r.clause.id: r.verdict for r in cert.results} == expected, [
        (r.clause.id, r.message) for r in cert.results if r.verdict != expected[r.clause.id]
    ]
    assert result(cert, clause).message == message
    assert {c: result(cert, c).message for c in not_applicable} == not_applicable


def test_fetch_claims_first_whole_call_error_is_the_evidence():
    evidence = result(certified("fetch-claims-first"), "DRA-PREPARE-MULTI").evidence
    assert evidence[2].startswith("<- error UNKNOWN: get resource claims: retrieve claim dc-certify/not-allocated-")


def notes(pattern, clause):
    return [line for line in result(certified(pattern), clause).evidence if line.startswith("note: ")]


def test_a_driver_wide_cdi_device_listed_by_every_claim_is_a_note_not_a_failure():
    assert notes("cdi-common-device", "DRA-CDI-REMOVED") == [
        "note: dra.example.com/device=common of claim uid-a not judged "
        "(shared: also listed by claim(s) ['uid-b']; may stay)",
        "note: dra.example.com/device=common of claim uid-b not judged "
        "(shared: also listed by claim(s) ['uid-a']; may stay)",
    ]


def test_static_per_device_cdi_specs_are_notes_not_failures():
    assert notes("cdi-static-per-device", "DRA-CDI-REMOVED") == [
        "note: dra.example.com/device=dev-0 of claim uid-a not judged (static: defined before the first prepare; "
        "may stay)",
        "note: dra.example.com/device=dev-1 of claim uid-a not judged (shared: also listed by claim(s) ['uid-b']; "
        "may stay)",
        "note: dra.example.com/device=dev-1 of claim uid-b not judged (shared: also listed by claim(s) ['uid-a']; "
        "may stay)",
    ]


def test_a_restarted_driver_is_notified_before_it_is_called():
    """serve-after-notify serves nothing until NotifyRegistrationStatus(plugin_registered=True): DRA-RESTART passes
    only because the certifier notifies the restarted driver, as the kubelet notifies every new socket."""
    cert = certified("serve-after-notify")
    evidence = result(cert, "DRA-RESTART").evidence
    notify = evidence.index('-> NotifyRegistrationStatus {"plugin_registered": true}')
    restart = next(i for i, line in enumerate(evidence) if line.startswith("certifier: restarting the driver"))
    assert restart < notify < len(evidence) - 2
    assert "endpoint" in result(cert, "DRA-REG-INFO").evidence[-1]


def test_claims_failed_for_a_while_are_called_again_in_every_clause_that_prepares_or_unprepares_them():
    """claim-error-for-a-while fails each claim's first 12 s: three failed answers (at 0, 2 and 6 s) before the one at
    14 s, in DRA-PREPARE, DRA-UNPREPARE, for the made-up claim of DRA-UNPREPARE-UNKNOWN and for both claims in the
    restarted driver (DRA-PREPARE-MULTI judges its first answer)."""
    retries = {
        r.clause.id: [line.split(" in an OK answer")[0] for line in r.evidence if " in an OK answer; " in line]
        for r in certified("claim-error-for-a-while").results
    }
    prepared, unprepared = "note: NodePrepareResources failed claim(s)", "note: NodeUnprepareResources failed claim(s)"
    unknown = retries["DRA-UNPREPARE-UNKNOWN"][0].removeprefix(unprepared)
    assert {clause: lines for clause, lines in retries.items() if lines} == {
        "DRA-PREPARE": [f"{prepared} ['uid-a']"] * 3,
        "DRA-UNPREPARE": [f"{unprepared} ['uid-a']"] * 3,
        "DRA-UNPREPARE-UNKNOWN": [f"{unprepared}{unknown}"] * 3,
        "DRA-RESTART": [f"{prepared} ['uid-a', 'uid-b']"] * 3,
    }
    assert unknown.startswith(" ['00000000-dc00-4000-8000-")


def test_a_driver_naming_no_endpoint_is_called_on_its_registration_socket():
    """pluginregistration/v1 api.proto PluginInfo.endpoint is optional; the kubelet then calls the registration
    socket (operation_generator.go): the certifier does too, and says so."""
    cert = certified("dra-on-registration-socket")
    info = result(cert, "DRA-REG-INFO")
    socket = next(line for line in info.evidence if line.startswith("endpoint empty: "))
    assert socket.startswith("endpoint empty: the kubelet uses the registration socket /")
    assert socket.endswith(
        "dra.example.com-reg.sock (pkg/kubelet/pluginmanager/operationexecutor/operation_generator.go)"
    )
    assert result(cert, "DRA-SERVICE").message.endswith("dra.example.com-reg.sock")
