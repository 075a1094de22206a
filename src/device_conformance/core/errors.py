"""The exception tree. Every message says what went wrong and, where there is one, the fix."""

from __future__ import annotations


class ConformanceError(Exception):
    """Base of every error this project raises on purpose."""


class BadInput(ConformanceError):
    """The user gave us something we cannot use; the message names the fix."""

    def __init__(self, problem: str, fix: str) -> None:
        super().__init__(f"{problem}\n  fix: {fix}")
        self.problem = problem
        self.fix = fix


class CommandError(ConformanceError):
    """A command we ran failed."""

    def __init__(self, argv: list[str], returncode: int, output: str) -> None:
        import shlex

        tail = "\n".join(output.strip().splitlines()[-20:])
        super().__init__(f"command failed (exit {returncode}): {shlex.join(argv)}\n{tail}")
        self.argv = argv
        self.returncode = returncode
        self.output = output


class WaitTimeout(ConformanceError, AssertionError):
    """A wait ended before its condition held. Also an AssertionError so pytest reports it as a failure."""

    def __init__(self, what: str, timeout: float, last_seen: str, history: list[str] | None = None) -> None:
        lines = [f"timed out after {timeout:.0f}s waiting for {what}", f"  last seen: {last_seen}"]
        if history:
            lines.append("  transitions: " + " -> ".join(history[-12:]))
        super().__init__("\n".join(lines))
        self.what = what
        self.timeout = timeout
        self.last_seen = last_seen


class ProviderCapabilityMissing(ConformanceError):
    """The provider cannot do what the test needs (a test skips with this reason)."""
