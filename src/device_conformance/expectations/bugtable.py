"""Every known bug and versioned behaviour in one place, and the table docs/known-bugs.md made from them.

Regenerate the document after changing the data with `make docs` (`make test` fails while it is stale).
"""

from __future__ import annotations

import re

from device_conformance.expectations import deviceplugin, dra
from device_conformance.expectations.behaviour import Behaviour, Fix, KnownBug
from device_conformance.expectations.versions import KubeVersion

KNOWN_BUGS: tuple[KnownBug, ...] = (
    deviceplugin.PLUGIN_ROLLOUT_ZEROES_ALLOCATABLE,
    deviceplugin.SUCCEEDED_POD_READMITTED,
    deviceplugin.EXPIRED_ENDPOINT_OUT_OF_SYNC_LOG,
    deviceplugin.EXTENDED_RESOURCES_NOT_RESET,
    deviceplugin.POD_RUNS_WITHOUT_DEVICES_AFTER_STATE_LOSS,
    deviceplugin.REFUSED_REREGISTRATION_DROPS_LIVE_CLIENT,
    deviceplugin.DEVICE_HEALTH_PUSHED_TO_WRONG_POD,
    deviceplugin.PODRESOURCES_LISTS_TERMINATED_PODS,
    deviceplugin.RESTARTED_CONTAINER_READMITTED_ON_KUBELET_RESTART,
    deviceplugin.PODRESOURCES_GET_ANSWERS_FOR_ENDED_POD,
    deviceplugin.RESIZE_RUNS_DEVICE_ALLOCATION,
    deviceplugin.COMPLETED_INIT_CONTAINER_READMITTED_ON_KUBELET_RESTART,
    deviceplugin.DEVICE_REMOVED_DURING_ALLOCATE_PANICS,
    deviceplugin.INFLIGHT_ALLOCATION_DROPPED_ON_REBUILD,
    dra.NOEXECUTE_TOLERATION_IGNORED,
    dra.EVICTION_EVENT_FOR_FIRST_POD_ONLY,
    dra.SHARED_CLAIM_STALE_CONSUMER_EVICTION,
    dra.PREPARE_JOINS_UNPREPARING_CLAIM,
    dra.FORCE_DELETED_CLAIM_NAME_REUSED,
    dra.DRA_EXTENDED_RESOURCE_POD_NOT_EVICTED,
    dra.DRA_EXTENDED_RESOURCE_TAKEN_FOR_DEVICE_PLUGIN_RESOURCE,
    dra.NULL_HEALTH_CHECKPOINT_PANICS,
    dra.PARTIAL_PREPARE_DUPLICATES_DEVICES,
    dra.ALREADY_PREPARED_CLAIM_SKIPS_THE_REST,
    dra.NIL_SELECTOR_RULE_TAINTS_EVERY_DEVICE,
    dra.UNREFERENCED_POD_UNPREPARES_SHARED_CLAIM,
    dra.HEALTH_STREAM_TO_DRIVER_WITHOUT_HEALTH_SERVICE,
    dra.HEALTH_CLEARED_BY_OLDER_INSTANCE,
    dra.CLASS_CONFIG_NAMES_NO_REQUESTS,
    dra.MISSING_DRIVER_BLOCKS_POD_DELETION,
    dra.PODRESOURCES_REPEATS_EARLIER_CDI_IDS,
)

BEHAVIOURS: tuple[Behaviour, ...] = (
    deviceplugin.V1_CHECKPOINT_ON_RESTART,
    deviceplugin.CORRUPT_CHECKPOINT_ON_RESTART,
    deviceplugin.REGISTER_ON_A_CONNECTED_SOCKET,
    deviceplugin.PODRESOURCES_SIDECAR_ENTRY,
    dra.HEALTH_API_PREFERENCE,
)

# `device-conformance reproduce` runs on this project's machines (local provider): the bug's tests xfailed in
# their known-bug block on the affected release and passed on the fixed one (for a regression with no fix, on
# the newest release before it). issue -> (affected, fixed or before, date).
REPRODUCED: dict[str, tuple[str, str, str]] = {
    "kubernetes#127803": ("1.36.4", "1.37.1", "2026-11-23"),
    "kubernetes#134434": ("1.34.10", "1.35.8", "2026-11-23"),
    "kubernetes#135686": ("1.35.8", "1.36.4", "2026-11-23"),
    # The 1.36.4 kubelet under the 1.37.1 control plane (reproduce swaps only the kubelet of a kubelet bug).
    "kubernetes#140527": ("1.36.4", "1.37.1", "2026-11-23"),
    # The 1.33.13 kubelet under the 1.34.10 control plane.
    "kubernetes#131513": ("1.33.13", "1.34.10", "2026-11-23"),
    # The 1.34.10 kubelet under the 1.37.1 control plane (1.34.10 is the newest 1.34 buildable here; 1.34.12 has
    # the cherry-pick).
    "kubernetes#140274": ("1.34.10", "1.37.1", "2026-11-23"),
    # The 1.36.4 kubelet under the 1.37.1 control plane.
    "kubernetes#140268": ("1.36.4", "1.37.1", "2026-11-23"),
    # The 1.31.0 kubelet (the one affected 1.31 release: the fix reached 1.31.1) under the 1.34.10 control plane.
    "kubernetes#126341": ("1.31.0", "1.34.10", "2026-11-23"),
    # The 1.34.10 kubelet under the 1.37.1 control plane (1.35.8, the first fixed matrix release, is not built here).
    "kubernetes#133702": ("1.34.10", "1.37.1", "2026-11-23"),
    # The 1.34.3 kubelet (built for this; no matrix release is affected) under the 1.34.10 control plane.
    "kubernetes#135901": ("1.34.3", "1.34.10", "2026-11-23"),
    # Whole clusters (a scheduler bug): 1.37.0 built for it.
    "kubernetes#141620": ("1.37.0", "1.37.1", "2026-11-23"),
    # The 1.33.13 kubelet under the 1.34.10 control plane.
    "kubernetes#119423": ("1.33.13", "1.34.10", "2026-11-23"),
    # The 1.34.3 kubelet under the 1.34.10 control plane (the fix reached 1.34 in 1.34.7).
    "kubernetes#135485": ("1.34.3", "1.34.10", "2026-11-23"),
    "kubernetes#126707": ("1.34.3", "1.34.10", "2026-11-23"),
    # The 1.36.4 kubelet under the 1.37.1 control plane.
    "kubernetes#140224": ("1.36.4", "1.37.1", "2026-11-23"),
    # The 1.36.4 kubelet under the 1.37.1 control plane.
    "kubernetes#140212": ("1.36.4", "1.37.1", "2026-11-23"),
    # The 1.36.4 kubelet under the 1.37.1 control plane.
    "kubernetes#141855": ("1.36.4", "1.37.1", "2026-11-23"),
    # Whole clusters (a scheduler bug): 1.34.1 built for it (1.32.5, the affected matrix release, is not built here).
    "kubernetes#134789": ("1.34.1", "1.34.10", "2026-11-23"),
    # The 1.33.13 kubelet under the 1.34.10 control plane.
    "kubernetes#131968": ("1.33.13", "1.34.10", "2026-11-23"),
    # A regression with no fix: 1.37.1 whole, compared with the 1.36.4 kubelet under the 1.37.1 control plane (the
    # newest matrix release before 1.37.0; the test passed there).
    "kubernetes#135437": ("1.37.1", "1.36.4", "2026-11-23"),
    # Whole clusters (the eviction controller's bug); the fixed run on 1.37.1, whose binaries were cached.
    "kubernetes#134152": ("1.34.10", "1.37.1", "2026-11-23"),
    # No fix released, and no release before the bug runs its test here (NO_COMPARISON): the affected run alone.
    "kubernetes#126943": ("1.37.1", "", "2026-11-24"),
    "kubernetes#116125": ("1.37.1", "", "2026-11-24"),
    # 1.33.13, the newest matrix release before 1.34.0, skips the test: it needs DRAExtendedResource, on from 1.36.
    # Run before its fix was known (1.37.2, CHANGELOG-1.37): the fixed release is not run yet (FIX_NOT_RUN).
    "kubernetes#141290": ("1.37.1", "", "2026-11-24"),
    # No fix released, and the bug predates every matrix release: the affected run alone, on 1.37.1 (whole) and on
    # the 1.34.12 kubelet under the 1.37.1 control plane, the same day (both reproduced).
    "kubernetes#138446": ("1.37.1", "", "2026-11-28"),
}

NO_COMPARISON = "none: no fix released, and no release before the bug runs its test here"
FIX_NOT_RUN = "not yet run: the fix ({fix}) was recorded after this run"

# The minors the suites are run against and the table shows.
MATRIX_MINORS = tuple(range(28, 38))

_REFERENCE_RE = re.compile(r"\bkubernetes#(\d+)")


_FINDING_RE = re.compile(r"\bfinding:([a-z0-9-]+)")


def _linked(text: str) -> str:
    """Upstream references as links; an unreported finding links its report (docs/findings/, beside this doc)."""
    text = _FINDING_RE.sub(r"[finding:\1](findings/\1.md)", text)
    return _REFERENCE_RE.sub(r"[kubernetes#\1](https://github.com/kubernetes/kubernetes/issues/\1)", text)


def _releases(fixes: tuple[Fix, ...]) -> str:
    return "<br>".join(f"{fix.release}: {_linked(fix.pr)}" for fix in fixes) or "no fix released"


def affected_releases(bug: KnownBug, minor: int) -> str:
    """Which releases of 1.<minor> the bug affects: 'all', 'none', '< 1.<minor>.<patch>' (fixed by a
    cherry-pick) or '>= 1.<minor>.<patch>' (introduced in a patch release)."""
    if (1, minor) < (bug.first_affected.major, bug.first_affected.minor):
        return "none"
    start = max(KubeVersion(1, minor, 0), bug.first_affected)
    fix = bug.fix_for(start)
    if fix is not None and fix.release <= start:
        return "none"
    since = f">= {start}" if start.patch else ""
    until = f"< {fix.release}" if fix else ""
    return ", ".join(part for part in (since, until) if part) or "all"


def render() -> str:
    header = [f"1.{minor}" for minor in MATRIX_MINORS]
    lines = [
        "# Known upstream bugs and versioned behaviour",
        "",
        "Generated from `src/device_conformance/expectations/` by `make docs`; edit the data there, not this file.",
        "Where each release number was read is in the comment above each entry.",
        "",
        "A release is affected from the first affected release until the fix reached its own branch:",
        "from the cherry-pick's patch release on a branch that got one, from the mainline fix on later minors,",
        "never on an older branch that got none.",
        "",
        "## Bugs",
        "",
        "| Issue | Bug | First affected | Fixed in (per branch) | Shown by |",
        "| --- | --- | --- | --- | --- |",
    ]
    for bug in KNOWN_BUGS:
        lines.append(
            f"| {_linked(bug.issue)} | {bug.title} | {bug.first_affected} | {_releases(bug.fixes)} | {bug.shown_by} |"
        )
    lines += [
        "",
        "## Affected releases per minor",
        "",
        "| Issue | " + " | ".join(header) + " |",
        "| --- | " + " | ".join("---" for _ in header) + " |",
    ]
    for bug in KNOWN_BUGS:
        cells = [affected_releases(bug, minor) for minor in MATRIX_MINORS]
        lines.append(f"| {bug.issue} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Reproduced here",
        "",
        "`device-conformance reproduce ISSUE` on the local provider: the bug's check failed in its known-bug",
        "block on the affected release, and the same test passed on the fixed one (for a regression with no",
        "fix released, on the newest matrix release before it: the comparison says so; for an unfixed bug that",
        "no earlier release can run, the affected run alone).",
        "",
        "| Issue | Affected release run | Fixed release run | Date |",
        "| --- | --- | --- | --- |",
    ]
    for bug in KNOWN_BUGS:
        affected, fixed, date = REPRODUCED.get(bug.issue, ("not yet run", "not yet run", ""))
        if date and not fixed:
            fixed = FIX_NOT_RUN.format(fix=bug.fix) if bug.fixes else NO_COMPARISON
        elif date and KubeVersion.parse(fixed) < bug.first_affected:
            fixed += " (the newest release before the regression)"
        lines.append(f"| {bug.issue} | {affected} | {fixed} | {date} |")
    lines += [
        "",
        "## Findings to report upstream",
        "",
        "Bugs this suite found that have no upstream issue: each page is a report ready to file (reproducer, code",
        "at fault, affected releases, suggested fix). An unreported one is `finding:<slug>` in the data until the",
        "issue is filed; the others name the pull request that brought the bug.",
        "",
        "| Bug | Report |",
        "| --- | --- |",
    ]
    for bug in KNOWN_BUGS:
        if bug.finding:
            lines.append(f"| {_linked(bug.issue)}: {bug.title} | [{bug.finding_page}](findings/{bug.finding}.md) |")
    lines += ["", "## Behaviour", ""]
    for behaviour in BEHAVIOURS:
        lines += [f"### {behaviour.name}", "", "| Outcome | From (per branch) |", "| --- | --- |"]
        for entry in behaviour.entries:
            lines.append(f"| {entry.outcome} | {_releases(entry.releases)} |")
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


if __name__ == "__main__":
    print(render(), end="")
