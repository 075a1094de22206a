"""Every row of the bad-input table (bad_input_rows.py), tried for real: the command a user would run,
in a subprocess of its own session, with the wrong input. Each must exit with the row's code, print the
row's error (once) with its fix and no traceback, and leave nothing: no run directory, no new file in the
state root or the cache (lock files aside), no process of its session, no mount. docs/bad-input.md, what
the rows render to, is checked with the other derived docs (test_derived_docs.py).

No Kubernetes binaries are needed (`make test` runs before any are built). Rows needing root skip
without it; rows needing the Go module proxy skip when it cannot be reached or serves the version now.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import ExitStack
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
from bad_input_rows import CLI, GIVEN, PYTEST, PYTHON, ROWS, Given, Row

from device_conformance.host.process import pid_alive
from device_conformance.providers.kind.dockerd import OWNER_FILE, ROOT_PREFIX

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
COMMAND_TIMEOUT = 60  # seconds; every row fails in a few, so a row still running has started real work
CLOSED_PORT_PROXY = "http://127.0.0.1:9"  # discard port: refused at once, so no download can start
# Settings a developer's shell may carry; each row starts without them and sets its own.
KNOB_VARIABLES = (
    "PROVIDER",
    "K8S_VERSION",
    "K8S_BIN_DIR",
    "K8S_SOURCE",
    "UPGRADE_FROM",
    "KUBECONFIG",
    "DEVICE_CONFORMANCE_KUBECONFIG",
    "DEVICE_CONFORMANCE_BASE_PORT",
    "KEEP_CLUSTER",
    "KIND_CLUSTER",
    "KIND_NODE_IMAGE",
    "KIND_PROFILE",
    "CONTAINERD_VERSION",
    "KUBELET_VERBOSITY",
    "FEATURE_GATES",
    "KUBELET_ARGS",
    "KUBELET_CONFIG",
    "PYTEST_ADDOPTS",
)


def _argv(row: Row, tmp: Path) -> list[str]:
    head = {
        CLI: [str(BIN / "device-conformance")],
        PYTEST: [sys.executable, "-m", "pytest"],
        PYTHON: [sys.executable],
    }[row.argv[0]]
    return head + [word.replace("{tmp}", str(tmp)) for word in row.argv[1:]]


def _env(row: Row, tmp: Path) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if name not in KNOB_VARIABLES}
    env |= {"DEVICE_CONFORMANCE_STATE": str(tmp / "state"), "DEVICE_CONFORMANCE_CACHE": str(tmp / "cache")}
    if row.needs != "proxy":
        # No download and no build can start: a row that is not refused fails fast instead of building.
        env |= {"https_proxy": CLOSED_PORT_PROXY, "HTTPS_PROXY": CLOSED_PORT_PROXY}
        env["PATH"] = os.pathsep.join(d for d in env.get("PATH", "").split(os.pathsep) if not _has_go(d))
    return env | {name: value.replace("{tmp}", str(tmp)) for name, value in row.env.items()}


def _expand(text: str, tmp: Path, env: dict[str, str]) -> str:
    return text.replace("{tmp}", str(tmp)).replace("{port}", env.get("DEVICE_CONFORMANCE_BASE_PORT", "{port}"))


def _has_go(directory: str) -> bool:
    return os.access(Path(directory or ".", "go"), os.X_OK)


def _files(tmp: Path) -> dict[str, str]:
    """Every path under tmp: a file's sha256, 'dir' or 'link'."""
    found = {}
    for path in tmp.rglob("*"):
        key = str(path.relative_to(tmp))
        if path.is_symlink():
            found[key] = "link"
        elif path.is_dir():
            found[key] = "dir"
        else:
            found[key] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def _left_behind(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """What the command added or changed: any path of a run directory, any new or changed file (lock files
    of the cache aside: they are the cache's, kept on purpose), no new empty directory that is a run's."""
    left = []
    for path, what in after.items():
        if path.startswith("state/runs/"):
            left.append(f"run directory {path}")
        elif before.get(path) != what and what != "dir" and not path.startswith("cache/.locks/"):
            left.append(f"{'changed' if path in before else 'new'} file {path}")
        elif path not in before and (".partial-" in path or path.startswith("cache/gobuild/")):
            left.append(f"half-made cache entry {path}")
    return left


def _session_processes(session: int) -> list[str]:
    """Processes still in the command's session (it was their leader)."""
    alive = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == session:  # fields after "(comm)": state ppid pgrp session ...
            alive.append(f"pid {stat.parent.name}")
    return alive


def _mounts() -> list[str]:
    return sorted(
        line.split(" - ")[0].split(None, 4)[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()
    )


@cache
def _proxy_refuses(version: str) -> str | None:
    """None when the Go module proxy refuses k8s.io/kubernetes@version now, else why the row cannot run."""
    go = subprocess.run(["which", "go"], capture_output=True, text=True, check=False).stdout.strip()
    if not go:
        return "no Go toolchain to ask the module proxy"
    try:
        proc = subprocess.run(
            [go, "list", "-m", "-json", f"k8s.io/kubernetes@v{version}"],
            capture_output=True,
            text=True,
            timeout=30,
            cwd="/",
            env={**os.environ, "GOWORK": "off", "GOFLAGS": ""},
            check=False,
        )
    except subprocess.TimeoutExpired:
        return "the Go module proxy did not answer within 30 s"
    if proc.returncode == 0:
        return f"the Go module proxy serves k8s.io/kubernetes@v{version} now: pick a version it refuses"
    if any(code in proc.stderr for code in ("403", "404", "410", "unknown revision", "not found")):
        return None
    return f"the Go module proxy is not reachable: {proc.stderr.strip()[-200:]}"


def _skip_reason(row: Row) -> str | None:
    if row.needs == "root" and os.geteuid() != 0:
        return "needs root (it mounts a tmpfs, or its check comes after the root check)"
    if row.needs == "proxy":
        return _proxy_refuses(row.env["K8S_VERSION"])
    return None


@dataclass
class Outcome:
    """What one row's command did."""

    tmp: Path
    env: dict[str, str]
    returncode: int | None  # None: still running at COMMAND_TIMEOUT (killed)
    output: str
    left: list[str]


def _try(row: Row, tmp: Path, rows_root: Path) -> Outcome:
    """Arrange the row's world, run its command in a session of its own, and see what it left."""
    env = _env(row, tmp)
    with ExitStack() as cleanup:
        given = Given(tmp, env, cleanup)
        if row.given:
            GIVEN[row.given](given)
        before, mounts = _files(tmp), _mounts()
        proc = subprocess.Popen(
            given.argv_prefix + _argv(row, tmp),
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        try:
            output, _ = proc.communicate(timeout=COMMAND_TIMEOUT)
            returncode: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            output, _ = proc.communicate()
            returncode = None
        stragglers = _session_processes(proc.pid)
        if stragglers:
            os.killpg(proc.pid, signal.SIGKILL)  # reported; not left running after a failed row
        left = _left_behind(before, _files(tmp)) + stragglers
        # Rows run side by side: a mount under another row's directory (the full-disk row's tmpfs) is that row's,
        # and one under another pytest session's base directory (a `make test` running beside this one) is its.
        new_mounts = sorted(set(_mounts()) - set(mounts))
        others = rows_root.parent.parent  # /tmp/pytest-of-USER: every session's base directory
        left += [
            f"mount {m}"
            for m in new_mounts
            if _under(m, tmp)
            or not (
                _under(m, rows_root) or (_under(m, others) and not _under(m, rows_root.parent)) or _of_a_live_engine(m)
            )
        ]
    return Outcome(tmp, env, returncode, output, left)


def _of_a_live_engine(mount: str) -> bool:
    """A mount in a private dockerd's root whose owner still runs: a kind run beside this one (the row's own
    processes are gone by now, killed above if they were not)."""
    point = Path(mount.split()[0])
    roots = [p for p in (point, *point.parents) if p.parent == Path("/tmp") and p.name.startswith(ROOT_PREFIX)]
    if not roots:
        return False
    try:
        return pid_alive(int((roots[0] / OWNER_FILE).read_text()))
    except (OSError, ValueError):
        return False


def _under(mount: str, directory: Path) -> bool:
    point = mount.split()[0]
    return point == str(directory) or point.startswith(f"{directory}/")


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Future[Outcome]]:
    """Every runnable row, run side by side (each command is mostly Python start-up: this keeps the module
    well under a minute on 2 cores). Each test waits for its own row."""
    rows_root = tmp_path_factory.mktemp("bad-input").resolve()
    runnable = [row for row in ROWS if _skip_reason(row) is None]
    for index in range(len(runnable)):
        (rows_root / f"row{index}").mkdir()
    with ThreadPoolExecutor(max_workers=max(4, os.cpu_count() or 4)) as pool:
        futures = {
            row.input: pool.submit(_try, row, rows_root / f"row{index}", rows_root)
            for index, row in enumerate(runnable)
        }
        wait(futures.values())
    return futures


@pytest.mark.parametrize("row", ROWS, ids=[row.input for row in ROWS])
def test_bad_input_gives_one_error_naming_the_fix_and_leaves_nothing(row: Row, outcomes: dict[str, Future[Outcome]]):
    reason = _skip_reason(row)
    if reason:
        pytest.skip(reason)
    outcome = outcomes[row.input].result()
    output, tmp, env = outcome.output, outcome.tmp, outcome.env
    shown = f"\n--- output of {row.command()} ---\n{output[-4000:]}"
    assert outcome.returncode is not None, (
        f"still running after {COMMAND_TIMEOUT}s: the bad input was not refused{shown}"
    )
    message = _expand(row.message, tmp, env)
    assert outcome.returncode == row.exit_code, f"exit code {outcome.returncode}, expected {row.exit_code}{shown}"
    assert output.count(message) == 1, f"the key line should appear once: {message!r}{shown}"
    assert _expand(row.fix, tmp, env) in output, f"the fix is not named: {row.fix!r}{shown}"
    for text in row.also:
        assert text in output, f"{text!r} is not named{shown}"
    assert "Traceback" not in output, f"a traceback instead of a message{shown}"
    assert outcome.left == [], f"left behind: {outcome.left}{shown}"
    for path in row.gone:
        assert not Path(path.replace("{tmp}", str(tmp))).exists(), f"{path} is still there{shown}"
