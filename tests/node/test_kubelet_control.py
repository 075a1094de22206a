"""KubeletControl and NodeControl (written once for every provider) against a fake transport: the order of
the primitives they call, what they wait for, and how they recover."""

from __future__ import annotations

import signal
import time
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

import pytest

from device_conformance.core.errors import BadInput, CommandError, ConformanceError, WaitTimeout
from device_conformance.expectations.versions import KubeVersion
from device_conformance.node import kubelet as kubelet_module
from device_conformance.node.base import NodeControl
from device_conformance.node.kubelet import KubeletControl
from device_conformance.node.transport import KubeletService, NodeTransport


class FakeService:
    """A kubelet under a supervisor, in memory. `restarts_after_kill`: how many pid() looks it takes the
    supervisor to start a SIGKILLed kubelet again (None: never, like a dead local child process)."""

    def __init__(self, restarts_after_kill: int | None = 2) -> None:
        self.calls: list[tuple] = []
        self.running_pid = 100
        self.frozen = False
        self.log: list[str] = ["boot"]
        self.restarts_after_kill = restarts_after_kill
        self._countdown: int | None = None
        self.start_fails_with: str | None = None  # the kubelet exits at once, for this reason

    def start(self, binary, version):
        self.calls.append(("start", binary, version))
        if self.start_fails_with is not None:
            self.log.append(f"fatal: {self.start_fails_with}")
            return
        self.running_pid += 1
        self.log.append(f"started {binary or 'own'} pid {self.running_pid}")

    def stop(self):
        self.calls.append(("stop",))
        assert not self.frozen, "stop() of a frozen kubelet would hang: thaw first"
        self.running_pid = 0

    def pid(self):
        if self._countdown is not None:
            self._countdown -= 1
            if self._countdown <= 0:
                self._countdown = None
                self.running_pid = 500
        return self.running_pid

    def signal(self, sig):
        self.calls.append(("signal", sig))
        if self.running_pid <= 0:
            raise ConformanceError("no kubelet runs")
        if sig == signal.SIGSTOP:
            self.frozen = True
        elif sig == signal.SIGCONT:
            self.frozen = False
        elif sig == signal.SIGKILL:
            self.running_pid = 0
            self._countdown = self.restarts_after_kill

    def healthy(self):
        return self.running_pid > 0 and not self.frozen and self.start_fails_with is None

    def exited(self):
        if self.start_fails_with is not None:
            return "exited with status 1"
        return None

    def log_mark(self):
        return len(self.log)

    def log_since(self, mark):
        return "\n".join(self.log[mark:])


def primitives(service: FakeService) -> list[str]:
    return [call[0] if call[0] != "signal" else f"signal {call[1].name}" for call in service.calls]


@pytest.fixture
def service() -> FakeService:
    return FakeService()


@pytest.fixture
def kubelet(service) -> KubeletControl:
    return KubeletControl("node-a", service)


def test_the_fake_is_a_kubelet_service(service):
    assert isinstance(service, KubeletService)


def test_restart_thaws_stops_then_starts_the_same_kubelet(kubelet, service):
    kubelet.restart()
    assert primitives(service) == ["signal SIGCONT", "stop", "start"]
    assert service.calls[-1] == ("start", None, None)
    assert kubelet.healthy()


def test_restart_of_a_frozen_kubelet_thaws_it_before_the_stop(kubelet, service):
    kubelet.freeze()
    assert not kubelet.healthy()
    kubelet.restart()
    assert kubelet.healthy()


def test_a_swapped_in_kubelet_survives_restart_until_start_without_arguments(kubelet, service):
    previous = Path("/cache/v1.36.4/kubelet")
    version = KubeVersion.parse("1.36.4")
    kubelet.stop()
    kubelet.start(previous, version)
    kubelet.restart()
    assert service.calls[-1] == ("start", previous, version)
    kubelet.stop()
    kubelet.start()
    assert service.calls[-1] == ("start", None, None)


def test_start_refuses_a_running_kubelet(kubelet, service):
    with pytest.raises(ConformanceError, match="already running"):
        kubelet.start()
    assert "start" not in primitives(service)


def test_start_with_a_version_needs_the_binary(kubelet, service):
    kubelet.stop()
    with pytest.raises(BadInput, match="without its binary"):
        kubelet.start(version=KubeVersion.parse("1.36.4"))
    assert "start" not in primitives(service)


def test_stop_of_a_stopped_kubelet_sends_no_signal(kubelet, service):
    kubelet.stop()
    service.calls.clear()
    kubelet.stop()
    assert primitives(service) == ["stop"]


def test_stopped_starts_the_kubelet_again_after_the_body(kubelet, service):
    with kubelet.stopped():
        assert kubelet.pid() == 0
    assert primitives(service) == ["signal SIGCONT", "stop", "start"]
    assert kubelet.healthy()


def test_stopped_starts_the_kubelet_again_when_the_body_raised(kubelet, service):
    with pytest.raises(RuntimeError, match="body failed"), kubelet.stopped():
        raise RuntimeError("body failed")
    assert primitives(service)[-1] == "start"
    assert kubelet.healthy()


def test_stopped_leaves_a_kubelet_the_body_started(kubelet, service):
    with kubelet.stopped():
        kubelet.start()
    assert primitives(service).count("start") == 1


def test_crash_sigkills_and_waits_for_the_supervisor_to_bring_a_new_pid(kubelet, service):
    killed = kubelet.pid()
    kubelet.crash()
    assert ("signal", signal.SIGKILL) in service.calls
    assert "start" not in primitives(service), "the supervisor restarts it, not the harness"
    assert kubelet.pid() not in (0, killed)
    assert kubelet.healthy()


def test_crash_fails_when_the_supervisor_does_not_restart_it(monkeypatch):
    monkeypatch.setattr(kubelet_module, "CRASH_RESTART_TIMEOUT", 0.5)
    kubelet = KubeletControl("node-a", FakeService(restarts_after_kill=None))
    with pytest.raises(ConformanceError, match="restart the SIGKILLed kubelet"):
        kubelet.crash()


def test_crash_without_a_kubelet_is_an_error(kubelet, service):
    kubelet.stop()
    with pytest.raises(ConformanceError, match="no kubelet runs"):
        kubelet.crash()


def test_freeze_and_thaw_are_sigstop_and_sigcont(kubelet, service):
    kubelet.freeze()
    kubelet.thaw()
    assert primitives(service) == ["signal SIGSTOP", "signal SIGCONT"]
    kubelet.wait_healthy(timeout=1)


def test_a_kubelet_that_exits_at_start_ends_the_wait_at_once_with_its_log(kubelet, service):
    kubelet.stop()
    service.start_fails_with = "checkpoint is corrupted"
    with pytest.raises(ConformanceError) as failure:
        kubelet.start()
    message = str(failure.value)
    assert "exited with status 1" in message
    assert "fatal: checkpoint is corrupted" in message
    assert "boot" not in message, "only what the kubelet logged since this start"


def test_log_since_a_mark_has_only_what_came_after(kubelet, service):
    mark = kubelet.log_mark()
    kubelet.restart()
    assert kubelet.log_since(mark) == f"started own pid {kubelet.pid()}"


# -- NodeControl: files and the reboot simulation over a fake transport ------------------------


class FakeCRI:
    def __init__(self, sandboxes: list[str], calls: list[tuple], fail: bool = False) -> None:
        self.ids, self.calls, self.fail = sandboxes, calls, fail

    def container_annotations(self, container_id):
        self.calls.append(("container_annotations", container_id))
        return {"dc.example.com/devices": "dev-1"}

    def remove_all_sandboxes(self):
        self.calls.append(("remove_all_sandboxes",))
        if self.fail:
            raise RuntimeError("CRI broke")
        removed, self.ids[:] = list(self.ids), []
        return removed


class FakeTransport:
    def __init__(self, host_dir: Path) -> None:
        self.name = "node-a"
        self.mounts = {PurePosixPath("/var/lib/kubelet/device-plugins"): host_dir}
        self.kubelet_service = FakeService()
        self.commands: list[tuple[list[str], bytes | None]] = []
        self.sandboxes = ["sb-1", "sb-2"]
        self.cri_fails = False

    def run(self, argv, *, stdin=None, check=True, timeout=120):
        self.commands.append((list(argv), stdin))
        if argv[0] == "cat":
            raise CommandError(list(argv), 1, f"cat: {argv[1]}: No such file or directory")
        return b""

    @contextmanager
    def cri(self):
        yield FakeCRI(self.sandboxes, self.kubelet_service.calls, self.cri_fails)


@pytest.fixture
def transport(tmp_path) -> FakeTransport:
    return FakeTransport(tmp_path)


def test_the_fake_is_a_node_transport(transport):
    assert isinstance(transport, NodeTransport)


def test_reboot_simulation_stops_removes_every_sandbox_then_starts(transport):
    node = NodeControl(transport)
    assert node.simulate_reboot() == 2
    assert primitives(transport.kubelet_service) == ["signal SIGCONT", "stop", "remove_all_sandboxes", "start"]
    assert node.kubelet.healthy()


def test_reboot_simulation_starts_the_kubelet_even_when_cri_fails(transport):
    transport.cri_fails = True
    node = NodeControl(transport)
    with pytest.raises(RuntimeError, match="CRI broke"):
        node.simulate_reboot()
    assert primitives(transport.kubelet_service)[-1] == "start"
    assert node.kubelet.healthy()


def test_mounted_paths_are_files_on_the_host(transport, tmp_path):
    node = NodeControl(transport)
    path = "/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"
    assert node.host_path(path) == tmp_path / "kubelet_internal_checkpoint"
    node.write_file(path, b"data", mode=0o640)
    assert (tmp_path / "kubelet_internal_checkpoint").stat().st_mode & 0o777 == 0o640
    assert node.read_file(path) == b"data"
    node.delete_file(path)
    node.delete_file(path)  # already gone: fine
    assert node.list_sockets("/var/lib/kubelet/device-plugins") == []
    assert transport.commands == []


def test_other_paths_go_through_commands_on_the_node(transport):
    node = NodeControl(transport)
    path = "/var/lib/kubelet/dra_manager_state"
    with pytest.raises(BadInput, match="not bind-mounted from the host on node node-a"):
        node.host_path(path)
    node.write_file(path, b"{}", mode=0o644)
    argv, stdin = transport.commands[-1]
    assert argv[:2] == ["sh", "-c"] and argv[-2:] == [path, "644"] and stdin == b"{}"
    with pytest.raises(FileNotFoundError, match="No such file"):
        node.read_file(path)
    node.delete_file(path)
    assert transport.commands[-1] == (["rm", "-f", path], None)
    node.delete_dir("/var/lib/kubelet/dc-trigger-1")
    assert transport.commands[-1] == (["rmdir", "--", "/var/lib/kubelet/dc-trigger-1"], None)


def test_delete_dir_removes_an_empty_mounted_directory_only(transport, tmp_path):
    node = NodeControl(transport)
    (tmp_path / "empty").mkdir()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "exit").write_bytes(b"")
    node.delete_dir("/var/lib/kubelet/device-plugins/empty")
    node.delete_dir("/var/lib/kubelet/device-plugins/full")
    node.delete_dir("/var/lib/kubelet/device-plugins/absent")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full"]
    assert (tmp_path / "full" / "exit").exists()
    assert transport.commands == []


def test_container_annotations_take_the_id_as_the_pod_status_gives_it(transport):
    node = NodeControl(transport)
    assert node.container_annotations("containerd://c0ffee") == {"dc.example.com/devices": "dev-1"}
    assert node.container_annotations("c0ffee") == {"dc.example.com/devices": "dev-1"}
    assert [c for c in transport.kubelet_service.calls if c[0] == "container_annotations"] == [
        ("container_annotations", "c0ffee"),
        ("container_annotations", "c0ffee"),
    ]


def test_a_node_without_command_prefix_names_the_fix_and_one_with_it_gives_its_words(transport):
    """NodeControl.command_prefix (the {on_node} placeholder of --vendor-command): the provider's words, or a
    refusal naming the fix where the provider cannot host a supervised process."""
    node = NodeControl(transport)
    with pytest.raises(BadInput, match="cannot run a host-supervised process") as raised:
        node.command_prefix()
    assert "use the local provider" in raised.value.fix
    transport.command_prefix = lambda: ["nsenter", "--target=7", "--mount", "--"]
    assert node.command_prefix() == ["nsenter", "--target=7", "--mount", "--"]


# -- restart() to the node Ready, through the node_ready seam (the API's view, wired by fixtures/cluster.py) ------


class FakeReadiness:
    """The node_ready seam over a fake API: noting the old kubelet's last status is a "note" in the service's call
    list, each look at the API a "check"; the check holds from the `holds_at`-th look on (None: never), and until
    then says `seen`."""

    def __init__(self, service: FakeService, holds_at: int | None = 3, seen: str = "no status posted since") -> None:
        self.service, self.holds_at, self.seen = service, holds_at, seen
        self.looks = 0

    def __call__(self):
        self.service.calls.append(("note",))

        def check() -> str | None:
            self.looks += 1
            self.service.calls.append(("check",))
            return None if self.holds_at is not None and self.looks >= self.holds_at else f"{self.seen} ({self.looks})"

        return check


@pytest.fixture(autouse=True)
def short_status_second(monkeypatch):
    """The pause that makes the new kubelet's status second a later one than the old one's, shortened."""
    monkeypatch.setattr(kubelet_module, "STATUS_TIME_RESOLUTION", 0.05)


def test_restart_returns_once_the_node_is_ready_in_a_status_of_the_new_kubelet(service):
    readiness = FakeReadiness(service, holds_at=3)
    kubelet = KubeletControl("node-a", service, node_ready=readiness)
    kubelet.restart()
    # Noted with the old kubelet stopped (nothing it posts comes after), looked at once the new one answers.
    assert primitives(service) == ["signal SIGCONT", "stop", "note", "start", "check", "check", "check"]
    assert readiness.looks == 3, "restart() returned before the check held"


def test_the_new_kubelet_starts_a_status_time_second_after_the_old_one_stopped(monkeypatch, service):
    # Sooner, its first status can be the old one's to the second: the same status, nothing in the API to wait on.
    monkeypatch.setattr(kubelet_module, "STATUS_TIME_RESOLUTION", 0.3)
    stopped_at = []

    def stop():
        FakeService.stop(service)
        stopped_at.append(time.monotonic())

    def start(binary, version):
        service.calls.append(("started after", time.monotonic() - stopped_at[-1]))
        FakeService.start(service, binary, version)

    service.stop, service.start = stop, start
    kubelet = KubeletControl("node-a", service, node_ready=FakeReadiness(service, holds_at=1))
    kubelet.restart()
    [(_, after)] = [call for call in service.calls if call[0] == "started after"]
    assert after >= 0.3, f"the kubelet started {after:.3f}s after the old one stopped"
    service.calls.clear()
    kubelet.restart(wait_ready=False)
    [(_, after)] = [call for call in service.calls if call[0] == "started after"]
    assert after < 0.3, f"wait_ready=False: the kubelet started {after:.3f}s after the old one stopped"


def test_restart_with_wait_ready_off_returns_at_healthz(service):
    kubelet = KubeletControl("node-a", service, node_ready=FakeReadiness(service, holds_at=None))
    kubelet.restart(wait_ready=False)
    assert primitives(service) == ["signal SIGCONT", "stop", "start"]


def test_restart_of_a_node_without_the_seam_returns_at_healthz(kubelet, service):
    kubelet.restart()
    assert primitives(service) == ["signal SIGCONT", "stop", "start"]


def test_a_node_that_never_gets_ready_fails_naming_what_was_awaited_and_last_seen(monkeypatch, service):
    monkeypatch.setattr(kubelet_module, "READY_TIMEOUT", 0.5)
    seen = "Ready=True (KubeletReady) with lastHeartbeatTime 2026-11-28T02:50:01+00:00: no status posted since"
    kubelet = KubeletControl("node-a", service, node_ready=FakeReadiness(service, holds_at=None, seen=seen))
    with pytest.raises(WaitTimeout) as failure:
        kubelet.restart()
    message = str(failure.value)
    assert "node node-a to be Ready in a status posted by its restarted kubelet" in message
    assert f"last seen: {seen} (" in message
    assert kubelet.healthy(), "the kubelet runs; only the node's status is late"


def test_a_kubelet_that_exits_before_it_posts_ready_ends_the_wait_at_once_with_its_log(monkeypatch, service):
    monkeypatch.setattr(kubelet_module, "READY_TIMEOUT", 30)

    def node_ready():
        def check():
            # The new kubelet answered /healthz, then exits while the node's status is still NotReady.
            service.log.append('E1128 run.go:72] "command failed" err="failed to run Kubelet"')
            service.start_fails_with = "gone after healthz"  # exited() answers from now on
            return "Ready=False (KubeletNotReady)"

        return check

    kubelet = KubeletControl("node-a", service, node_ready=node_ready)
    with pytest.raises(ConformanceError) as failure:
        kubelet.restart()
    assert not isinstance(failure.value, WaitTimeout), "waited out READY_TIMEOUT for a kubelet that had exited"
    message = str(failure.value)
    assert "exited with status 1 before it posted a Ready status; last seen: Ready=False (KubeletNotReady)" in message
    assert "failed to run Kubelet" in message, "the kubelet's log since its start"


def test_restart_starts_the_kubelet_again_when_the_api_does_not_answer(service):
    def api_down():
        raise ConnectionRefusedError("the API server does not answer")

    kubelet = KubeletControl("node-a", service, node_ready=api_down)
    with pytest.raises(ConnectionRefusedError):
        kubelet.restart()
    assert primitives(service) == ["signal SIGCONT", "stop", "start"]
    assert kubelet.healthy()


def test_crash_start_and_stopped_return_at_healthz_as_before(service):
    kubelet = KubeletControl("node-a", service, node_ready=FakeReadiness(service, holds_at=None))
    kubelet.crash()
    with kubelet.stopped():
        pass
    kubelet.stop()
    kubelet.start()
    assert "note" not in primitives(service) and "check" not in primitives(service)
