"""A stand-in for an xdist worker node, as the group scheduler sees it (shared by the scheduling tests)."""

from __future__ import annotations


class Worker:
    """What the scheduler sees of an xdist worker: the test indexes sent to it, and whether it was shut down."""

    def __init__(self, name: str) -> None:
        self.gateway = type("Gateway", (), {"id": name})()
        self.sent: list[list[int]] = []
        self.shutting_down = False

    def send_runtest_some(self, indexes: list[int]) -> None:
        self.sent.append(indexes)

    def shutdown(self) -> None:
        self.shutting_down = True
