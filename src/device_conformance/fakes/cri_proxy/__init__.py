"""A CRI proxy between the kubelet and its container runtime: every RuntimeService and ImageService call
forwarded unchanged, the ones a test alters failed, delayed, held or thinned on demand (fakes/common/faults.py),
every call in the call log (fakes/common/calls.py). Run as its own process (`python -m
device_conformance.fakes.cri_proxy`), driven through CRIProxyHandle."""

from device_conformance.fakes.cri_proxy.config import CRIProxyConfig
from device_conformance.fakes.cri_proxy.handle import CRIProxyHandle, is_snapshot
from device_conformance.fakes.cri_proxy.proxy import DROP_METHODS, FAULT_METHODS

__all__ = ["DROP_METHODS", "FAULT_METHODS", "CRIProxyConfig", "CRIProxyHandle", "is_snapshot"]
