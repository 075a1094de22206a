"""kube/container_env.py: a container's environment printed from /proc/1/environ and read back from its log,
so names that are not shell names (DRA_CPUSET_<claim-uid>, with hyphens) are seen. Run here under the shells
a workload image has (busybox sh, dash), as PID 1 of a new PID namespace (as in a container), with the exact
environment a runtime would give."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from device_conformance.kube.container_env import ENV_END, env_lines_script, parse_env, print_env_script

ENVIRONMENT = {"DRA_CPUSET_0b7e-41c2": "0-3", "DRA_DEVICE_dev_0": "ns/claim", "OTHER": "x", "PATH": "/bin"}
SHELLS = {"busybox sh": ["busybox", "sh"], "dash": ["dash"]}


def run_in(shell: str, script: str) -> str:
    argv = SHELLS[shell]
    if shutil.which(argv[0]) is None:
        pytest.skip(f"{argv[0]} is not installed")
    # As in a container: the shell is PID 1 of its own PID namespace, with its own /proc (root only).
    argv = ["unshare", "--pid", "--fork", "--mount-proc", shutil.which(argv[0]), *argv[1:], "-c", script]
    return subprocess.run(argv, env=ENVIRONMENT, capture_output=True, text=True, check=True, timeout=30).stdout


@pytest.mark.parametrize("shell", sorted(SHELLS))
def test_names_that_are_not_shell_names_are_printed_and_read_back(shell):
    printed = run_in(shell, f"{print_env_script('DRA_')}; echo after")
    assert printed == f"DRA_CPUSET_0b7e-41c2=0-3\nDRA_DEVICE_dev_0=ns/claim\n{ENV_END}\nafter\n"
    assert parse_env(printed, "DRA_") == ["DRA_CPUSET_0b7e-41c2=0-3", "DRA_DEVICE_dev_0=ns/claim"]
    # What `env` shows instead: the shell dropped the name with hyphens before running it.
    assert run_in(shell, "env | grep ^DRA_ | sort") == "DRA_DEVICE_dev_0=ns/claim\n"


def test_the_kubelet_s_expansion_leaves_the_script_as_it_is():
    """The kubelet expands $(NAME) and reduces $$ to $ in a container's command (pkg/kubelet/container/helpers.go
    ExpandContainerCommandAndArgs): the script must hold neither, or the shell would read another file."""
    for script in (print_env_script("DRA_"), env_lines_script()):
        assert "$$" not in script and "$(" not in script, script


@pytest.mark.parametrize("shell", sorted(SHELLS))
def test_inside_a_command_substitution_it_is_still_the_shell_s_environment(shell):
    printed = run_in(shell, f"echo \"cdi=$({env_lines_script('DRA_')} | tr '\\n' ' ')\"")
    assert printed == "cdi=DRA_CPUSET_0b7e-41c2=0-3 DRA_DEVICE_dev_0=ns/claim \n"


def test_parse_env_reads_what_came_before_the_end_marker_sorted():
    log = f"B=2\nA=1\nA_NOT_A_PAIR\n{ENV_END}\nC=3\n"
    assert parse_env(log) == ["A=1", "B=2"]
    assert parse_env(log, "B") == ["B=2"]
    assert parse_env("X=1\n") == ["X=1"], "no marker yet: every line so far"
