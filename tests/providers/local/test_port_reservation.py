"""Port blocks of local clusters started at the same moment (xdist workers) never collide."""

import threading
import time

from device_conformance.providers.local import ports


def test_a_block_is_reserved_under_the_lock_so_simultaneous_runs_never_share_it(monkeypatch, tmp_path):
    # The second run must see the first one's block as taken although nothing listens on it yet (etcd
    # starts seconds later): the block is recorded under the same lock the second run reads under.
    monkeypatch.delenv("DEVICE_CONFORMANCE_BASE_PORT", raising=False)
    recorded: set[int] = set()
    in_reserve = threading.Event()
    chosen: list[int] = []

    def slow_reserve(block):
        in_reserve.set()
        time.sleep(0.5)  # the gap between choosing a block and writing it to the state file
        recorded.add(block.etcd_client)

    def first_run():
        chosen.append(ports.allocate(tmp_path, lambda: set(recorded), slow_reserve).etcd_client)

    first = threading.Thread(target=first_run)
    first.start()
    assert in_reserve.wait(5)
    second = ports.allocate(tmp_path, lambda: set(recorded), lambda block: recorded.add(block.etcd_client))
    first.join(5)
    assert chosen, "the first run got no block"
    assert second.etcd_client != chosen[0], f"both runs got the block at {second.etcd_client}"


def test_a_pinned_block_is_reserved_too(monkeypatch, tmp_path):
    monkeypatch.setenv("DEVICE_CONFORMANCE_BASE_PORT", "29990")
    reserved = []
    assert ports.allocate(tmp_path, set(), reserved.append).etcd_client == 29990
    assert [block.etcd_client for block in reserved] == [29990]
