"""Upstream subjects built from the Go module of the Kubernetes version under test: the sample device plugin
(test/images/sample-device-plugin) and the DRA test driver's kubelet plugin (test/e2e/dra/test-driver). Each test
skips unless its binary is in the cache: `device-conformance certify sample-device-plugin` / `dra-test-driver`
build them (Go, the module cache); the sample device plugin also needs root for its private mount namespace."""

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from device_conformance.certify import upstream
from device_conformance.certify.device_plugin import DevicePluginTarget, certify_device_plugin
from device_conformance.certify.dra_driver import DraDriverTarget, certify_dra_driver
from device_conformance.certify.verdicts import NOT_APPLICABLE, PASS
from device_conformance.expectations.versions import DEFAULT_K8S_VERSION


def test_the_sample_runs_in_a_private_mount_namespace():
    command = upstream.sample_device_plugin_command(Path("/c/sample plugin"), Path("/tmp/k"))
    assert command == (
        "unshare --mount --propagation private sh -c "
        "'mount -t tmpfs certify /var/lib && mkdir /var/lib/kubelet && mount --bind /tmp/k /var/lib/kubelet && "
        "exec '\"'\"'/c/sample plugin'\"'\"''"
    )


def test_upstream_sample_device_plugin_certifies(tmp_path):
    binary = upstream.subjects_dir(DEFAULT_K8S_VERSION) / "sample-device-plugin"
    if not binary.exists():
        pytest.skip(f"{binary} not built: device-conformance certify sample-device-plugin builds it")
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root and unshare (util-linux) for the sample's private mount namespace")
    root = Path(tempfile.mkdtemp(prefix="sdp-", dir="/tmp"))
    try:
        (root / "device-plugins").mkdir()
        cert = certify_device_plugin(
            DevicePluginTarget(
                socket_dir=str(root / "device-plugins"),
                resource=upstream.SAMPLE_RESOURCE,
                command=upstream.sample_device_plugin_command(binary, root),
                workdir=tmp_path,
            )
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    verdicts = {r.clause.id: r.verdict for r in cert.results}
    # The sample advertises no topology and neither option, so those clauses cannot be checked; all else holds.
    not_applicable = {"DP-LAW-TOPOLOGY", "DP-PREFERRED", "DP-PRESTART"}
    assert verdicts == {c: NOT_APPLICABLE if c in not_applicable else PASS for c in verdicts}, [
        (r.clause.id, r.message) for r in cert.results if r.verdict != PASS
    ]
    unknown = next(r for r in cert.results if r.clause.id == "DP-ALLOC-UNKNOWN")
    assert any("invalid allocation request with non-existing device" in line for line in unknown.evidence)


def test_upstream_dra_test_driver_registers_and_serves(tmp_path):
    binary = upstream.subjects_dir(DEFAULT_K8S_VERSION) / "test-driver"
    if not binary.exists():
        pytest.skip(f"{binary} not built: device-conformance certify dra-test-driver builds it")
    root = Path(tempfile.mkdtemp(prefix="drt-", dir="/tmp"))
    try:
        cert = certify_dra_driver(
            DraDriverTarget(
                registry_dir=str(root / "registry"),
                driver=upstream.DRA_TEST_DRIVER_NAME,
                command=upstream.dra_test_driver_command(binary, root),
                cdi_dir=str(root / "cdi"),
                workdir=tmp_path,
            )
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    # Without an API server it cannot prepare claims (it reads them from there): those clauses stay unchecked.
    passed = {r.clause.id for r in cert.results if r.verdict == PASS}
    assert passed == {
        "DRA-REG-SOCKET",
        "DRA-REG-INFO",
        "DRA-REG-NOTIFY",
        "DRA-SERVICE",
        "DRA-HEALTH",
        "DRA-UNPREPARE-UNKNOWN",
    }
    assert cert.failed_ids() == []
    assert cert.api_versions[-1] == "dra/v1 (v1.DRAPlugin)"
    # Its kubeletplugin helper serves both health versions, and its WatchHealthStatus sends a first report at once
    # (test/e2e/dra/test-driver/app/kubeletplugin.go, v1.37.2), of no device until a test sets one's health.
    health = next(r for r in cert.results if r.clause.id == "DRA-HEALTH")
    assert health.message == "v1: reports 0 device(s) []; v1alpha1: reports 0 device(s) []"
