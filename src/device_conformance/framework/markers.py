"""The `since` markers several suite modules share: the release a feature needs, and why, written once (the
pytest plugin skips a test below the release and names the reason; expectations/ holds the releases)."""

from __future__ import annotations

import pytest

from device_conformance.expectations.dra import (
    FIRST_DEVICE_TAINTS_MINOR,
    FIRST_DRA_CONNECTION_MONITORING_MINOR,
    FIRST_DRA_MINOR,
    FIRST_NONE_TAINT_EFFECT_MINOR,
    FIRST_PODRESOURCES_DRA_MINOR,
    FIRST_RESOURCE_HEALTH_STATUS_MINOR,
    FIRST_SEAMLESS_DRIVER_UPDATE_MINOR,
)

# DRA
SINCE_DRA = pytest.mark.since(f"1.{FIRST_DRA_MINOR}", "resource.k8s.io/v1beta1, the oldest API the DRA objects fit")
SINCE_SEAMLESS_DRIVER_UPDATE = pytest.mark.since(
    f"1.{FIRST_SEAMLESS_DRIVER_UPDATE_MINOR}", "seamless DRA driver updates (kubernetes#129832)"
)
SINCE_SLICE_WIPING_DELAY = pytest.mark.since(
    f"1.{FIRST_SEAMLESS_DRIVER_UPDATE_MINOR}",
    "slices wiped only after the wiping delay, a pending wipe cancelled by a new registration (kubernetes#129832)",
)
SINCE_SLICE_WIPE_ON_DISCONNECT = pytest.mark.since(
    f"1.{FIRST_DRA_CONNECTION_MONITORING_MINOR}",
    "the kubelet wipes the slices of a disconnected driver (kubernetes#132058)",
)
SINCE_RESOURCE_HEALTH_STATUS = pytest.mark.since(
    f"1.{FIRST_RESOURCE_HEALTH_STATUS_MINOR}",
    "ResourceHealthStatus on by default (beta); the suite does not turn it on before",
)
SINCE_ADMIN_ACCESS = pytest.mark.since("1.34", "DRAAdminAccess is beta and on from 1.34 (KEP-5018)")
SINCE_PODRESOURCES_GET = pytest.mark.since("1.34", "podresources Get (KubeletPodResourcesGet) on by default")
SINCE_PODRESOURCES_DRA = pytest.mark.since(
    f"1.{FIRST_PODRESOURCES_DRA_MINOR}",
    "podresources lists DRA claims, where the CDI devices are read (KubeletPodResourcesDynamicResources, #132940)",
)

# Device taints
SINCE_DEVICE_TAINTS = pytest.mark.since(
    f"1.{FIRST_DEVICE_TAINTS_MINOR}", "device taints, DRADeviceTaints (kubernetes#130447)"
)
SINCE_RULE_STATUS = pytest.mark.since(
    f"1.{FIRST_NONE_TAINT_EFFECT_MINOR}", "effect None and DeviceTaintRule status (kubernetes#134152)"
)

# Device plugins
SINCE_CDI_DEVICES_IN_ALLOCATE = pytest.mark.since(
    "1.29", "CDI devices in Allocate responses (DevicePluginCDIDevices, beta and on by default)"
)
SINCE_SIDECARS = pytest.mark.since(
    "1.29", "sidecar containers (SidecarContainers, beta and on by default; alpha, off, in 1.28)"
)
