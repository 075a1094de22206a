"""Preparing and unpreparing one claim: find its allocation, write its CDI spec, record it."""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from device_conformance.fakes.common.panic import go_panic
from device_conformance.fakes.dra_driver import cdi
from device_conformance.fakes.dra_driver.config import (
    CLAIM_ERROR_FOR_A_WHILE,
    CLAIM_ERROR_ONCE,
    CLAIM_ERROR_SECONDS,
    COMMON_CDI_DEVICE,
    INVALID_CDI_VERSION,
    DriverConfig,
)
from device_conformance.fakes.dra_driver.kubeapi import KubeApi
from device_conformance.fakes.dra_driver.state import DriverState


class ClaimError(Exception):
    """This claim failed; the message goes into the response's per-claim `error` field."""


def results_from_claim(claim: dict[str, Any], driver: str) -> list[dict[str, Any]]:
    """This driver's allocation results of a ResourceClaim object (same shape in v1beta1..v1)."""
    allocation = (claim.get("status") or {}).get("allocation") or {}
    results = ((allocation.get("devices") or {}).get("results")) or []
    return [r for r in results if r.get("driver") == driver]


def base_request(request: str) -> str:
    # "<req>/<subreq>" (firstAvailable): containers reference the top-level request name.
    return request.split("/", 1)[0]


class ClaimPreparer:
    def __init__(self, config: DriverConfig, state: DriverState, kube: KubeApi | None) -> None:
        self._config = config
        self._state = state
        self._kube = kube
        # This process's own bookkeeping, for the defects that depend on it (lost on restart, on purpose).
        self._held: set[str] = set()
        self._ever: set[str] = set()
        self._shared_spec = threading.Lock()  # cdi-claim-edits-global: one file, read and rewritten per claim
        self._failed_once: set[tuple[str, str]] = set()  # claim-error-once: (method, claim UID) already failed
        # claim-error-for-a-while: (method, claim UID) -> when it was first called (time.monotonic)
        self._first_called: dict[tuple[str, str], float] = {}
        self._failed_lock = threading.Lock()

    def prepare(self, namespace: str, uid: str, name: str) -> list[dict[str, Any]]:
        """Devices for the response; idempotent like a real driver (the kubelet retries). The configured
        defects (defect_registry.py) change only the answer, not what the driver records as prepared."""
        if "prepare-rejects-repeat" in self._config.defects and uid in self._held:
            raise ClaimError(f"ResourceClaim {namespace}/{name} is already prepared (defect prepare-rejects-repeat)")
        devices = self._defective(self._prepare(namespace, uid, name))
        self._held.add(uid)
        self._ever.add(uid)
        return devices

    def transient_error(self, method: str, uid: str) -> str | None:
        """The error a pattern answers for the claim in an OK answer now (claim-error-once,
        claim-error-for-a-while), or None."""
        if self.fails_once(method, uid):
            return CLAIM_ERROR_ONCE
        if self.fails_for_a_while(method, uid):
            return CLAIM_ERROR_FOR_A_WHILE
        return None

    def fails_for_a_while(self, method: str, uid: str) -> bool:
        """Pattern claim-error-for-a-while: True until CLAIM_ERROR_SECONDS have passed since `method` was first
        called for the claim (in this process)."""
        if "claim-error-for-a-while" not in self.patterns:
            return False
        now = time.monotonic()
        with self._failed_lock:
            first = self._first_called.setdefault((method, uid), now)
        return now - first < CLAIM_ERROR_SECONDS

    def fails_once(self, method: str, uid: str) -> bool:
        """Pattern claim-error-once: True the first time `method` is called for the claim (in this process)."""
        if "claim-error-once" not in self.patterns:
            return False
        with self._failed_lock:
            first = (method, uid) not in self._failed_once
            self._failed_once.add((method, uid))
        return first

    def _cdi_device(self, device: str) -> str:
        if "restart-renames-cdi-devices" in self._config.defects:
            return f"{device}-{os.getpid()}"
        return device

    @property
    def defects(self) -> list[str]:
        return self._config.defects

    @property
    def patterns(self) -> list[str]:
        return self._config.patterns

    def write_static_specs(self) -> list[str]:
        """At start-up, the specs that are no claim's: the driver-wide common device (cdi-common-device) and one
        spec per device (cdi-static-per-device). Never removed, as the drivers that write them do."""
        if not self._config.cdi_dir:
            return []
        names = [COMMON_CDI_DEVICE] if "cdi-common-device" in self.patterns else []
        if "cdi-static-per-device" in self.patterns:
            names += [d.name for d in self._config.devices]
        paths = [cdi.static_spec_path(self._config.cdi_dir, self._config.driver_name, n) for n in names]
        for name, path in zip(names, paths, strict=True):
            cdi.write_spec(path, cdi.build_static_spec(self._config.cdi, self._config.driver_name, name))
        return paths

    def fetch_error(self, namespace: str, uid: str, name: str) -> str | None:
        """Why this claim cannot be read as allocated to us (fetch-claims-first), like kubeletplugin's
        getResourceClaims: "retrieve claim <ns>/<name>: ..." / "claim <ns>/<name> not allocated"."""
        try:
            results = self._results(namespace, uid, name)
        except ClaimError as exc:
            return f"retrieve claim {namespace}/{name}: {exc}"
        return None if results else f"claim {namespace}/{name} not allocated"

    def _defective(self, devices: list[dict[str, Any]]) -> list[dict[str, Any]]:
        defects = self._config.defects
        if "prepare-first-device-only" in defects:
            devices = devices[:1]
        if "prepare-without-cdi" in defects:
            devices = [{**d, "cdi_device_ids": []} for d in devices]
        return devices

    def _prepare(self, namespace: str, uid: str, name: str) -> list[dict[str, Any]]:
        known = self._state.get_prepared(uid)
        if "restart-renames-cdi-devices" in self._config.defects and uid not in self._ever:
            known = None  # forgets what a predecessor prepared
        if known is not None:
            self._restore_lost_spec(uid, known)
            return known["devices"]
        try:
            results = self._results(namespace, uid, name)
        except ClaimError as exc:
            if "prepare-unknown-claim-succeeds" in self._config.defects:
                return []  # answered as prepared although nothing is allocated
            if "prepare-crash-on-unknown-claim" in self._config.defects:
                go_panic(f"NodePrepareResources: unknown claim {namespace}/{name}: {exc}")
            raise
        if not results:
            raise ClaimError(
                f"ResourceClaim {namespace}/{name} has no allocation for driver {self._config.driver_name}"
            )
        if "prepare-no-devices" in self.patterns:  # applied out of band (NRI): nothing for the kubelet
            self._state.set_prepared(uid, {"namespace": namespace, "name": name, "devices": [], "cdi_spec": None})
            return []
        devices = [self._device(uid, r) for r in results]
        spec_file = None
        if self._config.cdi_dir and "cdi-static-per-device" not in self.patterns:
            spec_file = cdi.spec_path(self._config.cdi_dir, self._config.driver_name, uid)
            names = list(dict.fromkeys(self._cdi_device(r["device"]) for r in results))
            spec = cdi.build_spec(self._config.cdi, namespace, name, uid, names)
            if "cdi-invalid-version" in self._config.defects:
                spec["cdiVersion"] = INVALID_CDI_VERSION
            if "cdi-claim-edits-global" in self._config.defects:
                spec_file = self._write_globally(spec)
            else:
                cdi.write_spec(spec_file, spec)
        self._state.set_prepared(uid, {"namespace": namespace, "name": name, "devices": devices, "cdi_spec": spec_file})
        return devices

    def _write_globally(self, claim_spec: dict[str, Any]) -> str:
        """cdi-claim-edits-global: the claim's devices into the driver's one spec of all claims; returns its path."""
        assert self._config.cdi_dir
        path = cdi.shared_claims_spec_path(self._config.cdi_dir, self._config.driver_name)
        with self._shared_spec:
            cdi.write_spec(path, cdi.with_claim_globally(cdi.read_spec(path), claim_spec))
        return path

    def _remove_globally(self, uid: str) -> None:
        assert self._config.cdi_dir
        path = cdi.shared_claims_spec_path(self._config.cdi_dir, self._config.driver_name)
        with self._shared_spec:
            spec = cdi.read_spec(path)
            left = cdi.without_claim_globally(spec, uid) if spec else None
            if left:
                cdi.write_spec(path, left)
            else:
                cdi.remove_spec(path)

    def _restore_lost_spec(self, uid: str, known: dict[str, Any]) -> None:
        """A prepared claim's CDI spec lives on tmpfs and goes with a reboot while the driver's state stays:
        write it again before answering, or the runtime cannot resolve the CDI IDs (kubernetes#141433; the
        kubelet calls NodePrepareResources after a reboot for this, documented by kubernetes#141966)."""
        spec_file = known.get("cdi_spec")
        if not spec_file or os.path.exists(spec_file) or "prepare-keeps-lost-cdi-spec" in self._config.defects:
            return
        names = list(dict.fromkeys(d["device_name"] for d in known["devices"]))
        spec = cdi.build_spec(self._config.cdi, known["namespace"], known["name"], uid, names)
        if "cdi-claim-edits-global" in self._config.defects:
            self._write_globally(spec)
        else:
            cdi.write_spec(spec_file, spec)

    def unprepare(self, uid: str) -> None:
        """Unknown claims succeed: after a restart without state the kubelet must still get through."""
        defects = self._config.defects
        if "unprepare-unknown-claim-error" in defects and uid not in self._ever:
            raise ClaimError(f"claim {uid} was never prepared here (defect unprepare-unknown-claim-error)")
        if "unprepare-rejects-repeat" in defects and uid in self._ever and uid not in self._held:
            raise ClaimError(f"claim {uid} is not prepared (defect unprepare-rejects-repeat)")
        self._held.discard(uid)
        if self._config.cdi_dir and "unprepare-keeps-cdi" not in defects:
            cdi.remove_spec(cdi.spec_path(self._config.cdi_dir, self._config.driver_name, uid))
            if "cdi-claim-edits-global" in defects:
                self._remove_globally(uid)
        self._state.drop_prepared(uid)

    def _results(self, namespace: str, uid: str, name: str) -> list[dict[str, Any]]:
        if self._kube is None:
            pushed = self._state.allocation(uid)
            if pushed is None:
                raise ClaimError(f"no allocation pushed for ResourceClaim {namespace}/{name} (uid {uid})")
            return pushed["results"]
        try:
            claim = self._kube.get_claim(namespace, name)
        except Exception as exc:
            raise ClaimError(f"get ResourceClaim {namespace}/{name}: {_short(exc)}") from exc
        actual = (claim.get("metadata") or {}).get("uid")
        if actual != uid:
            raise ClaimError(f"ResourceClaim {namespace}/{name} has UID {actual}, the kubelet asked for {uid}")
        return results_from_claim(claim, self._config.driver_name)

    def _cdi_ids(self, uid: str, device: str) -> list[str]:
        if not self._config.cdi_dir:
            return []
        kind = self._config.cdi
        if "cdi-static-per-device" in self.patterns:
            ids = [f"{kind}={device}"]
        else:
            ids = [cdi.qualified_name(kind, uid, self._cdi_device(device))]
        if "cdi-common-device" in self.patterns:  # dra-example-driver GetClaimDevices: common first
            ids.insert(0, f"{kind}={COMMON_CDI_DEVICE}")
        return ids

    def _device(self, uid: str, result: dict[str, Any]) -> dict[str, Any]:
        device = result["device"]
        request = base_request(result.get("request") or "")
        entry: dict[str, Any] = {
            "request_names": [request] if request else [],
            "pool_name": result.get("pool") or self._config.pool,
            "device_name": device,
            "cdi_device_ids": self._cdi_ids(uid, device),
        }
        if result.get("shareID"):
            entry["share_id"] = result["shareID"]
        return entry


def _short(exc: BaseException) -> str:
    status, reason = getattr(exc, "status", None), getattr(exc, "reason", None)
    return f"HTTP {status} {reason}" if status else repr(exc)
