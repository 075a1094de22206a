"""The host inventory of bench/interrupt.py: what ties an item to a run, and the diff keeps only ours."""

import json
import os
import subprocess
import sys

from device_conformance.providers.local import inventory
from device_conformance.providers.local.inventory import Item, Ours, Snapshot, leaks
from device_conformance.providers.local.processes import RUN_ENV

OURS = Ours(run_ids=frozenset({"r0a1b2c"}), tags=frozenset({"check-1"}), ports=frozenset({21000, 21001}))


def test_run_marks_are_read_from_paths_cgroups_bridges_and_cni_names():
    assert inventory.run_marks("/var/lib/device-conformance/runs/r0a1b2c/etcd") == {"r0a1b2c"}
    assert inventory.run_marks("4:memory:/device-conformance-r0a1b2c/kubepods/pod1") == {"r0a1b2c"}
    assert inventory.run_marks("dcr0a1b2c") == {"r0a1b2c"}
    assert inventory.run_marks('name: "dc-r0a1b2c" id: "abc"') == {"r0a1b2c"}
    assert inventory.run_marks("/var/lib/kubelet /run/containerd dcr0a1b2") == frozenset()


def test_a_process_belongs_by_argv_cgroup_run_env_or_tag():
    by_argv = inventory.process_item(10, 1, ["etcd", "--data-dir=/x/runs/r0a1b2c/etcd"], {}, "")
    by_cgroup = inventory.process_item(11, 1, ["/pause"], {}, "3:cpu:/device-conformance-r0a1b2c/kubepods")
    by_env = inventory.process_item(12, 1, ["unshare", "--mount", "--", "sleep", "infinity"], {RUN_ENV: "r0a1b2c"}, "")
    by_tag = inventory.process_item(13, 1, ["python", "-m", "fake"], {inventory.TAG_ENV: "check-1"}, "")
    other = inventory.process_item(14, 1, ["etcd", "--data-dir=/x/runs/rffffff/etcd"], {inventory.TAG_ENV: "x"}, "")
    assert [OURS.owns(p) for p in (by_argv, by_cgroup, by_env, by_tag, other)] == [True, True, True, True, False]


def test_mounts_of_a_run_in_any_namespace():
    text = (
        "36 25 0:32 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
        "201 180 254:1 /var/lib/device-conformance/runs/r0a1b2c/node/kubelet /var/lib/kubelet rw - ext4 /dev/vda rw\n"
        "202 180 0:55 / /var/lib/device-conformance/runs/rffffff/containerd/x rw - overlay overlay rw\n"
    )
    items = inventory.parse_mountinfo(text, "mount namespace 4026532")
    assert [(i.key, OURS.owns(i)) for i in items] == [
        ("mount namespace 4026532:/var/lib/kubelet", True),
        ("mount namespace 4026532:/var/lib/device-conformance/runs/rffffff/containerd/x", False),
    ]


def test_a_veth_belongs_to_the_run_of_its_bridge_and_other_links_are_ignored():
    links = [
        {"ifname": "eth0", "linkinfo": {}},
        {"ifname": "dcr0a1b2c", "linkinfo": {"info_kind": "bridge"}},
        {"ifname": "veth1234", "master": "dcr0a1b2c", "linkinfo": {"info_kind": "veth"}},
        {"ifname": "veth9999", "master": "dcrffffff", "linkinfo": {"info_kind": "veth"}},
        {"ifname": "veth5555", "linkinfo": {"info_kind": "veth"}},
    ]
    items = inventory.parse_ip_links(json.dumps(links))
    assert [(i.key, OURS.owns(i)) for i in items] == [
        ("bridge:dcr0a1b2c", True),
        ("veth:veth1234", True),
        ("veth:veth9999", False),
        ("veth:veth5555", False),
    ]


def test_iptables_rules_naming_a_run_and_counters_do_not_make_a_rule_new():
    text = (
        "*nat\n:POSTROUTING ACCEPT [3:180]\n:CNI-abc - [0:0]\n"
        '-A POSTROUTING -s 10.88.0.5/32 -m comment --comment "name: \\"dc-r0a1b2c\\" id: \\"x\\"" -j CNI-abc\nCOMMIT\n'
    )
    items = inventory.parse_iptables_save(text)
    assert [OURS.owns(i) for i in items] == [False, False, True]
    again = inventory.parse_iptables_save(text.replace("[3:180]", "[9:540]"))
    assert [i.key for i in items] == [i.key for i in again]


def test_unix_sockets_and_listening_ports():
    unix = (
        "Num RefCount Protocol Flags Type St Inode Path\n"
        "0: 00000002 00000000 00010000 0001 01 69 /var/lib/device-conformance/runs/r0a1b2c/containerd/containerd.sock\n"
        "0: 00000002 00000000 00010000 0001 01 70 /tmp/other.sock\n"
    )
    assert [i.key for i in inventory.parse_proc_net_unix(unix)] == [
        "unix:/var/lib/device-conformance/runs/r0a1b2c/containerd/containerd.sock"
    ]
    tcp = (
        "  sl  local_address rem_address   st\n"
        "   0: 0100007F:5208 00000000:0000 0A 0\n"  # 127.0.0.1:21000 listening
        "   1: 0100007F:5209 0100007F:9999 01 0\n"  # 21001, established: not a listener
        "   2: 0100007F:5212 00000000:0000 0A 0\n"  # 21010, another run's block
    )
    ports = inventory.parse_proc_net_tcp(tcp, 21000, 25000)
    assert [(i.key, OURS.owns(i)) for i in ports] == [("127.0.0.1:21000", True), ("127.0.0.1:21010", False)]


def test_leaks_are_ours_and_new():
    before, after = Snapshot(), Snapshot()
    kept = Item("cgroup", "/sys/fs/cgroup/cpu/device-conformance-r0a1b2c", "x", frozenset({"r0a1b2c"}))
    before.add([kept])
    new_ours = Item("link", "bridge:dcr0a1b2c", "bridge dcr0a1b2c", frozenset({"r0a1b2c"}))
    new_theirs = Item("link", "bridge:dcrffffff", "bridge dcrffffff", frozenset({"rffffff"}))
    unmarked = Item("host-dir", "/var/lib/kubelet", "host mount point /var/lib/kubelet")
    after.add([kept, new_ours, new_theirs, unmarked])
    assert leaks(before, after, OURS) == [new_ours]


def test_a_live_tagged_process_is_found_and_gone_after_it_exits():
    """Against this host's /proc: a child carrying the tag shows as ours, and the diff is empty once it ended."""
    before = inventory.snapshot()
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], env={**os.environ, inventory.TAG_ENV: "check-1"}
    )
    try:
        # Waited for, not read once: a loaded host may show a just-started child's /proc entries late.
        from device_conformance.wait.core import Pending, until

        def seen():
            found = [i.key.split(":")[0] for i in leaks(before, inventory.snapshot(), OURS)]
            return True if found == [str(child.pid)] else Pending(f"ours: {found}")

        until(seen, what=f"the tagged child {child.pid}, and only it, to show as ours", timeout=10)
    finally:
        child.kill()
        child.wait()
    assert leaks(before, inventory.snapshot(), OURS) == []
