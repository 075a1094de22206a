import pytest

from device_conformance.errors import BadInput
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
