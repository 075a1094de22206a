"""A Kubernetes source tree (K8S_SOURCE): is it one, and which release is it.

A tree is what a git checkout of kubernetes/kubernetes holds: go.mod of k8s.io/kubernetes at the root
and every staging module it replaces under staging/src/k8s.io/<name>. Its version comes, in this order,
from a version file in the format of hack/lib/version.sh's KUBE_GIT_VERSION_FILE (written by
`device-conformance k8s-source get`, whose trees have no .git), else from `git describe` as
hack/lib/version.sh runs it (a real checkout). Neither: K8S_VERSION must say it.

A tree is judged as "release + patch" unless it is exactly a release: a clean checkout at the release's tag,
or a version file hack/lib/version.sh wrote for one (KUBE_GIT_TREE_STATE='clean', the bare tag). A checkout
past its tag (git describe v1.37.1-3-g<commit>), with uncommitted changes (git status, as hack/lib/version.sh
asks it), a version file that says so (v1.37.1-3+<commit>, 'dirty'), and a tree from `k8s-source get`
('archive': no git history tells an edit apart) count as the release they name plus a patch: a known bug of
that release may be fixed by the patch, so its expected failure is not strict there (TreeVersion.patch,
expectations.behaviour.ClusterVersions.patch).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from device_conformance.core.errors import BadInput
from device_conformance.expectations.versions import KubeVersion
from device_conformance.toolchain.gobuild import UNBUILT_STAGING, staging_modules, toolchain_for

# hack/lib/version.sh sources this format (kube::version::save_version_vars); the name is ours.
VERSION_FILE = ".kube-version-defs"
_VERSION_LINE = re.compile(r"^KUBE_GIT_VERSION='([^']*)'$", re.M)
_STATE_LINE = re.compile(r"^KUBE_GIT_TREE_STATE='([^']*)'$", re.M)


@dataclass(frozen=True)
class TreeVersion:
    """The release a tree is, and how we know (for messages and the report header)."""

    version: KubeVersion
    how: str
    # Why the tree counts as `version` plus a patch ("" when it is exactly that release): see the module doc.
    patch: str = ""


def check_tree(tree: Path) -> None:
    """Raise BadInput unless `tree` is a buildable Kubernetes source tree (staging modules in place)."""
    gomod = tree / "go.mod"
    try:
        text = gomod.read_text()
    except OSError:
        raise BadInput(
            f"K8S_SOURCE={tree} is not a Kubernetes source tree: no {gomod}",
            "point it at a checkout of kubernetes/kubernetes, or make one with "
            "`device-conformance k8s-source get VERSION DIR`",
        ) from None
    if not re.search(r"^module k8s\.io/kubernetes\s*$", text, re.M):
        raise BadInput(
            f"K8S_SOURCE={tree}: {gomod} is not the k8s.io/kubernetes module",
            "point it at the root of a kubernetes/kubernetes checkout",
        )
    missing = [name for name in tree_staging_modules(tree) if not (tree / "staging/src" / name / "go.mod").is_file()]
    if missing:
        raise BadInput(
            f"K8S_SOURCE={tree} lacks {len(missing)} staging modules its go.mod replaces "
            f"(e.g. staging/src/{missing[0]}): a module zip of k8s.io/kubernetes has none",
            "use a full checkout, or assemble one with `device-conformance k8s-source get VERSION DIR`",
        )


def tree_staging_modules(tree: Path) -> list[str]:
    """The staging modules a tree needs under staging/src: those its go.mod replaces and its go.work
    uses (the same 33 in 1.37; go.work, since 1.30, fails the build when one it uses is missing), less
    UNBUILT_STAGING, which no server binary imports: `k8s-source get` leaves them out of the tree and
    its go.work (without_unbuilt_staging)."""
    names = set(staging_modules((tree / "go.mod").read_text()))
    work = tree / "go.work"
    if work.is_file():
        names.update(re.findall(r"^\s*\./staging/src/(k8s\.io/[^\s/]+)\s*$", work.read_text(), re.M))
    return sorted(names - set(UNBUILT_STAGING))


def without_unbuilt_staging(go_work: str) -> str:
    """go.work text without the `use` lines of UNBUILT_STAGING (for a tree that does not hold them)."""
    unbuilt = "|".join(re.escape(name) for name in UNBUILT_STAGING)
    return re.sub(rf"^\s*\./staging/src/(?:{unbuilt})\s*\n", "", go_work, flags=re.M)


def tree_toolchain(tree: Path, local: str) -> str | None:
    """The GOTOOLCHAIN a tree builds with when its go.mod needs a newer Go than `local` (see
    gobuild.toolchain_for: the tree's .go-version, as hack/lib/golang.sh uses it); None otherwise."""
    match = re.search(r"^go (\S+)\s*$", (tree / "go.mod").read_text(), re.M)
    if match is None:
        return None
    pinned = tree / ".go-version"
    return toolchain_for(match.group(1), local, pinned.read_text() if pinned.is_file() else None)


def tree_version(tree: Path) -> TreeVersion | None:
    """The release `tree` is, from its version file or `git describe`; None when neither says."""
    defs = tree / VERSION_FILE
    if defs.is_file():
        text = defs.read_text()
        match = _VERSION_LINE.search(text)
        if match:
            state = _STATE_LINE.search(text)
            return _release(match.group(1), f"{defs} says {match.group(1)}", state.group(1) if state else "")
    described = _git_describe(tree)
    if described is not None:
        return _release(described, f"git describe in {tree} says {described}", _git_tree_state(tree))
    return None


def _release(text: str, how: str, state: str) -> TreeVersion:
    """The release `text` names; `state` is KUBE_GIT_TREE_STATE's value ("clean", "dirty", "archive", "")."""
    try:
        version = KubeVersion.from_reported(text)
    except BadInput:
        raise BadInput(
            f"K8S_SOURCE: {how}, which is not a Kubernetes version", "set K8S_VERSION=MAJOR.MINOR.PATCH"
        ) from None
    return TreeVersion(version, how, patch_of(version, text, state))


def patch_of(version: KubeVersion, text: str, state: str) -> str:
    """Why a tree whose version says `text` (in tree state `state`) is `version` plus a patch; "" when it is
    exactly that release (the bare tag, in a clean tree)."""
    if text.strip().removeprefix("v") != str(version):
        return f"{text.strip()} is past the tag {version.tag}"
    if state == "clean":
        return ""
    if state == "dirty":
        return f"{version.tag} with uncommitted changes"
    if state == "archive":
        return f"{version.tag} from a module zip, with no git history to tell an edit apart"
    return f"{version.tag} in tree state {state or 'unknown'}"


def write_version_file(tree: Path, version: KubeVersion) -> None:
    """Record the release a tree was assembled from (the format KUBE_GIT_VERSION_FILE expects)."""
    (tree / VERSION_FILE).write_text(
        f"KUBE_GIT_COMMIT=''\nKUBE_GIT_TREE_STATE='archive'\nKUBE_GIT_VERSION='{version.tag}'\n"
        f"KUBE_GIT_MAJOR='{version.major}'\nKUBE_GIT_MINOR='{version.minor}'\n"
    )


def _git_describe(tree: Path) -> str | None:
    # The same query hack/lib/version.sh makes; a tree that is not a git checkout answers nothing.
    git = shutil.which("git")
    if git is None or not (tree / ".git").exists():
        return None
    proc = subprocess.run(
        [git, "-C", str(tree), "describe", "--tags", "--match=v*", "--abbrev=14", "HEAD^{commit}"],
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.stdout.strip() or None if proc.returncode == 0 else None


def _git_tree_state(tree: Path) -> str:
    # hack/lib/version.sh: clean when `git status --porcelain` prints nothing, dirty otherwise (untracked files too).
    proc = subprocess.run(
        [shutil.which("git") or "git", "-C", str(tree), "status", "--porcelain"],
        capture_output=True,
        text=True,
        check=False,
    )
    return "clean" if proc.returncode == 0 and not proc.stdout.strip() else "dirty"
