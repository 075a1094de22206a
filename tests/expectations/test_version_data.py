"""Verdicts of the version data on every minor the suites run against (1.28-1.37), at patch releases on both
sides of each fix, and the data's own consistency. The expected values restate what the comments in
src/device_conformance/expectations/ cite (CHANGELOGs and module sources of each release)."""

from pathlib import Path

import pytest

from device_conformance.expectations import bugtable, cluster, deviceplugin, dra
from device_conformance.expectations.behaviour import Behaviour, Fix, KnownBug, Since, outcome, released_in
from device_conformance.expectations.deviceplugin import ADMITTED_WITHOUT_DEVICES as ADMITTED
from device_conformance.expectations.deviceplugin import REJECTED_UNTIL_REGISTERED as REJECTED
from device_conformance.expectations.versions import KubeVersion

V = KubeVersion.parse
DOC = Path(__file__).resolve().parents[2] / "docs" / "known-bugs.md"

# (bug, release, affected): per bug, every minor 1.28-1.37 and both sides of each fix.
VERDICTS = [
    *[
        (deviceplugin.PLUGIN_ROLLOUT_ZEROES_ALLOCATABLE, release, affected)
        for release, affected in [
            ("1.28.15", True),
            ("1.31.14", True),
            ("1.33.13", True),
            ("1.34.12", True),
            ("1.35.8", True),
            ("1.36.0", True),  # the old data called 1.36 fixed
            ("1.36.4", True),
            ("1.36.5", True),
            ("1.37.0", False),
            ("1.37.1", False),
        ]
    ],
    *[
        (deviceplugin.SUCCEEDED_POD_READMITTED, release, affected)
        for release, affected in [
            ("1.21.14", False),
            ("1.22.0", True),
            ("1.27.16", True),  # no cherry-pick to 1.27
            ("1.28.13", True),
            ("1.28.14", False),
            ("1.29.8", True),
            ("1.29.9", False),
            ("1.30.4", True),
            ("1.30.5", False),
            ("1.31.0", True),
            ("1.31.1", False),
            ("1.32.0", False),
            ("1.33.0", False),
            ("1.34.0", False),
            ("1.35.0", False),
            ("1.36.4", False),
            ("1.37.1", False),
        ]
    ],
    *[
        (deviceplugin.EXPIRED_ENDPOINT_OUT_OF_SYNC_LOG, release, affected)
        for release, affected in [
            ("1.28.0", True),
            ("1.32.13", True),
            ("1.33.13", True),
            ("1.34.12", True),
            ("1.35.0", False),
            ("1.36.0", False),
            ("1.37.1", False),
        ]
    ],
    *[
        (deviceplugin.EXTENDED_RESOURCES_NOT_RESET, release, True)
        for release in ["1.15.0", "1.28.0", "1.31.0", "1.32.0", "1.33.0", "1.34.0", "1.35.0", "1.36.5", "1.37.1"]
    ],
    (deviceplugin.EXTENDED_RESOURCES_NOT_RESET, "1.14.10", False),
    *[
        (dra.NOEXECUTE_TOLERATION_IGNORED, release, affected)
        for release, affected in [
            ("1.32.13", False),
            ("1.33.0", True),
            ("1.33.13", True),
            ("1.34.0", True),
            ("1.34.12", True),
            ("1.35.0", False),
            ("1.36.0", False),
            ("1.37.1", False),
        ]
    ],
    *[
        (dra.EVICTION_EVENT_FOR_FIRST_POD_ONLY, release, affected)
        for release, affected in [
            ("1.32.13", False),  # no device-taint eviction controller before 1.33
            ("1.33.0", True),
            ("1.33.13", True),
            ("1.34.0", True),
            ("1.34.10", True),
            ("1.34.12", True),  # `*emitEventFunc = nil` still in module source v1.34.12
            ("1.35.0", False),
            ("1.36.4", False),
            ("1.37.1", False),
        ]
    ],
    *[
        (dra.SHARED_CLAIM_STALE_CONSUMER_EVICTION, release, affected)
        for release, affected in [
            ("1.32.13", False),
            ("1.33.0", True),
            ("1.34.12", True),
            ("1.35.0", True),
            ("1.35.8", True),
            ("1.36.0", False),
            ("1.37.1", False),
        ]
    ],
    *[
        (deviceplugin.DEVICE_HEALTH_PUSHED_TO_WRONG_POD, release, affected)
        for release, affected in [
            ("1.30.14", False),
            ("1.31.0", True),
            ("1.33.13", True),
            ("1.34.12", True),
            ("1.36.4", True),
            ("1.36.5", True),
            ("1.37.0", False),
            ("1.37.1", False),
        ]
    ],
    *[
        (dra.ALREADY_PREPARED_CLAIM_SKIPS_THE_REST, release, affected)
        for release, affected in [
            ("1.33.13", False),
            ("1.34.0", True),
            ("1.34.3", True),
            ("1.34.4", False),
            ("1.34.10", False),
            ("1.35.0", True),
            ("1.35.1", False),
            ("1.35.8", False),
            ("1.36.0", False),
            ("1.37.1", False),
        ]
    ],
    *[
        (dra.NIL_SELECTOR_RULE_TAINTS_EVERY_DEVICE, release, affected)
        for release, affected in [
            ("1.32.13", False),
            ("1.33.0", True),
            ("1.34.10", True),
            ("1.35.8", True),
            ("1.36.4", True),
            ("1.36.5", True),
            ("1.37.0", True),
            ("1.37.1", False),
            ("1.37.2", False),
        ]
    ],
    *[
        (dra.PARTIAL_PREPARE_DUPLICATES_DEVICES, release, affected)
        for release, affected in [
            ("1.31.4", False),  # before the first release the DRA suites run on
            ("1.32.0", True),
            ("1.33.13", True),
            ("1.34.10", True),
            ("1.34.11", True),
            ("1.34.12", False),  # cherry-pick #140953
            ("1.35.0", True),
            ("1.35.8", True),  # cherry-pick #140954 not merged
            ("1.36.3", True),
            ("1.36.4", False),  # cherry-pick #140955
            ("1.37.0", False),
            ("1.37.1", False),
        ]
    ],
    *[
        (dra.UNREFERENCED_POD_UNPREPARES_SHARED_CLAIM, release, affected)
        for release, affected in [
            ("1.31.4", False),  # before the first release the DRA suites run on
            ("1.32.0", True),
            ("1.33.13", True),
            ("1.34.12", True),
            ("1.35.8", True),
            ("1.36.4", True),
            ("1.36.5", True),  # no cherry-pick
            ("1.37.0", False),
            ("1.37.1", False),
        ]
    ],
    *[
        (dra.HEALTH_STREAM_TO_DRIVER_WITHOUT_HEALTH_SERVICE, release, affected)
        for release, affected in [
            ("1.34.10", False),  # ResourceHealthStatus alpha and off
            ("1.35.8", False),
            ("1.36.0", True),
            ("1.36.4", True),
            ("1.36.5", True),  # cherry-pick #141858 not merged
            ("1.37.0", False),
            ("1.37.1", False),
        ]
    ],
    *[
        (dra.CLASS_CONFIG_NAMES_NO_REQUESTS, release, affected)
        for release, affected in [
            ("1.31.4", False),  # before the first release the DRA suites run on
            ("1.32.0", True),
            ("1.32.5", True),
            ("1.32.10", False),  # cherry-pick #135109
            ("1.33.5", True),
            ("1.33.6", False),  # cherry-pick #135105
            ("1.33.13", False),
            ("1.34.0", True),
            ("1.34.1", True),
            ("1.34.2", False),  # cherry-pick #135098
            ("1.34.10", False),
            ("1.35.0", False),
            ("1.37.1", False),
        ]
    ],
    *[
        (dra.MISSING_DRIVER_BLOCKS_POD_DELETION, release, affected)
        for release, affected in [
            ("1.31.4", False),  # before the first release the DRA suites run on
            ("1.32.0", True),
            ("1.32.5", True),
            ("1.33.13", True),  # no cherry-pick
            ("1.34.0", False),
            ("1.34.10", False),
            ("1.37.1", False),
        ]
    ],
    *[
        (dra.DRA_EXTENDED_RESOURCE_TAKEN_FOR_DEVICE_PLUGIN_RESOURCE, release, affected)
        for release, affected in [
            ("1.34.12", False),  # the pod fails at admission instead (no isDRAExtendedResource skip)
            ("1.35.0", True),
            ("1.35.10", True),  # no cherry-pick
            ("1.36.6", True),
            ("1.37.1", True),
            ("1.37.2", True),
            ("1.38.0-alpha.0", True),
            ("1.38.0-alpha.1", False),
            ("1.38.0-beta.0", False),
        ]
    ],
    *[
        (deviceplugin.INFLIGHT_ALLOCATION_DROPPED_ON_REBUILD, release, affected)
        for release, affected in [
            ("1.28.15", True),
            ("1.34.12", True),
            ("1.35.10", True),  # no cherry-pick
            ("1.36.6", True),
            ("1.37.2", True),
            ("1.38.0-alpha.0", True),
            ("1.38.0-alpha.1", False),
        ]
    ],
]


@pytest.mark.parametrize(("bug", "release", "affected"), VERDICTS, ids=lambda v: getattr(v, "issue", str(v)))
def test_known_bug_verdict(bug, release, affected):
    assert bug.affects(V(release)) is affected


# The pre-1.20 checkpoint: no v1 reader in 1.20.0-1.20.13, 1.21.0-1.21.7, 1.22.0-1.22.4; the backported
# reader from 1.20.14, 1.21.8, 1.22.5; mainline 1.23.0-1.30.x; removed from 1.31.0.
V1_CHECKPOINT = [
    ("1.20.0", ADMITTED),
    ("1.20.13", ADMITTED),
    ("1.20.14", REJECTED),
    ("1.20.15", REJECTED),
    ("1.21.7", ADMITTED),
    ("1.21.8", REJECTED),
    ("1.22.4", ADMITTED),
    ("1.22.5", REJECTED),
    ("1.23.0", REJECTED),
    ("1.28.0", REJECTED),
    ("1.29.15", REJECTED),
    ("1.30.0", REJECTED),  # the old data said the reader went away in 1.30
    ("1.30.14", REJECTED),
    ("1.31.0", ADMITTED),
    ("1.32.0", ADMITTED),
    ("1.33.0", ADMITTED),
    ("1.34.0", ADMITTED),
    ("1.35.0", ADMITTED),
    ("1.36.4", ADMITTED),
    ("1.37.1", ADMITTED),
]


@pytest.mark.parametrize(("release", "expected"), V1_CHECKPOINT)
def test_v1_checkpoint_outcome(release, expected):
    assert outcome(deviceplugin.V1_CHECKPOINT_ON_RESTART, V(release)) == expected


@pytest.mark.parametrize("minor", range(20, 38))
def test_corrupt_checkpoint_is_always_a_lost_state(minor):
    assert outcome(deviceplugin.CORRUPT_CHECKPOINT_ON_RESTART, KubeVersion(1, minor, 0)) == ADMITTED


def test_no_outcome_before_the_first_recorded_release():
    with pytest.raises(LookupError, match="no recorded outcome"):
        deviceplugin.V1_CHECKPOINT_ON_RESTART.at(V("1.19.16"))


DRA = {"DynamicResourceAllocation": True}
TAINTS = {"DRADeviceTaints": True}
RULES = {"DRADeviceTaintRules": True}
BETA1 = "resource.k8s.io/v1beta1=true"
ALPHA3 = "resource.k8s.io/v1alpha3=true"
BETA2 = "resource.k8s.io/v1beta2=true"
CGROUP_V1 = {"failCgroupV1": False}

# (release, feature gates, runtime-config, kubelet config) exactly as settings_for must give them.
SETTINGS = [
    ("1.28.15", {}, [], {}),
    ("1.29.15", {}, [], {}),
    ("1.30.14", {}, [], {}),
    ("1.31.14", {}, [], {}),
    ("1.32.0", DRA, [BETA1], {}),
    ("1.32.13", DRA, [BETA1], {}),
    ("1.33.0", DRA | TAINTS, [BETA1, ALPHA3], {}),
    ("1.34.12", TAINTS, [ALPHA3], {}),
    ("1.35.0", TAINTS | RULES, [ALPHA3], CGROUP_V1),
    ("1.35.8", TAINTS | RULES, [ALPHA3], CGROUP_V1),
    ("1.36.4", RULES, [BETA2], CGROUP_V1),
    ("1.37.0", {}, [], CGROUP_V1),
    ("1.37.1", {}, [], CGROUP_V1),
]


@pytest.mark.parametrize(("release", "gates", "runtime", "kubelet"), SETTINGS)
def test_settings_per_release(release, gates, runtime, kubelet):
    settings = cluster.settings_for(V(release))
    assert (settings.feature_gates, settings.runtime_config, settings.kubelet_config) == (gates, runtime, kubelet)


# The DRA gates each minor's pkg/features/kube_features.go knows (newest patch of each minor read); any
# other name in --feature-gates stops the component.
GATES_KNOWN = {
    28: {"DynamicResourceAllocation"},
    29: {"DynamicResourceAllocation"},
    30: {"DynamicResourceAllocation"},
    31: {"DynamicResourceAllocation"},
    32: {"DynamicResourceAllocation"},
    33: {"DynamicResourceAllocation", "DRADeviceTaints"},
    34: {"DynamicResourceAllocation", "DRADeviceTaints"},
    35: {"DynamicResourceAllocation", "DRADeviceTaints", "DRADeviceTaintRules"},
    36: {"DynamicResourceAllocation", "DRADeviceTaints", "DRADeviceTaintRules"},
    37: {"DynamicResourceAllocation", "DRADeviceTaints", "DRADeviceTaintRules"},
}
# resource.k8s.io versions each minor's apiserver has (pkg/registry/resource/rest/storage_resource.go).
APIS_SERVED = {
    28: {"v1alpha2"},
    29: {"v1alpha2"},
    30: {"v1alpha2"},
    31: {"v1alpha3"},
    32: {"v1alpha3", "v1beta1"},
    33: {"v1alpha3", "v1beta1", "v1beta2"},
    34: {"v1", "v1alpha3", "v1beta1", "v1beta2"},
    35: {"v1", "v1alpha3", "v1beta1", "v1beta2"},
    36: {"v1", "v1alpha3", "v1beta1", "v1beta2"},
    37: {"v1", "v1alpha3", "v1beta1", "v1beta2"},
}


@pytest.mark.parametrize("minor", sorted(GATES_KNOWN))
def test_settings_name_only_gates_and_apis_the_release_has(minor):
    settings = cluster.settings_for(KubeVersion(1, minor, 0))
    assert set(settings.feature_gates) <= GATES_KNOWN[minor]
    served = {entry.removeprefix("resource.k8s.io/").removesuffix("=true") for entry in settings.runtime_config}
    assert served <= APIS_SERVED[minor]


@pytest.mark.parametrize(
    ("release", "claims", "rules", "taints", "none_effect"),
    [
        ("1.32.13", "resource.k8s.io/v1beta1", "resource.k8s.io/v1alpha3", False, False),
        ("1.33.0", "resource.k8s.io/v1beta1", "resource.k8s.io/v1alpha3", True, False),
        ("1.34.12", "resource.k8s.io/v1", "resource.k8s.io/v1alpha3", True, False),
        ("1.35.8", "resource.k8s.io/v1", "resource.k8s.io/v1alpha3", True, True),
        ("1.36.4", "resource.k8s.io/v1", "resource.k8s.io/v1beta2", True, True),
        ("1.37.1", "resource.k8s.io/v1", "resource.k8s.io/v1", True, True),
    ],
)
def test_dra_facts_per_minor(release, claims, rules, taints, none_effect):
    version = V(release)
    assert dra.resource_api_version(version) == claims
    assert dra.device_taint_rule_api_version(version) == rules
    assert (dra.has_device_taints(version), dra.has_none_taint_effect(version)) == (taints, none_effect)


@pytest.mark.parametrize("release", ["1.28.15", "1.31.14"])
def test_no_usable_resource_api_before_1_32(release):
    assert not dra.supports_dra(V(release))
    with pytest.raises(LookupError, match=r"v1beta1 and later, from 1\.32"):
        dra.resource_api_version(V(release))


def _defined_in_expectations(kind: type) -> set[int]:
    return {id(value) for module in (deviceplugin, dra) for value in vars(module).values() if isinstance(value, kind)}


def test_every_bug_and_behaviour_is_in_the_table():
    assert _defined_in_expectations(KnownBug) == {id(bug) for bug in bugtable.KNOWN_BUGS}
    assert _defined_in_expectations(Behaviour) == {id(b) for b in bugtable.BEHAVIOURS}


@pytest.mark.parametrize("bug", bugtable.KNOWN_BUGS, ids=lambda bug: bug.issue)
def test_known_bug_data_is_complete_and_consistent(bug):
    assert bug.problems() == []
    assert bug.issue.startswith(("kubernetes#", "finding:")) and bug.title and bug.shown_by
    if bug.finding:  # a finding's report, ready to file upstream, is committed with its entry
        assert (DOC.parent / "findings" / f"{bug.finding}.md").is_file(), bug.finding_page
    releases = [fix.release for fix in bug.fixes]
    assert releases == sorted(releases, reverse=True), "newest branch first"
    assert len({(r.major, r.minor) for r in releases}) == len(releases), "one fix per branch"
    assert all(release >= bug.first_affected for release in releases)
    assert all("kubernetes#" in fix.pr for fix in bug.fixes), "a fixed bug names its fix PR"
    if bug.fixes:
        assert not bug.affects(bug.fixes[0].release), "the mainline fix release is fixed"
        assert bug.affects(bug.first_affected), "the first affected release is affected"


@pytest.mark.parametrize("behaviour", bugtable.BEHAVIOURS, ids=lambda b: b.name)
def test_behaviour_data_is_consistent(behaviour):
    assert behaviour.problems() == []
    for entry in behaviour.entries:
        assert behaviour.at(entry.release) == entry
        for backport in entry.backports:
            assert behaviour.at(backport.release) == entry


@pytest.mark.parametrize(
    ("fixes", "complaint"),
    [
        ((Fix("1.31.1", "kubernetes#2"), Fix("1.32.0", "kubernetes#1")), "newest branch first"),
        ((Fix("1.32.1", "kubernetes#2"), Fix("1.32.0", "kubernetes#1")), "one per branch"),
        ((Fix("1.32.0", "the fix"),), "names no PR number"),
        ((Fix("1.32.0", " "),), "names no pull request"),
        ((Fix("1.29.3", "kubernetes#1"),), "is before 1.30.0"),
    ],
)
def test_inconsistent_bug_data_is_refused(fixes, complaint):
    with pytest.raises(ValueError, match=complaint):
        KnownBug("kubernetes#9", "t", first_affected="1.30.0", fixes=fixes)


def test_bug_without_a_repository_number_is_refused():
    with pytest.raises(ValueError, match="not 'repository#number'"):
        KnownBug("#9", "t", first_affected="1.30.0")


def test_behaviour_entries_out_of_order_are_refused():
    with pytest.raises(ValueError, match="sorted by release"):
        Behaviour("x", (Since("1.31.0", "b", "kubernetes#2"), Since("1.30.0", "a", "kubernetes#1")))


def test_a_backport_older_than_the_previous_entry_is_refused():
    with pytest.raises(ValueError, match=r"1\.29\.5 is before 1\.30\.0"):
        Behaviour(
            "x",
            (
                Since("1.30.0", "a", "kubernetes#1"),
                Since("1.32.0", "b", "kubernetes#2", backports=(Fix("1.29.5", "kubernetes#3"),)),
            ),
        )


def test_older_minor_only_form_still_reads_as_the_minors_first_release():
    assert Since(30, "a", "ref").release == V("1.30.0") and Since(30, "a", "ref").minor == 30


def test_a_minor_between_backports_and_mainline_without_its_own_fix_is_not_fixed():
    fixes = (Fix("1.32.0", "kubernetes#1"), Fix("1.30.5", "kubernetes#2"))
    assert released_in(V("1.31.9"), fixes) is None
    assert released_in(V("1.30.5"), fixes) == fixes[1] and released_in(V("1.30.4"), fixes) is None
    assert released_in(V("1.33.0"), fixes) == fixes[0] and released_in(V("1.29.99"), fixes) is None


@pytest.mark.parametrize(
    ("bug", "release", "text"),
    [
        (
            deviceplugin.SUCCEEDED_POD_READMITTED,
            "1.31.0",
            "fixed in 1.31.1 by kubernetes#127207 (mainline: 1.32.0-alpha.1 by kubernetes#126343)",
        ),
        (
            deviceplugin.SUCCEEDED_POD_READMITTED,
            "1.27.3",
            "no fix on 1.27 (mainline: 1.32.0-alpha.1 by kubernetes#126343)",
        ),
        (deviceplugin.SUCCEEDED_POD_READMITTED, "1.33.0", "fixed in 1.32.0-alpha.1 by kubernetes#126343"),
        (
            deviceplugin.PLUGIN_ROLLOUT_ZEROES_ALLOCATABLE,
            "1.36.4",
            "no fix on 1.36 (mainline: 1.37.0 by kubernetes#135437)",
        ),
        (deviceplugin.EXTENDED_RESOURCES_NOT_RESET, "1.37.1", "no fix released"),
    ],
)
def test_describe_fix_names_the_fix_of_the_releases_branch(bug, release, text):
    assert bug.describe_fix(V(release)) == text


def test_older_attributes_still_answer():
    bug = deviceplugin.SUCCEEDED_POD_READMITTED
    assert (bug.fixed_in, bug.since_minor) == (V("1.32.0-alpha.1"), 22)
    assert bug.fix.startswith("kubernetes#126343 (cherry-picks: 1.31.1 (kubernetes#127207), ")
    assert deviceplugin.EXTENDED_RESOURCES_NOT_RESET.fixed_in is None


@pytest.mark.parametrize(
    ("bug", "minor", "cell"),
    [
        (deviceplugin.SUCCEEDED_POD_READMITTED, 30, "< 1.30.5"),
        (deviceplugin.SUCCEEDED_POD_READMITTED, 32, "none"),
        (dra.NOEXECUTE_TOLERATION_IGNORED, 32, "none"),
        (dra.NOEXECUTE_TOLERATION_IGNORED, 34, "all"),
        (
            KnownBug("kubernetes#9", "t", first_affected="1.30.3", fixes=(Fix("1.31.0", "kubernetes#1"),)),
            30,
            ">= 1.30.3",
        ),
    ],
)
def test_bug_table_cells(bug, minor, cell):
    assert bugtable.affected_releases(bug, minor) == cell


# Catalogued bugs on every matrix release (1.31.4, 1.32.9, 1.33.13, 1.34.12, 1.35.8, 1.36.5, 1.37.2), written out
# by hand from each bug's first affected release and per-branch fixes, and the component whose release judges it:
# the verdict `make matrix` runs must expect, cell by cell. A bug added with its one data entry needs no row here:
# its cells are in docs/known-bugs.md ("Affected releases per minor"), which `make docs` writes for review and
# test_derived_docs keeps current; a row pins cells once they were checked by hand.
MATRIX_TABLE = {
    "kubernetes#127803": ("kubelet", "TTTTTTF"),  # since 1.10, fixed 1.37.0 (#135437)
    "kubernetes#126341": ("kubelet", "FFFFFFF"),  # fixed 1.32.0, cherry-picked to 1.31.1
    "kubernetes#133702": ("kubelet", "TTTTFFF"),  # fixed 1.35.0, no cherry-pick
    "kubernetes#126943": ("kubelet", "TTTTTTT"),  # unfixed
    "kubernetes#116125": ("kubelet", "TTTTTTT"),  # unfixed
    "kubernetes#135437": ("kubelet", "FFFFFFT"),  # a 1.37.0 regression, unfixed
    "kubernetes#134434": ("kube-controller-manager", "FFTTFFF"),  # 1.33.0 (DRADeviceTaints) to 1.35.0
    "kubernetes#135686": ("kube-controller-manager", "FFTTTFF"),  # 1.33.0 to 1.36.0
    "kubernetes#134152": ("kube-controller-manager", "FFTTFFF"),  # event of the first eviction only, 1.33.0 to 1.35.0
    "kubernetes#140527": ("kubelet", "FTTTTTF"),  # 1.32.0 (first usable DRA here) to 1.37.0
    "kubernetes#131513": ("kubelet", "FTTFFFF"),  # 1.32.0 to 1.34.0
    # DRAExtendedResource 1.34.0; the 1.37 cell turned F with the matrix's 1.37.2: cherry-pick #142492 (1.37.2)
    "kubernetes#141290": ("kube-controller-manager", "FFFTTTF"),
    # a departed device plugin's resource name on a DRA extended resource: from 1.35.0 (the kubelet admits such
    # pods), fixed 1.38.0-alpha.1 (#141426), no cherry-pick
    "kubernetes#141426": ("kubelet", "FFFFTTT"),
    # 1.32.0 to 1.37.0-rc.0, 1.36.4, 1.35.10 and 1.34.12: the 1.34 cell turned F with the matrix's 1.34.12 (#140953)
    "kubernetes#140274": ("kubelet", "FTTFTFF"),
    "kubernetes#135901": ("kubelet", "FFFFFFF"),  # 1.34.0 to 1.34.4 / 1.35.1 / 1.36.0: no matrix release
    "kubernetes#141620": ("kube-scheduler", "FFTTTTF"),  # 1.33.0 (DeviceTaintRules) to 1.37.1, no older cherry-pick
    "kubernetes#140268": ("kubelet", "TTTTTTF"),  # 1.31.0 (KEP-4680, device plugins) to 1.37.0, no cherry-pick
    "kubernetes#119423": ("kubelet", "TTTFFFF"),  # podresources List of ended pods, to 1.34.0, no cherry-pick
    "kubernetes#126707": ("kubelet", "TTTFFFF"),  # to 1.36.0, 1.35.4, 1.34.7 (#135485); no 1.33 cherry-pick
    "kubernetes#135485": ("kubelet", "TTTFFFF"),  # Get of an ended pod, same fix; the gate is off before 1.34
    "kubernetes#140224": ("kubelet", "FFTTTTF"),  # in-place resize runs device allocation, 1.33.0 to 1.37.0
    "kubernetes#140212": ("kubelet", "FTTTTTF"),  # 1.32.0 (first usable DRA here) to 1.37.0, no cherry-pick
    "kubernetes#141855": ("kubelet", "FFFFFTF"),  # 1.36.0 (ResourceHealthStatus on) to 1.37.0, 1.36 pick open
    # the older instance's stream end clears the newer one's health: from 1.36.0 (ResourceHealthStatus on), unfixed
    "kubernetes#140818": ("kubelet", "FFFFFTT"),
    "kubernetes#134789": ("kube-scheduler", "FTFFFFF"),  # 1.32.0 to 1.35.0, 1.34.2, 1.33.6 and 1.32.10 (1.32.9: T)
    "kubernetes#131968": ("kubelet", "FTTFFFF"),  # 1.32.0 to 1.34.0, no cherry-pick
    "kubernetes#138446": ("kubelet", "TTTTTTT"),  # a completed init container re-admitted, from 1.28.0, unfixed
    # from 1.34.0-rc.0 (#133028 made allDevices hold pointers), unfixed; 1.31.4 passed in the matrix
    "finding:device-removed-during-allocate-panics": ("kubelet", "FFFTTTT"),
    # an allocation in flight loses its devices when an ended pod's are freed: from 1.28.0 (vouched), fixed
    # 1.38.0-alpha.1 (#137534), no cherry-pick
    "kubernetes#137534": ("kubelet", "TTTTTTT"),
    # podresources repeats a claim's earlier CDI IDs: from 1.31.0 (per-device entries), unfixed (the test needs 1.34)
    "finding:podresources-repeats-earlier-cdi-ids": ("kubelet", "TTTTTTT"),
    # a `null` DRA health checkpoint panics the kubelet at the next update: from 1.34.0, fixed 1.38.0-alpha.1 only
    "kubernetes#140904": ("kubelet", "FFFTTTT"),
}


@pytest.mark.parametrize(
    "bug", [bug for bug in bugtable.KNOWN_BUGS if bug.issue in MATRIX_TABLE], ids=lambda bug: bug.issue
)
def test_every_known_bug_on_every_matrix_release(bug):
    from device_conformance.expectations.versions import MATRIX_VERSIONS

    component, cells = MATRIX_TABLE[bug.issue]
    seen = "".join("T" if bug.affects(release) else "F" for release in MATRIX_VERSIONS)
    assert (bug.component, seen) == (component, cells), [str(release) for release in MATRIX_VERSIONS]


def test_the_matrix_table_names_only_known_bugs():
    assert set(MATRIX_TABLE) <= {bug.issue for bug in bugtable.KNOWN_BUGS}


# The same on the older releases the device-plugin and smoke suites run on (versions.OLDER_VERSIONS: 1.28.15,
# 1.29.15, 1.30.14), for the kubelet bugs that can reach them; every other bug came with a feature of a later
# minor (DRA from 1.32 here, device taints 1.33, KEP-4680 device health 1.31, ...) and is F F F.
OLDER_AFFECTED = {
    "kubernetes#127803": "TTT",  # per-resource-name endpoints since 1.10, fixed 1.37.0
    "kubernetes#126341": "FFF",  # cherry-picked to 1.28.14, 1.29.9 and 1.30.5: each older release has the fix
    "kubernetes#133702": "TTT",  # the two GetCapacity loops since 1.20 ("are out of sync" in v1.28.15), fixed 1.35.0
    "kubernetes#126943": "TTT",  # unfixed
    "kubernetes#116125": "TTT",  # unfixed
    "kubernetes#119423": "TTT",  # List of ended pods, to 1.34.0, no cherry-pick
    "kubernetes#126707": "TTT",  # from 1.28.0 (#118635), no cherry-pick below 1.34
    "kubernetes#135485": "TTT",  # Get of an ended pod from 1.27.0 (gate off before 1.34: the test skips)
    "kubernetes#138446": "TTT",  # from 1.28.0 (#116376 and #118635), unfixed
    "kubernetes#137534": "TTT",  # the same lines in module source v1.28.15, fixed 1.38.0-alpha.1 only
}


@pytest.mark.parametrize("bug", bugtable.KNOWN_BUGS, ids=lambda bug: bug.issue)
def test_every_known_bug_on_every_older_release(bug):
    from device_conformance.expectations.versions import OLDER_VERSIONS

    seen = "".join("T" if bug.affects(release) else "F" for release in OLDER_VERSIONS)
    assert seen == OLDER_AFFECTED.get(bug.issue, "FFF"), [str(release) for release in OLDER_VERSIONS]


def test_the_older_table_names_only_known_bugs():
    assert set(OLDER_AFFECTED) <= {bug.issue for bug in bugtable.KNOWN_BUGS}
