import zipfile

import pytest

from device_conformance.core.errors import BadInput
from device_conformance.expectations.versions import KubeVersion
from device_conformance.toolchain import go_tmpdir, gobuild

KUBERNETES_GOMOD = """module k8s.io/kubernetes

go 1.26.0

godebug default=go1.26

require (
	k8s.io/api v0.0.0
)

replace (
	k8s.io/api => ./staging/src/k8s.io/api
	k8s.io/kubelet => ./staging/src/k8s.io/kubelet
	k8s.io/streaming => ./staging/src/k8s.io/streaming
)
"""


def test_wrapper_replaces_every_staging_module_with_its_published_tag():
    text = gobuild.wrapper_gomod(KubeVersion(1, 37, 1), KUBERNETES_GOMOD)
    assert "require k8s.io/kubernetes v1.37.1" in text
    assert "\tk8s.io/api => k8s.io/api v0.37.1" in text
    assert "\tk8s.io/kubelet => k8s.io/kubelet v0.37.1" in text
    assert "\tk8s.io/streaming => k8s.io/streaming v0.37.1" in text
    assert "go 1.26.0" in text and "godebug default=go1.26" in text
    assert "./staging" not in text


def test_modules_no_server_binary_imports_are_empty_local_stand_ins(tmp_path):
    gomod = KUBERNETES_GOMOD.replace(
        "\tk8s.io/api => ./staging/src/k8s.io/api",
        "\tk8s.io/api => ./staging/src/k8s.io/api\n\tk8s.io/ktesting => ./staging/src/k8s.io/ktesting"
        "\n\tk8s.io/sample-apiserver => ./staging/src/k8s.io/sample-apiserver",
    )
    text = gobuild.wrapper_gomod(KubeVersion(1, 38, 0, "beta.0"), gomod)
    assert "\tk8s.io/ktesting => ./unimported/k8s.io/ktesting" in text
    assert "\tk8s.io/sample-apiserver => ./unimported/k8s.io/sample-apiserver" in text
    assert "\tk8s.io/api => k8s.io/api v0.38.0-beta.0" in text
    assert gobuild.write_unimported_stubs(tmp_path, text) == ["k8s.io/ktesting", "k8s.io/sample-apiserver"]
    stub = (tmp_path / "unimported/k8s.io/ktesting/go.mod").read_text()
    assert stub.splitlines()[-1] == "module k8s.io/ktesting"
    assert gobuild.build_requirements(KubeVersion(1, 38, 0, "beta.0"), gomod) == [
        "k8s.io/api@v0.38.0-beta.0",
        "k8s.io/kubelet@v0.38.0-beta.0",
        "k8s.io/streaming@v0.38.0-beta.0",
    ]


def test_wrapper_refuses_a_gomod_without_staging_modules():
    with pytest.raises(BadInput):
        gobuild.wrapper_gomod(KubeVersion(1, 37, 1), "module k8s.io/kubernetes\n\ngo 1.26.0\n")


def test_ldflags_stamp_the_version_into_both_version_packages():
    flags = gobuild.version_ldflags(KubeVersion(1, 36, 5))
    assert "-X k8s.io/component-base/version.gitVersion=v1.36.5" in flags
    assert "-X k8s.io/client-go/pkg/version.gitMinor=36" in flags


def test_missing_go_toolchain_names_both_fixes(monkeypatch):
    monkeypatch.setattr(go_tmpdir.shutil, "which", lambda _: None)
    with pytest.raises(BadInput) as excinfo:
        gobuild.module_gomod(KubeVersion(1, 37, 1))
    assert "K8S_BIN_DIR" in excinfo.value.fix and "Go" in excinfo.value.fix


def test_wrapper_leaves_out_staging_modules_no_server_binary_imports():
    gomod = KUBERNETES_GOMOD.replace(
        "\tk8s.io/streaming => ./staging/src/k8s.io/streaming\n",
        "\tk8s.io/sample-cli-plugin => ./staging/src/k8s.io/sample-cli-plugin\n"
        "\tk8s.io/sample-controller => ./staging/src/k8s.io/sample-controller\n"
        "\tk8s.io/streaming => ./staging/src/k8s.io/streaming\n",
    )
    assert gobuild.staging_modules(gomod) == ["k8s.io/api", "k8s.io/kubelet", "k8s.io/streaming"]
    text = gobuild.wrapper_gomod(KubeVersion(1, 38, 0, "beta.0"), gomod)
    assert "sample" not in text
    assert "require k8s.io/kubernetes v1.38.0-beta.0" in text
    assert "\tk8s.io/api => k8s.io/api v0.38.0-beta.0" in text


@pytest.mark.parametrize(
    ("required", "local", "pinned", "expected"),
    [
        ("1.26.0", "go1.26.8", "1.26.8", None),  # the local go is new enough: no toolchain switch
        ("1.27.0", "go1.27.4", "1.27.3", None),
        ("1.27.0", "go1.26.8", "1.27.3", "go1.27.3"),  # upstream's .go-version (hack/lib/golang.sh)
        ("1.27.0", "go1.26.8", None, "go1.27.0"),  # no .go-version: the go line
        ("1.27.0", "go1.26.8", "1.26.8", "go1.27.0"),  # a .go-version below the go line is not used
    ],
)
def test_a_newer_toolchain_only_when_the_go_line_needs_one(required, local, pinned, expected):
    assert gobuild.toolchain_for(required, local, pinned) == expected


def test_go_versions_compare_as_numbers():
    keys = [gobuild.go_version_key(text) for text in ("go1.9", "1.26", "go1.26.8", "1.27.0", "go1.27.3", "go1.27rc1")]
    assert keys == [(1, 9, 0), (1, 26, 0), (1, 26, 8), (1, 27, 0), (1, 27, 3), (1, 27, 0)]


def test_a_module_needing_a_newer_go_is_downloaded_again_with_upstreams_toolchain(tmp_path, monkeypatch):
    tag = "v1.38.0-beta.0"
    zip_path = tmp_path / f"{tag}.zip"
    with zipfile.ZipFile(zip_path, "w") as archive:
        archive.writestr(f"k8s.io/kubernetes@{tag}/.go-version", "1.27.3\n")
    too_new = f"k8s.io/kubernetes@{tag} requires go >= 1.27.0 (running go 1.26.8; GOTOOLCHAIN=local)"
    calls = []

    def download(specs, go, toolchain=None):
        calls.append((list(specs), toolchain))
        record = {"Path": "k8s.io/kubernetes", "Version": tag, "Zip": str(zip_path)}
        return ([{**record, "Error": too_new}], too_new) if toolchain is None else ([record], None)

    monkeypatch.setattr(gobuild, "go_binary", lambda *a, **k: "/usr/bin/go")
    monkeypatch.setattr(gobuild, "go_mod_download", download)
    monkeypatch.setattr(gobuild, "local_go_version", lambda go: "go1.26.8")
    monkeypatch.setattr(gobuild, "_TOOLCHAINS", {})
    version = KubeVersion(1, 38, 0, "beta.0")
    gobuild.download_modules([f"k8s.io/kubernetes@{tag}"], version)
    gobuild.download_modules(["k8s.io/api@v0.38.0-beta.0"], version)  # the staging modules: the same toolchain
    assert calls == [
        ([f"k8s.io/kubernetes@{tag}"], None),
        ([f"k8s.io/kubernetes@{tag}"], "go1.27.3"),
        (["k8s.io/api@v0.38.0-beta.0"], "go1.27.3"),
    ]
    assert gobuild.chosen_toolchain(version) == "go1.27.3"
    assert gobuild.chosen_toolchain(KubeVersion(1, 37, 1)) is None


def test_the_build_progress_says_which_toolchain_and_why():
    text = gobuild.toolchain_message(
        "k8s.io/kubernetes@v1.38.0-beta.0", "module k8s.io/kubernetes\n\ngo 1.27.0\n", "go1.26.8", "go1.27.3"
    )
    assert text == (
        "k8s.io/kubernetes@v1.38.0-beta.0 requires go >= 1.27.0 (its go.mod) and the local go is go1.26.8: "
        "building with go1.27.3 (GOTOOLCHAIN=go1.27.3; the go command fetches it once from the Go module proxy, "
        "golang.org/toolchain@v0.0.1-go1.27.3.<os>-<arch>)"
    )


def test_a_build_in_a_module_needing_a_newer_go_reuses_the_chosen_toolchain(tmp_path, monkeypatch):
    monkeypatch.setattr(gobuild, "local_go_version", lambda go: "go1.26.8")
    monkeypatch.setattr(gobuild, "_TOOLCHAINS", {})
    (tmp_path / "go.mod").write_text("module local/subject\n\ngo 1.27.0\n")
    assert gobuild.module_toolchain("go", tmp_path) == "go1.27.0"
    monkeypatch.setattr(gobuild, "_TOOLCHAINS", {"v1.38.0-beta.0": "go1.27.3"})
    assert gobuild.module_toolchain("go", tmp_path) == "go1.27.3"  # certify's wrapper of the same version
    (tmp_path / "go.mod").write_text("module local/subject\n\ngo 1.26.0\n")
    assert gobuild.module_toolchain("go", tmp_path) is None
    assert gobuild.module_toolchain("go", tmp_path / "none") is None


def test_a_build_the_proxy_refuses_modules_for_names_them(tmp_path):
    # what `go build` of v1.38.0-beta.0 printed here (2026-11-28), shortened
    lines = [
        "/m/k8s.io/apimachinery@v0.38.0-beta.0/pkg/runtime/converter.go:32:2: sigs.k8s.io/structured-merge-diff/"
        "v7@v7.0.1: reading https://proxy.golang.org/sigs.k8s.io/structured-merge-diff/v7/@v/v7.0.1.zip: 403 Forbidden",
        "\tserver response: This module version is not available.",
        "/m/k8s.io/kubernetes@v1.38.0-beta.0/pkg/kubelet/kubelet_network_linux.go:26:2: sigs.k8s.io/iptables-wrappers"
        "@v1.0.0: reading https://proxy.golang.org/sigs.k8s.io/iptables-wrappers/@v/v1.0.0.zip: 403 Forbidden",
    ]
    go = tmp_path / "go"
    go.write_text("#!/bin/sh\ncat <<'EOF'\n" + "\n".join(lines) + "\nEOF\nexit 1\n")
    go.chmod(0o755)
    with pytest.raises(BadInput) as excinfo:
        gobuild.run_go(
            [str(go), "build"], tmp_path, "Kubernetes v1.38.0-beta.0", lambda _: None, env={"GOTOOLCHAIN": "x"}
        )
    assert excinfo.value.problem == (
        "go build of Kubernetes v1.38.0-beta.0 failed: the Go module proxy refuses modules it needs (403 This module "
        "version is not available): sigs.k8s.io/iptables-wrappers@v1.0.0, sigs.k8s.io/structured-merge-diff/v7@v7.0.1"
    )
    assert excinfo.value.fix.startswith("this version cannot be built from the Go module proxy here: set K8S_BIN_DIR")
