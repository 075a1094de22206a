"""Injected faults: block a method until unblocked, or fail it (gRPC status or per-claim error), N times."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any

import grpc

from device_conformance.errors import BadInput

FAULTABLE_METHODS = ("NodePrepareResources", "NodeUnprepareResources", "GetInfo")


@dataclass
class FailRule:
    method: str
    message: str
    code: str | None  # gRPC status code name; None = per-claim error in the response
    claim_uid: str | None  # None = every claim
    times: int | None  # None = until cleared

    def matches(self, method: str, claim_uids: Iterable[str]) -> bool:
        return self.method == method and (self.claim_uid is None or self.claim_uid in claim_uids)


@dataclass
class BlockRule:
    method: str
    claim_uid: str | None

    def matches(self, method: str, claim_uids: Iterable[str]) -> bool:
        return self.method == method and (self.claim_uid is None or self.claim_uid in claim_uids)


def _check_method(method: str) -> None:
    if method not in FAULTABLE_METHODS:
        raise BadInput(f"unknown method {method!r}", f"use one of {FAULTABLE_METHODS}")


class Faults:
    """Thread-safe fault table consulted by every handler before it does any work."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._fail: list[FailRule] = []
        self._block: list[BlockRule] = []
        self._blocked: dict[int, dict[str, Any]] = {}
        self._ids = itertools.count(1)

    def fail(
        self,
        method: str,
        message: str,
        *,
        code: str | None = "UNKNOWN",
        claim_uid: str | None = None,
        times: int | None = None,
    ) -> None:
        _check_method(method)
        if code is not None and code not in grpc.StatusCode.__members__:
            raise BadInput(f"unknown gRPC code {code!r}", f"use one of {list(grpc.StatusCode.__members__)}")
        if code is None and method == "GetInfo":
            raise BadInput("GetInfo has no per-claim errors", "give a gRPC code")
        with self._cond:
            self._fail.append(FailRule(method, message, code, claim_uid, times))

    def clear(self, method: str | None = None) -> None:
        with self._cond:
            self._fail = [r for r in self._fail if method is not None and r.method != method]

    def block(self, method: str, claim_uid: str | None = None) -> None:
        _check_method(method)
        with self._cond:
            self._block.append(BlockRule(method, claim_uid))

    def unblock(self, method: str | None = None, claim_uid: str | None = None) -> None:
        with self._cond:
            self._block = [
                r
                for r in self._block
                if not ((method is None or r.method == method) and (claim_uid is None or r.claim_uid == claim_uid))
            ]
            self._cond.notify_all()

    def wait_while_blocked(self, method: str, claim_uids: list[str], is_active: Callable[[], bool]) -> bool:
        """Hold the call while a block rule matches; False when the caller went away meanwhile."""
        with self._cond:
            if not any(r.matches(method, claim_uids) for r in self._block):
                return True
            call_id = next(self._ids)
            self._blocked[call_id] = {"method": method, "claims": claim_uids, "since": time.time()}
            try:
                while any(r.matches(method, claim_uids) for r in self._block):
                    if not is_active():  # the kubelet's deadline (45 s) or a stopped server
                        return False
                    self._cond.wait(0.1)
                return True
            finally:
                del self._blocked[call_id]

    def blocked_calls(self) -> list[dict[str, Any]]:
        with self._cond:
            return [dict(v) for v in self._blocked.values()]

    def take(self, method: str, claim_uids: list[str]) -> tuple[FailRule | None, dict[str, str]]:
        """The whole-call failure (if any) and per-claim error messages for this call; uses up `times`."""
        with self._cond:
            fired: list[FailRule] = []
            whole = next((r for r in self._fail if r.code is not None and r.matches(method, claim_uids)), None)
            per_claim: dict[str, str] = {}
            if whole is not None:
                fired.append(whole)
            else:
                for rule in self._fail:
                    if rule.code is not None or not rule.matches(method, claim_uids):
                        continue
                    hit = [u for u in claim_uids if rule.claim_uid in (None, u) and u not in per_claim]
                    for uid in hit:
                        per_claim[uid] = rule.message
                    if hit:
                        fired.append(rule)
            for rule in fired:
                if rule.times is not None:
                    rule.times -= 1
            self._fail = [r for r in self._fail if r.times is None or r.times > 0]
            return whole, per_claim

    def describe(self) -> dict[str, Any]:
        with self._cond:
            return {
                "fail": [asdict(r) for r in self._fail],
                "block": [asdict(r) for r in self._block],
                "blocked_calls": [dict(v) for v in self._blocked.values()],
            }
