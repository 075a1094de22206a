"""What local runs can leave on the host, as a snapshot: processes, mounts, cgroups, network namespaces,
links (bridges, veths), iptables rules, sockets (unix and listening TCP) and run directories.

Each item carries the marks that tie it to a run, read from the item itself: a run id in a path
(`.../runs/<run-id>/...`), a cgroup (`/device-conformance-<run-id>`), a bridge (`dc<run-id>`) or a CNI
network name (`dc-<run-id>`), the run id a component was started with (RUN_ENV in its environment), or a
tag that a caller put into the environment of a process tree (TAG_ENV, inherited by every child).
`leaks()` diffs two snapshots and keeps only what carries one of *our* marks, so clusters of other
sessions that start and stop on the same machine meanwhile never count. Used by bench/interrupt.py.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from device_conformance.providers.local import cgroups
from device_conformance.providers.local.layout import NODE_PRIVATE_PATHS, state_root
from device_conformance.providers.local.processes import RUN_ENV, read_environ

# A process tree whose items should be told apart from everyone else's (bench/interrupt.py sets it).
TAG_ENV = "DEVICE_CONFORMANCE_TAG"

RUN_ID = r"r[0-9a-f]{6}"
_RUN_MARKS = (
    re.compile(rf"/runs/({RUN_ID})(?:/|\b)"),
    re.compile(rf"device-conformance-({RUN_ID})\b"),
    re.compile(rf"\bdc-?({RUN_ID})\b"),
)
KINDS = ("process", "mount", "cgroup", "netns", "link", "iptables", "socket", "port", "run-dir", "host-dir")


def run_marks(text: str) -> frozenset[str]:
    """The run ids a piece of text names (a path, argv, cgroup, link or rule)."""
    return frozenset(match.group(1) for pattern in _RUN_MARKS for match in pattern.finditer(text))


@dataclass(frozen=True)
class Item:
    kind: str
    key: str  # identity within its kind: the same thing in two snapshots has the same key
    detail: str  # for people
    marks: frozenset[str] = frozenset()  # run ids and tags it belongs to

    def __str__(self) -> str:
        return f"{self.kind} {self.detail}"


@dataclass(frozen=True)
class Ours:
    """What identifies our runs: their ids, the tags of our process trees, their loopback ports."""

    run_ids: frozenset[str] = frozenset()
    tags: frozenset[str] = frozenset()
    ports: frozenset[int] = frozenset()

    def owns(self, item: Item) -> bool:
        if item.kind == "port":
            return int(item.key.rsplit(":", 1)[1]) in self.ports
        return bool(item.marks & (self.run_ids | {f"tag:{tag}" for tag in self.tags}))


@dataclass
class Snapshot:
    items: dict[tuple[str, str], Item] = field(default_factory=dict)

    def add(self, items: Iterable[Item]) -> None:
        for item in items:
            self.items[(item.kind, item.key)] = item

    def of(self, ours: Ours) -> list[Item]:
        return sorted((i for i in self.items.values() if ours.owns(i)), key=lambda i: (KINDS.index(i.kind), i.key))


def leaks(before: Snapshot, after: Snapshot, ours: Ours) -> list[Item]:
    """What of ours is in `after` but was not in `before`."""
    return [item for item in after.of(ours) if (item.kind, item.key) not in before.items]


# ---- parsers (pure: text in, items out) ---------------------------------------------------------
def process_item(pid: int, started: int | None, argv: list[str], environ: dict[str, str], cgroup: str) -> Item:
    marks = set(run_marks(" ".join(argv)) | run_marks(cgroup))
    if RUN_ENV in environ:
        marks |= run_marks(f"/runs/{environ[RUN_ENV]}/")
    if TAG_ENV in environ:
        marks.add(f"tag:{environ[TAG_ENV]}")
    command = " ".join(argv)
    return Item("process", f"{pid}:{started}", f"pid {pid}: {command[:160]}", frozenset(marks))


def parse_mountinfo(text: str, where: str = "host") -> list[Item]:
    """Mounts that name a run (mount point or its root within the source filesystem)."""
    items = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 5:
            continue
        root, mount_point = fields[3], fields[4]
        marks = run_marks(f"{root} {mount_point}")
        if marks:
            items.append(Item("mount", f"{where}:{mount_point}", f"{mount_point} (root {root}, {where})", marks))
    return items


def parse_ip_links(text: str) -> list[Item]:
    """`ip -j -d link show`: bridges and veths; a veth belongs to the run of its bridge."""
    items = []
    for link in json.loads(text or "[]"):
        kind = (link.get("linkinfo") or {}).get("info_kind", "")
        if kind not in ("bridge", "veth"):
            continue
        name, master = link.get("ifname", ""), link.get("master", "")
        marks = run_marks(name) | run_marks(master)
        detail = f"{kind} {name}" + (f" (on bridge {master})" if master else "")
        items.append(Item("link", f"{kind}:{name}", detail, marks))
    return items


def parse_iptables_save(text: str, table_family: str = "ipv4") -> list[Item]:
    """Rules and chains; a rule belongs to a run when it names its bridge, its CNI network or its cgroup."""
    items, table = [], ""
    for line in text.splitlines():
        if line.startswith("*"):
            table = line[1:]
        elif line.startswith(("-A", ":")):
            text_key = re.sub(r"\[\d+:\d+\]", "", line).strip()  # counters change between snapshots
            items.append(
                Item("iptables", f"{table_family}/{table}:{text_key}", f"{table}: {text_key}", run_marks(line))
            )
    return items


def parse_proc_net_unix(text: str) -> list[Item]:
    items = []
    for line in text.splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 8 and fields[7].startswith("/"):
            path = fields[7]
            marks = run_marks(path)
            if marks:
                items.append(Item("socket", f"unix:{path}", f"unix socket {path}", marks))
    return items


def parse_proc_net_tcp(text: str, first: int, last: int) -> list[Item]:
    """Listening TCP sockets on 127.0.0.1 in [first, last] (the local provider's port blocks)."""
    items = []
    for line in text.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 4 or fields[3] != "0A":  # 0A: TCP_LISTEN
            continue
        address, port_hex = fields[1].split(":")
        port = int(port_hex, 16)
        if address == "0100007F" and first <= port <= last:
            items.append(Item("port", f"127.0.0.1:{port}", f"listening on 127.0.0.1:{port}"))
    return items


# ---- collectors (read this host) ----------------------------------------------------------------
def _read(path: str | Path) -> str:
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""


def _command(argv: list[str]) -> str:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""


def _processes() -> tuple[list[Item], dict[int, set[int]], dict[int, int]]:
    """Processes, plus the members of every mount and network namespace (inode -> pids)."""
    from device_conformance.providers.local.processes import start_time

    items, by_netns, mnt_member = [], {}, {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        raw = _read_bytes(entry / "cmdline")
        if raw is None:
            continue  # gone, or a kernel thread
        argv = [part.decode(errors="replace") for part in raw.split(b"\0") if part]
        if not argv:
            continue
        environ = {}
        for pair in read_environ(entry).split(b"\0"):
            key, _, value = pair.decode(errors="replace").partition("=")
            if key in (RUN_ENV, TAG_ENV):
                environ[key] = value
        items.append(process_item(pid, start_time(pid), argv, environ, _read(entry / "cgroup")))
        for ns, table in (("net", by_netns), ("mnt", None)):
            try:
                inode = os.stat(entry / "ns" / ns).st_ino
            except OSError:
                continue
            if table is not None:
                table.setdefault(inode, set()).add(pid)
            else:
                mnt_member.setdefault(inode, pid)
    return items, by_netns, mnt_member


def _read_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _mounts(mnt_members: dict[int, int]) -> list[Item]:
    own = os.stat("/proc/self/ns/mnt").st_ino
    items = parse_mountinfo(_read("/proc/self/mountinfo"), "host")
    for inode, pid in mnt_members.items():
        if inode != own:
            # Mounts of another namespace (a node's, or a leaked one): read through one of its members.
            items += parse_mountinfo(_read(f"/proc/{pid}/mountinfo"), f"mount namespace {inode}")
    return items


def _netns(by_netns: dict[int, set[int]], processes: dict[int, Item]) -> list[Item]:
    host = os.stat("/proc/self/ns/net").st_ino
    items = []
    for inode, pids in by_netns.items():
        if inode == host:
            continue
        marks = frozenset().union(*(processes[p].marks for p in pids if p in processes))
        items.append(Item("netns", f"net:{inode}", f"network namespace {inode} (pids {sorted(pids)[:5]})", marks))
    for name in sorted(os.listdir("/run/netns")) if os.path.isdir("/run/netns") else []:
        items.append(Item("netns", f"named:{name}", f"named network namespace /run/netns/{name}", run_marks(name)))
    return items


def _cgroups() -> list[Item]:
    items = []
    for hierarchy in cgroups.hierarchies(include_unified=True):
        for top in sorted(hierarchy.glob("device-conformance-*")):
            items.append(Item("cgroup", str(top), f"cgroup {top}", run_marks(str(top))))
    return items


def _run_dirs() -> list[Item]:
    runs = state_root() / "runs"
    items = [Item("run-dir", str(p), f"run directory {p}", run_marks(f"{p}/")) for p in sorted(runs.glob("*"))]
    for node_path in NODE_PRIVATE_PATHS:
        if Path(node_path).exists():
            # Created on the host as mount points, removed by the last run's teardown: nobody's mark.
            items.append(Item("host-dir", node_path, f"host mount point {node_path}"))
    return items


def snapshot(ports: tuple[int, int] = (21000, 25000)) -> Snapshot:
    """Everything of the kinds above on this host now (root needed to read other processes' environ)."""
    processes, by_netns, mnt_members = _processes()
    by_pid = {int(item.key.split(":")[0]): item for item in processes}
    result = Snapshot()
    result.add(processes)
    result.add(_mounts(mnt_members))
    result.add(_cgroups())
    result.add(_netns(by_netns, by_pid))
    result.add(parse_ip_links(_command(["ip", "-j", "-d", "link", "show"])))
    result.add(parse_iptables_save(_command(["iptables-save"]), "ipv4"))
    result.add(parse_iptables_save(_command(["ip6tables-save"]), "ipv6"))
    result.add(parse_proc_net_unix(_read("/proc/net/unix")))
    result.add(parse_proc_net_tcp(_read("/proc/net/tcp"), *ports))
    result.add(_run_dirs())
    return result
