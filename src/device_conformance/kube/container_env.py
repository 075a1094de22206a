"""A container's environment as the runtime gave it, printed by the container and read back from its log.

`env` in busybox sh or dash shows only what the shell kept: both drop, before running any command, the
variables whose names are not shell names (POSIX.1-2017 XBD 3.235 "Name": "a word consisting solely of
underscores, digits, and alphabetics from the portable character set"; XCU 2.5.3: shell variables are
initialized from the environment; XBD 8.1: other names "may be permitted by an implementation; applications
shall tolerate the presence of such names"). A DRA driver's CDI edit `DRA_CPUSET_<claim-uid>` has hyphens, so
`sh -c env` would hide it. /proc/<pid>/environ holds the environment execve gave the process, whatever the
shell kept of it: /proc/1/environ is the container's own first process (our pods share no PID namespace).
Not /proc/$$: the kubelet expands a container's command and args, and "double $$ are reduced to a single $"
(core/v1 Container.command; pkg/kubelet/container/helpers.go ExpandContainerCommandAndArgs), so the shell would read
/proc/$/environ; not /proc/self: that is `tr`, which gets only what the shell exported.
"""

from __future__ import annotations

ENV_END = "END-OF-ENV"


def env_lines_script(prefix: str = "") -> str:
    """Shell words printing the container's NAME=value lines (those starting with `prefix`), sorted."""
    grep = f" | grep '^{prefix}'" if prefix else ""
    return f"tr '\\0' '\\n' < /proc/1/environ{grep} | sort"


def print_env_script(prefix: str = "") -> str:
    """Shell words printing the environment (env_lines_script), then ENV_END: a test waits for that line."""
    return f"{env_lines_script(prefix)}; echo {ENV_END}"


def parse_env(log: str, prefix: str = "") -> list[str]:
    """The NAME=value lines starting with `prefix` that a container printed before ENV_END, sorted (a value
    holding a newline is read up to it; its later lines count only if they look like NAME=value)."""
    lines = log.splitlines()
    printed = lines[: lines.index(ENV_END)] if ENV_END in lines else lines
    return sorted(line for line in printed if line.startswith(prefix) and "=" in line)
