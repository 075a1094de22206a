"""The CRI proxy over real gRPC on Unix sockets, between a client playing the kubelet and an in-process runtime
playing containerd: every call passes through unchanged (unary, server-streaming, a method the proxy has never
heard of, the ImageService, the runtime's own errors), each fault changes exactly the calls it names, the call log
records every call, and a bad fault gets an error naming the fix."""

import dataclasses
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent import futures
from pathlib import Path

import grpc
import pytest

from device_conformance.core.errors import BadInput
from device_conformance.fakes.common.control import ControlError
from device_conformance.fakes.cri_proxy import CRIProxyConfig, CRIProxyHandle, is_snapshot
from device_conformance.fakes.cri_proxy.config import CRIProxyConfig as Config
from device_conformance.protos.cri.v1 import api_pb2 as cri
from device_conformance.protos.cri.v1 import api_pb2_grpc as cri_grpc

RUNTIME = "/runtime.v1.RuntimeService/"
# A field our CRI subset lacks (Container.image = 4, an ImageSpec whose image = 1): the proxy must keep it.
IMAGE_FIELD = b"\x22\x09\x0a\x07busybox"
EVENTS = [b"\x0a\x02c1", b"\x0a\x02c2", b"\x0a\x02c3"]


def container(cid, name, pod, state=cri.CONTAINER_RUNNING):
    namespace, pod_name = pod.split("/")
    labels = {"io.kubernetes.pod.namespace": namespace, "io.kubernetes.pod.name": pod_name}
    message = cri.Container(
        id=cid, pod_sandbox_id=f"sb-{pod_name}", metadata=cri.ContainerMetadata(name=name), state=state, labels=labels
    )
    return message.SerializeToString() + IMAGE_FIELD


CONTAINERS = [container("c1", "main", "ns/p1"), container("c2", "side", "ns/p1"), container("c3", "main", "ns/p2")]
LIST_ANSWER = b"".join(b"\x0a" + bytes([len(c)]) + c for c in CONTAINERS)  # ListContainersResponse.containers = 1


class Runtime(grpc.GenericRpcHandler):
    """Plays containerd: fixed answers, every call counted by method."""

    def __init__(self):
        self.seen: list[str] = []
        self.metadata: list[dict] = []

    def service(self, details):
        method = details.method.rpartition("/")[2]

        def unary(request, context):
            self.seen.append(method)
            self.metadata.append(dict(context.invocation_metadata()))
            if method == "ListContainers":
                return LIST_ANSWER
            if method == "ListPodSandbox":
                return cri.ListPodSandboxResponse(items=[cri.PodSandbox(id="sb-p1")]).SerializeToString()
            if method == "ContainerStatus":
                if cri.ContainerStatusRequest.FromString(request).container_id == "missing":
                    context.abort(grpc.StatusCode.NOT_FOUND, "an error occurred when try to find container")
                return cri.ContainerStatusResponse(status=cri.ContainerStatus(id="c1")).SerializeToString()
            if method == "Version":
                return cri.VersionResponse(runtime_name="containerd", runtime_version="v2.2.1").SerializeToString()
            return b"image-answer:" + request

        def events(request, context):
            self.seen.append(method)
            yield from EVENTS

        def echo(requests, context):
            self.seen.append(method)
            for request in requests:
                yield b"echo:" + request

        if method == "GetContainerEvents":
            return grpc.unary_stream_rpc_method_handler(events)
        if method == "FutureBidi":
            return grpc.stream_stream_rpc_method_handler(echo)
        return grpc.unary_unary_rpc_method_handler(unary)


@pytest.fixture(scope="module")
def root():
    path = Path(tempfile.mkdtemp(prefix="crip-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def runtime(root):
    handler = Runtime()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    server.add_generic_rpc_handlers((handler,))
    server.add_insecure_port(f"unix://{root}/runtime.sock")
    server.start()
    yield handler
    server.stop(0).wait()


@pytest.fixture(scope="module")
def module_proxy(root, runtime):
    handle = CRIProxyHandle.start(
        CRIProxyConfig(socket=str(root / "proxy.sock"), upstream=str(root / "runtime.sock")), root / "work"
    )
    yield handle
    handle.cleanup()


@pytest.fixture
def proxy(module_proxy, runtime):
    """The module's proxy, no fault left from the test before, the runtime's record emptied."""
    runtime.seen.clear()
    runtime.metadata.clear()
    yield module_proxy
    module_proxy.clear_faults()


@pytest.fixture
def channel(module_proxy):
    with grpc.insecure_channel(f"unix://{module_proxy.config.socket}") as ch:
        yield ch


def raw(channel, method, request=b"", **kwargs):
    return channel.unary_unary(RUNTIME + method)(request, timeout=10, **kwargs)


def list_containers(channel, **filter_fields):
    request = (
        cri.ListContainersRequest(filter=cri.ContainerFilter(**filter_fields))
        if filter_fields
        else cri.ListContainersRequest()
    )
    return raw(channel, "ListContainers", request.SerializeToString())


def names(answer):
    return [
        (c.metadata.name, c.labels["io.kubernetes.pod.name"])
        for c in cri.ListContainersResponse.FromString(answer).containers
    ]


def new_calls(proxy, before, method=None):
    return proxy.calls(method)[before:] if method else proxy.calls()[before:]


# -- pass-through ---------------------------------------------------------------------------------------------


def test_every_kind_of_call_passes_through_unchanged(proxy, runtime, channel):
    assert list_containers(channel) == LIST_ANSWER  # byte for byte, the unknown image field included
    version = cri_grpc.RuntimeServiceStub(channel).Version(cri.VersionRequest(version="v1"), timeout=10)
    assert (version.runtime_name, version.runtime_version) == ("containerd", "v2.2.1")
    assert channel.unary_unary("/runtime.v1.ImageService/ListImages")(b"q", timeout=10) == b"image-answer:q"
    events = channel.unary_stream(RUNTIME + "GetContainerEvents")(b"", timeout=10)
    assert list(events) == EVENTS
    echoed = channel.stream_stream(RUNTIME + "FutureBidi")(iter([b"a", b"b"]), timeout=10)
    assert list(echoed) == [b"echo:a", b"echo:b"]
    assert runtime.seen == ["ListContainers", "Version", "ListImages", "GetContainerEvents", "FutureBidi"]


def test_the_runtimes_own_error_reaches_the_caller_with_its_code(proxy, channel):
    request = cri.ContainerStatusRequest(container_id="missing").SerializeToString()
    with pytest.raises(grpc.RpcError) as failed:
        raw(channel, "ContainerStatus", request)
    assert (failed.value.code(), failed.value.details()) == (
        grpc.StatusCode.NOT_FOUND,
        "an error occurred when try to find container",
    )
    [call] = proxy.calls("ContainerStatus")[-1:]
    assert (call.outcome(), call.request) == ("error NOT_FOUND", {"container_id": "missing", "verbose": False})


def test_the_callers_headers_reach_the_runtime(proxy, runtime, channel):
    raw(channel, "Version", metadata=[("x-dc-probe", "yes")])
    assert runtime.metadata[-1].get("x-dc-probe") == "yes"


# -- faults ---------------------------------------------------------------------------------------------------


def test_fail_for_the_next_calls_ends_them_with_the_code_and_never_asks_the_runtime(proxy, runtime, channel):
    before = len(proxy.calls("ListContainers"))
    proxy.fail("ListContainers", "UNAVAILABLE", "runtime restarting", times=2)
    codes = []
    for _ in range(3):
        try:
            list_containers(channel)
            codes.append("OK")
        except grpc.RpcError as err:
            codes.append(f"{err.code().name} {err.details()}")
    assert codes == ["UNAVAILABLE runtime restarting", "UNAVAILABLE runtime restarting", "OK"]
    assert [c.outcome() for c in new_calls(proxy, before, "ListContainers")] == ["error UNAVAILABLE"] * 2 + ["ok"]
    assert runtime.seen == ["ListContainers"]  # only the third reached the runtime


def test_fail_until_cleared_holds_until_clear_faults(proxy, channel):
    proxy.fail("ListPodSandbox", "INTERNAL", "broken")
    for _ in range(3):
        with pytest.raises(grpc.RpcError) as failed:
            raw(channel, "ListPodSandbox", cri.ListPodSandboxRequest().SerializeToString())
        assert failed.value.code() == grpc.StatusCode.INTERNAL
    proxy.clear_faults()
    answer = raw(channel, "ListPodSandbox", cri.ListPodSandboxRequest().SerializeToString())
    assert [s.id for s in cri.ListPodSandboxResponse.FromString(answer).items] == ["sb-p1"]
    assert proxy.calls("ListPodSandbox")[-1].response == {"sandboxes": [{"id": "sb-p1", "pod": "/"}]}


def test_delay_holds_the_next_call_only(proxy, channel):
    request = cri.ContainerStatusRequest(container_id="c1").SerializeToString()
    proxy.delay("ContainerStatus", 0.6, times=1)
    took = []
    for _ in range(2):
        start = time.monotonic()
        raw(channel, "ContainerStatus", request)
        took.append(time.monotonic() - start)
    assert took[0] >= 0.6 and took[1] < 0.6, f"the calls took {took} s"
    first, second = proxy.calls("ContainerStatus")[-2:]
    assert first.ended_mono - first.started_mono >= 0.6 and (first.ok, second.ok) == (True, True)


def test_a_block_holds_the_call_until_unblocked(proxy, channel):
    proxy.block("ListContainers")
    answers = []
    thread = threading.Thread(target=lambda: answers.append(list_containers(channel)))
    thread.start()
    proxy.wait_for_blocked("ListContainers")
    assert answers == []
    proxy.unblock("ListContainers")
    thread.join(10)
    assert answers == [LIST_ANSWER]


def test_drop_by_container_name_leaves_out_every_container_of_that_name_and_nothing_else(proxy, channel):
    proxy.drop(container="main", times=1)
    thinned = list_containers(channel)
    assert names(thinned) == [("side", "p1")]
    kept = cri.ListContainersResponse(containers=[cri.Container.FromString(CONTAINERS[1])])
    assert cri.ListContainersResponse.FromString(thinned) == kept
    assert IMAGE_FIELD in thinned  # the field our subset lacks, kept for the kubelet
    assert names(list_containers(channel)) == [("main", "p1"), ("side", "p1"), ("main", "p2")]  # times=1 used up
    dropped = proxy.calls("ListContainers")[-2].response["dropped"]
    assert [(d["id"], d["name"], d["pod"], d["state"]) for d in dropped] == [
        ("c1", "main", "ns/p1", "CONTAINER_RUNNING"),
        ("c3", "main", "ns/p2", "CONTAINER_RUNNING"),
    ]


def test_drop_by_pod_leaves_out_that_pods_containers_until_cleared(proxy, channel):
    proxy.drop(pod="ns/p1")
    assert names(list_containers(channel)) == [("main", "p2")]
    assert names(list_containers(channel, state=cri.ContainerStateValue(state=cri.CONTAINER_RUNNING))) == [
        ("main", "p2")
    ]
    proxy.clear_faults()
    assert len(names(list_containers(channel))) == 3


def test_a_drop_that_names_nothing_listed_passes_the_answer_byte_for_byte(proxy, channel):
    proxy.drop(pod="ns/absent", times=1)
    assert list_containers(channel) == LIST_ANSWER
    assert proxy.calls("ListContainers")[-1].response["dropped"] == []


def test_faults_do_not_touch_the_methods_they_do_not_name(proxy, channel):
    proxy.fail("ListContainers", "UNAVAILABLE")
    proxy.drop(container="main")
    assert raw(channel, "ListPodSandbox", cri.ListPodSandboxRequest().SerializeToString())
    assert cri.VersionResponse.FromString(raw(channel, "Version")).runtime_name == "containerd"


# -- the call log ---------------------------------------------------------------------------------------------


def test_the_call_log_tells_the_snapshot_from_the_runtime_managers_listings(proxy, channel):
    before = len(proxy.calls())
    list_containers(channel)  # no filter: the container manager's snapshot at start
    list_containers(channel, state=cri.ContainerStateValue(state=cri.CONTAINER_RUNNING))
    raw(channel, "Version")
    calls = new_calls(proxy, before)
    assert [(c.method, c.service, c.outcome(), is_snapshot(c)) for c in calls] == [
        ("ListContainers", "runtime.v1.RuntimeService", "ok", True),
        ("ListContainers", "runtime.v1.RuntimeService", "ok", False),
        ("Version", "runtime.v1.RuntimeService", "ok", False),
    ]
    assert calls[0].request == {} and calls[1].request["filter"]["state"] == {"state": "CONTAINER_RUNNING"}
    assert [c["name"] for c in calls[0].response["containers"]] == ["main", "side", "main"]
    assert all(c.started_wall and c.ended_mono >= c.started_mono for c in calls)
    assert [c.seq for c in calls] == list(range(calls[0].seq, calls[0].seq + 3))
    assert proxy.snapshots()[-1].seq == calls[0].seq


def test_a_call_the_caller_abandons_while_held_is_logged_cancelled(proxy, channel):
    before = len(proxy.calls("ListContainers"))
    proxy.block("ListContainers")
    with pytest.raises(grpc.RpcError) as failed:
        channel.unary_unary(RUNTIME + "ListContainers")(b"", timeout=0.5)
    assert failed.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    [call] = proxy.wait(
        "the abandoned call to end", lambda: [c for c in new_calls(proxy, before, "ListContainers") if c.done] or None
    )
    assert call.outcome() == "error CANCELLED"


# -- bad input ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("inject", "says"),
    [
        (lambda p: p.fail("ListContainer"), "unknown CRI method 'ListContainer'; use one of ['ListPodSandbox', "),
        (lambda p: p.fail("ListContainers", "NOPE"), "unknown gRPC status code 'NOPE'; use one of"),
        (lambda p: p.fail("ListContainers", times=0), "times=0: a fault applies to at least 1 call; give None"),
        (lambda p: p.delay("ContainerStatus", -1), "a delay of -1 seconds: give seconds >= 0"),
        (lambda p: p.fail_claims("ListContainers", "x"), "ListContainers has no per-claim errors; give a gRPC code"),
        (lambda p: p.drop(container="main", times=-2), "times=-2: a fault applies to at least 1 call"),
        (lambda p: p.drop(pod="no-namespace"), "drop target 'pod=no-namespace': give 'container=NAME' (a container"),
        (
            lambda p: p.control("add_fault", fault={"method": "ListPodSandbox", "action": "drop", "target": "pod=a/b"}),
            "ListPodSandbox answers have nothing to drop; drops apply to ['ListContainers']",
        ),
        (
            lambda p: p.control("add_fault", fault={"method": "ListContainers", "container": "main"}),
            "unknown fault field(s) ['container']; a fault has ['method', 'action', ",
        ),
        (
            lambda p: p.control("add_fault", fault={"method": "ListContainers", "target": "container=main"}),
            "target='container=main' is for action 'drop' only",
        ),
    ],
)
def test_a_bad_fault_is_refused_with_the_fix_and_changes_nothing(proxy, channel, inject, says):
    with pytest.raises(ControlError, match=None) as refused:
        inject(proxy)
    assert says in str(refused.value)
    assert proxy.status()["faults"] == []
    assert list_containers(channel) == LIST_ANSWER


def test_drop_names_exactly_one_target(proxy):
    for kwargs in ({}, {"container": "main", "pod": "ns/p1"}):
        with pytest.raises(BadInput, match=r"(?s)name exactly one.*give one of 'container=NAME'"):
            proxy.drop(**kwargs)


def test_a_bad_config_file_stops_the_proxy_with_the_fix(root):
    bad = root / "bad.json"
    bad.write_text(json.dumps({"socket": "/tmp/x.sock"}))
    with pytest.raises(BadInput, match=r"(?s)it takes socket and upstream.*CRIProxyConfig\(\.\.\.\)\.save"):
        Config.load(bad)
    proc = subprocess.run(
        [sys.executable, "-m", "device_conformance.fakes.cri_proxy", "--config", str(bad)],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2 and "it takes socket and upstream" in proc.stderr.decode(), proc.stderr.decode()


# -- the process ----------------------------------------------------------------------------------------------


def test_stop_and_sigkill_leave_nothing_serving_and_respawn_continues_the_call_log(root, runtime):
    config = CRIProxyConfig(socket=str(root / "p2.sock"), upstream=str(root / "runtime.sock"))
    handle = CRIProxyHandle.start(config, root / "work2")
    try:
        with grpc.insecure_channel(f"unix://{config.socket}") as ch:
            raw(ch, "Version")
        handle.kill()
        assert Path(config.socket).is_socket()  # a crash leaves its socket, as a crashed runtime shim would
        handle.respawn()
        with grpc.insecure_channel(f"unix://{config.socket}") as ch:
            raw(ch, "Version")
        assert [(c.method, c.pid) for c in handle.calls()] == [("Version", c.pid) for c in handle.calls()]
        assert len({c.pid for c in handle.calls()}) == 2 and [c.seq for c in handle.calls()] == [1, 2]
        assert handle.stop() == 0
        assert not Path(config.socket).exists() and not Path(handle.control_socket).exists()
    finally:
        handle.cleanup()
    assert not handle.is_running()


def test_the_proxy_exits_once_the_process_that_started_it_is_gone(root, runtime):
    config = dataclasses.replace(
        CRIProxyConfig(socket=str(root / "p3.sock"), upstream=str(root / "runtime.sock")),
        control_socket=str(root / "p3.ctl"),
        call_log=str(root / "p3.jsonl"),
    )
    config.save(root / "p3.json")
    # A parent pid that is not ours: the proxy finds its parent is someone else at once and stops.
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "device_conformance.fakes.cri_proxy",
            "--config",
            str(root / "p3.json"),
            "--exit-with-parent",
            "1",
        ],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    assert not Path(config.socket).exists() and not Path(config.control_socket).exists()
