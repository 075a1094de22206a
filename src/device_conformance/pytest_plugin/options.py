"""Command-line options; each also reads an environment variable so `make e2e VAR=...` works."""

from __future__ import annotations

import os

import pytest

from device_conformance.expectations.versions import DEFAULT_K8S_VERSION, PREVIOUS_MINOR_VERSION


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("device-conformance", "kubelet device-management conformance")
    group.addoption(
        "--provider",
        default=os.environ.get("PROVIDER", "auto"),
        help="where the cluster comes from: local, kind, existing, or auto (env PROVIDER; default auto)",
    )
    group.addoption(
        "--k8s-version",
        default=os.environ.get("K8S_VERSION") or DEFAULT_K8S_VERSION,
        help=f"Kubernetes version under test (env K8S_VERSION; default {DEFAULT_K8S_VERSION})",
    )
    group.addoption(
        "--kubeconfig",
        default=os.environ.get("DEVICE_CONFORMANCE_KUBECONFIG"),
        help="kubeconfig of an existing cluster (with --provider existing)",
    )
    group.addoption(
        "--k8s-bin-dir",
        default=os.environ.get("K8S_BIN_DIR"),
        help="directory with kubelet, kube-apiserver, kube-controller-manager, kube-scheduler (env K8S_BIN_DIR)",
    )
    group.addoption(
        "--upgrade-from",
        default=os.environ.get("UPGRADE_FROM") or PREVIOUS_MINOR_VERSION,
        help="kubelet version the upgrade tests start from, one minor below the version under test "
        f"(env UPGRADE_FROM; default {PREVIOUS_MINOR_VERSION})",
    )
    group.addoption(
        "--keep-cluster",
        action="store_true",
        default=os.environ.get("KEEP_CLUSTER", "") not in ("", "0"),
        help="leave the cluster running after the session and print its kubeconfig",
    )
