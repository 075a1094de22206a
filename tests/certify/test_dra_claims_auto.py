"""`certify dra-driver --claims auto` (certify/dra_auto_claims.py): the claims, allocations and reservations made
from a driver's ResourceSlices (exact objects), the devices picked, every bad input as one error with nothing
left, and the deletion on every way out. No cluster: an in-memory API server stands in (FakeApi)."""

from __future__ import annotations

import copy
import signal
import time
from typing import Any

import pytest
from certify_subjects import ALLOCATED, CLAIMS, run_dra_driver

from device_conformance.certify import dra_auto_claims as auto
from device_conformance.certify import dra_claims
from device_conformance.certify.dra_auto_claims import Device, MadeClaims
from device_conformance.core.errors import BadInput

DRIVER, NODE = "gpu.example.com", "node-1"
V1 = "resource.k8s.io/v1"
NODE_SELECTOR = {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [NODE]}]}]}


def node_slice(name, devices, *, node=NODE, pool=NODE, generation=1, count=1, driver=DRIVER, rv="1"):
    """A ResourceSlice as the kubeletplugin helper publishes it (resource.k8s.io/v1)."""
    return {
        "apiVersion": V1,
        "kind": "ResourceSlice",
        "metadata": {"name": name, "resourceVersion": rv},
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": pool, "generation": generation, "resourceSliceCount": count},
            "devices": [d if isinstance(d, dict) else {"name": d} for d in devices],
        },
    }


class ApiError(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(f"({status}) {reason}")
        self.status, self.reason = status, reason


class FakeApi:
    """An API server in memory: the calls AutoClaims makes (dra_auto_claims.ClusterApi), objects kept as an API
    server keeps them (uid, resourceVersion, 404 and 409 answers). `fail`: method name -> exception to raise."""

    def __init__(self, slices=(), *, versions=("v1", "v1beta2", "v1beta1"), nodes=(NODE,), claims=()) -> None:
        """`nodes`: names, or a dict name -> labels."""
        self.versions, self.slices = list(versions), list(slices)
        self.nodes = dict(nodes) if isinstance(nodes, dict) else {n: {} for n in nodes}
        self.namespaces: set[str] = set()
        self.classes: dict[str, dict] = {}
        self.claims: dict[tuple[str, str], dict] = {
            (c["metadata"]["namespace"], c["metadata"]["name"]): c for c in claims
        }
        self.pods: dict[tuple[str, str], dict] = {}
        self.fail: dict[str, Exception] = {}
        self.calls: list[str] = []
        self._n = 0

    def __getattribute__(self, name: str) -> Any:
        fail = object.__getattribute__(self, "fail")
        if name in fail:
            object.__getattribute__(self, "calls").append(name)
            raise fail[name]
        return object.__getattribute__(self, name)

    def _meta(self, body, namespace=None):
        self._n += 1
        meta = {**body["metadata"], "uid": f"uid-{self._n}", "resourceVersion": str(self._n)}
        if namespace:
            meta["namespace"] = namespace
        return {**copy.deepcopy(body), "metadata": meta}

    def left(self) -> dict:
        """Everything a run made (the claims other users hold are not its own)."""
        mine = {k: v for k, v in self.claims.items() if k[0].startswith("dc-certify-claims-")}
        return {
            k: v
            for k, v in {"ns": self.namespaces, "classes": self.classes, "claims": mine, "pods": self.pods}.items()
            if v
        }

    def resource_versions(self):
        return list(self.versions)

    def node_labels(self, name):
        return dict(self.nodes[name]) if name in self.nodes else None

    def node_names(self):
        return sorted(self.nodes)

    def list_slices(self, version, driver):
        self.calls.append("list_slices")
        return [s for s in self.slices if s["spec"]["driver"] == driver]

    def list_claims(self, version):
        return [copy.deepcopy(c) for c in self.claims.values()]

    def create_namespace(self, body):
        self.calls.append("create_namespace")
        self.namespaces.add(body["metadata"]["name"])

    def delete_namespace(self, name):
        if name not in self.namespaces:
            raise ApiError(404, "Not Found")
        self.namespaces.discard(name)
        self.claims = {k: v for k, v in self.claims.items() if k[0] != name}
        self.pods = {k: v for k, v in self.pods.items() if k[0] != name}

    def namespace_exists(self, name):
        return name in self.namespaces

    def create_device_class(self, version, body):
        self.calls.append("create_device_class")
        self.classes[body["metadata"]["name"]] = body

    def delete_device_class(self, version, name):
        if self.classes.pop(name, None) is None:
            raise ApiError(404, "Not Found")

    def create_claim(self, version, namespace, body):
        self.calls.append("create_claim")
        assert namespace in self.namespaces
        stored = self._meta(body, namespace)
        self.claims[(namespace, body["metadata"]["name"])] = stored
        return copy.deepcopy(stored)

    def get_claim(self, version, namespace, name):
        found = self.claims.get((namespace, name))
        return copy.deepcopy(found) if found else None

    def replace_claim_status(self, version, namespace, body):
        self.calls.append("replace_claim_status")
        key = (namespace, body["metadata"]["name"])
        if self.claims[key]["metadata"]["resourceVersion"] != body["metadata"]["resourceVersion"]:
            raise ApiError(409, "Conflict")
        stored = self._meta({**self.claims[key], "status": body["status"]}, namespace)
        stored["metadata"]["uid"] = self.claims[key]["metadata"]["uid"]
        self.claims[key] = stored
        return copy.deepcopy(stored)

    def delete_claim(self, version, namespace, name):
        if self.claims.pop((namespace, name), None) is None:
            raise ApiError(404, "Not Found")

    def create_pod(self, namespace, body):
        self.calls.append("create_pod")
        stored = self._meta(body, namespace)
        self.pods[(namespace, body["metadata"]["name"])] = stored
        return {"metadata": {"name": stored["metadata"]["name"], "uid": stored["metadata"]["uid"]}}

    def delete_pod(self, namespace, name):
        if self.pods.pop((namespace, name), None) is None:
            raise ApiError(404, "Not Found")


def claims_auto(api, **options):
    options = {"ceiling": 2.0, "settle": 0.5, "suffix": "abc123", "log": lambda _: None, **options}
    return auto.AutoClaims(api, DRIVER, NODE, **options)


# -- the objects ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "served,chosen",
    [
        (["v1", "v1beta2", "v1beta1"], V1),
        (["v1beta1", "v1beta2"], "resource.k8s.io/v1beta2"),
        (["v1beta1"], "resource.k8s.io/v1beta1"),
    ],
)
def test_the_newest_served_version_is_used(served, chosen):
    assert auto.served_version(served) == chosen


@pytest.mark.parametrize(
    "served,problem",
    [
        ([], "--claims auto: the API server serves no version of it of resource.k8s.io (DRA)"),
        (["v1alpha3"], "--claims auto: the API server serves only ['v1alpha3'] of resource.k8s.io (DRA)"),
    ],
)
def test_an_api_server_without_a_usable_resource_api_is_bad_input(served, problem):
    with pytest.raises(BadInput) as raised:
        auto.served_version(served)
    assert (raised.value.problem, raised.value.fix) == (problem, auto.FIX_API)


def test_the_devices_are_those_of_complete_current_pools_of_the_node_without_scheduling_taints():
    slices = [
        node_slice("a-old", ["gone-0"], generation=1),
        node_slice("a-new", ["gpu-1", "gpu-0"], generation=2),
        node_slice("b-1", ["part-0"], pool="pool-b", count=2),  # its second slice is not there yet
        node_slice("other-node", ["x-0"], node="node-2", pool="node-2"),
        node_slice("other-driver", ["y-0"], driver="net.example.com"),
        node_slice(
            "c",
            [
                {"name": "t-0", "taints": [{"key": "k", "effect": "NoSchedule"}]},
                {"name": "t-1", "taints": [{"key": "k", "effect": "None"}]},
                {"name": "t-2", "basic": {"taints": [{"key": "k", "effect": "NoExecute"}]}},  # v1beta1's shape
            ],
            pool="pool-c",
        ),
    ]
    devices, skipped = auto.node_devices(slices, DRIVER, NODE)
    assert devices == [Device(NODE, "gpu-0"), Device(NODE, "gpu-1"), Device("pool-c", "t-1")]
    assert skipped == [
        "pool pool-b: 1 of 2 slices published so far",
        "pool-c/t-0: tainted ['NoSchedule']",
        "pool-c/t-2: tainted ['NoExecute']",
    ]


def test_devices_held_by_claims_of_the_driver_are_in_use():
    held = {
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": "r", "driver": DRIVER, "pool": NODE, "device": "gpu-0"},
                        {"request": "r", "driver": "other.example.com", "pool": NODE, "device": "gpu-1"},
                    ]
                }
            }
        }
    }
    assert auto.used_devices([held, {"status": {}}, {}], DRIVER) == {Device(NODE, "gpu-0")}


def test_the_allocation_is_the_schedulers_for_a_device_of_a_node_local_slice():
    assert auto.allocation(DRIVER, Device("pool-a", "gpu-1"), NODE_SELECTOR) == {
        "devices": {"results": [{"request": "dev", "driver": DRIVER, "pool": "pool-a", "device": "gpu-1"}]},
        "nodeSelector": NODE_SELECTOR,
    }


def test_the_reservation_names_the_consumer_pod_as_the_scheduler_does():
    assert auto.reserved_for({"metadata": {"name": "certify-consumer", "uid": "p-1"}}) == [
        {"resource": "pods", "name": "certify-consumer", "uid": "p-1"}
    ]


@pytest.mark.parametrize(
    "api_version,request_",
    [
        (V1, {"name": "dev", "exactly": {"deviceClassName": "cls", "count": 1}}),
        ("resource.k8s.io/v1beta2", {"name": "dev", "exactly": {"deviceClassName": "cls", "count": 1}}),
        ("resource.k8s.io/v1beta1", {"name": "dev", "deviceClassName": "cls", "count": 1}),
    ],
)
def test_a_claim_asks_for_one_device_of_the_class_in_the_versions_shape(api_version, request_):
    assert auto.claim_manifest("certify-claim-0", "cls", api_version) == {
        "apiVersion": api_version,
        "kind": "ResourceClaim",
        "metadata": {"name": "certify-claim-0", "labels": auto.LABELS},
        "spec": {"devices": {"requests": [request_]}},
    }


def test_the_consumer_pod_uses_every_claim_and_is_never_scheduled():
    pod = auto.consumer_pod_manifest("certify-consumer", ["c-0", "c-1"])
    assert pod["spec"]["schedulingGates"] == [{"name": auto.GATE}]
    assert pod["spec"]["resourceClaims"] == [
        {"name": "claim-0", "resourceClaimName": "c-0"},
        {"name": "claim-1", "resourceClaimName": "c-1"},
    ]
    assert pod["spec"]["containers"][0]["resources"] == {"claims": [{"name": "claim-0"}, {"name": "claim-1"}]}
    assert "nodeName" not in pod["spec"]


def test_the_device_class_selects_the_drivers_devices():
    assert auto.device_class_manifest("cls", DRIVER, V1)["spec"] == {
        "selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]
    }


# -- making them ----------------------------------------------------------------------------------------------


def test_claims_are_made_allocated_and_reserved_from_the_published_devices_then_deleted():
    api = FakeApi([node_slice("s", ["gpu-c", "gpu-a", "gpu-b"])])
    maker = claims_auto(api)
    maker.check()
    made = maker.make()
    ns = "dc-certify-claims-abc123"
    [(_, pod)] = api.pods.items()
    stored = [api.claims[(ns, "certify-claim-0")], api.claims[(ns, "certify-claim-1")]]
    for claim, device in zip(stored, ["gpu-a", "gpu-b"], strict=True):
        assert claim["status"] == {
            "allocation": {
                "devices": {"results": [{"request": "dev", "driver": DRIVER, "pool": NODE, "device": device}]},
                "nodeSelector": NODE_SELECTOR,
            },
            "reservedFor": [{"resource": "pods", "name": "certify-consumer", "uid": pod["metadata"]["uid"]}],
        }
        assert claim["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] == ns
    assert made.claims == [(ns, c["metadata"]["uid"], c["metadata"]["name"]) for c in stored]
    assert made.allocated == {stored[0]["metadata"]["uid"]: ["gpu-a"], stored[1]["metadata"]["uid"]: ["gpu-b"]}
    assert f"made in namespace {ns} (resource.k8s.io/v1)" in made.note
    # What a user's --claims would have to pass, the made claims pass (the kubeletplugin helper's reads too).
    for claim in made.claims:
        assert dra_claims.claim_problems(claim, api.get_claim("v1", ns, claim[2]), DRIVER, NODE) == []
    assert set(api.classes) == {ns} and api.namespaces == {ns}
    maker.delete()
    assert api.left() == {}


def test_devices_other_claims_hold_are_not_picked():
    holder = {
        "metadata": {"namespace": "team", "name": "busy", "uid": "u"},
        "status": {
            "allocation": {
                "devices": {"results": [{"request": "r", "driver": DRIVER, "pool": NODE, "device": "gpu-a"}]}
            }
        },
    }
    api = FakeApi([node_slice("s", ["gpu-a", "gpu-b", "gpu-c"])], claims=[holder])
    made = claims_auto(api).make()
    assert sorted(d for devices in made.allocated.values() for d in devices) == ["gpu-b", "gpu-c"]


def test_claims_are_made_as_soon_as_the_slices_appear():
    api = FakeApi()
    maker = claims_auto(api, ceiling=30.0)
    listed = []

    def list_slices(version, driver):
        listed.append(time.monotonic())
        return [node_slice("s", ["d-0", "d-1"])] if len(listed) >= 3 else []

    api.list_slices = list_slices
    started = time.monotonic()
    made = maker.make()
    assert len(made.claims) == 2 and time.monotonic() - started < 10


def test_v1beta1_objects_are_written_in_v1beta1s_shape():
    api = FakeApi([node_slice("s", ["d-0", "d-1"])], versions=["v1beta1"])
    maker = claims_auto(api)
    maker.make()
    claim = api.claims[("dc-certify-claims-abc123", "certify-claim-0")]
    assert claim["apiVersion"] == "resource.k8s.io/v1beta1"
    assert claim["spec"]["devices"]["requests"] == [{"name": "dev", "deviceClassName": maker.device_class, "count": 1}]


def test_the_consumer_pod_waits_for_the_new_namespaces_default_service_account():
    api = FakeApi([node_slice("s", ["d-0", "d-1"])])
    real, refused = api.create_pod, []

    def create_pod(namespace, body):
        if len(refused) < 2:  # as the ServiceAccount admission plugin answers before the controller made it
            refused.append(body["metadata"]["name"])
            raise ApiError(
                403, f'pods "certify-consumer" is forbidden: error looking up service account {namespace}/default'
            )
        return real(namespace, body)

    api.create_pod = create_pod
    made = claims_auto(api).make()
    assert len(made.claims) == 2 and refused == ["certify-consumer", "certify-consumer"]


# -- bad input: one error naming the fix, nothing left ----------------------------------------------------------


def test_no_slices_for_the_node_within_the_ceiling_names_the_nodes_it_has_slices_for():
    api = FakeApi([node_slice("elsewhere", ["d-0"], node="node-9", pool="node-9")])
    with pytest.raises(BadInput) as raised:
        claims_auto(api, ceiling=1.0).make()
    assert raised.value.problem == (
        "--claims auto: driver gpu.example.com published no ResourceSlice for node node-1 within 1s; "
        "it has slices for node node-9"
    )
    assert raised.value.fix.startswith("check that --driver is the name the driver publishes under and --node")
    assert api.left() == {} and "create_namespace" not in api.calls


def test_fewer_free_devices_than_claims_is_final_once_the_slices_settle():
    holder = {
        "metadata": {"namespace": "team", "name": "busy", "uid": "u"},
        "status": {"allocation": {"devices": {"results": [{"driver": DRIVER, "pool": NODE, "device": "d-1"}]}}},
    }
    api = FakeApi([node_slice("s", ["d-0", "d-1"])], claims=[holder])
    started = time.monotonic()
    with pytest.raises(BadInput) as raised:
        claims_auto(api, ceiling=60.0, settle=0.5).make()
    assert time.monotonic() - started < 10  # settled, not the ceiling
    assert raised.value.problem == (
        "--claims auto: driver gpu.example.com publishes 1 free device(s) for node node-1, 2 needed (one per "
        "claim): free ['node-1/d-0']; held by other claims ['node-1/d-1']"
    )
    assert "give --claims FILE" in raised.value.fix
    assert api.left() == {} and "create_namespace" not in api.calls


def test_a_refused_listing_is_bad_input_at_once():
    api = FakeApi()
    api.fail["list_slices"] = ApiError(403, "Forbidden")
    with pytest.raises(BadInput) as raised:
        claims_auto(api, ceiling=60.0).make()
    assert raised.value.problem == "--claims auto: listing ResourceSlices and ResourceClaims: HTTP 403 Forbidden"
    assert raised.value.fix == auto.FIX_RBAC


def test_an_unknown_node_is_bad_input_before_anything_starts():
    api = FakeApi(nodes=["node-a", "node-b"])
    with pytest.raises(BadInput) as raised, auto.session("kc", DRIVER, NODE, api=api, log=lambda _: None):
        pytest.fail("not reached")
    assert raised.value.problem == "--claims auto: node 'node-1' is not in the API server (nodes: ['node-a', 'node-b'])"


def test_an_api_server_without_resource_k8s_io_is_bad_input_before_anything_starts():
    api = FakeApi(versions=[])
    with pytest.raises(BadInput) as raised, auto.session("kc", DRIVER, NODE, api=api, log=lambda _: None):
        pytest.fail("not reached")
    assert raised.value.fix == auto.FIX_API and api.left() == {}


def test_an_api_server_that_does_not_answer_is_bad_input():
    api = FakeApi()
    api.fail["resource_versions"] = ConnectionRefusedError("[Errno 111] Connection refused")
    with pytest.raises(BadInput) as raised:
        claims_auto(api).check()
    assert raised.value.problem == (
        "--claims auto: the API server does not answer (ConnectionRefusedError: [Errno 111] Connection refused)"
    )


@pytest.mark.parametrize("kubeconfig,node", [(None, NODE), ("kc", None)])
def test_auto_needs_a_kubeconfig_and_a_node(kubeconfig, node):
    with pytest.raises(BadInput) as raised, auto.session(kubeconfig, DRIVER, node, api=FakeApi()):
        pytest.fail("not reached")
    assert raised.value.problem == "--claims auto needs --kubeconfig and --node"


def test_a_missing_kubeconfig_file_is_bad_input(tmp_path):
    with pytest.raises(BadInput) as raised, auto.session(tmp_path / "nope", DRIVER, NODE):
        pytest.fail("not reached")
    assert raised.value.problem == f"--kubeconfig {tmp_path / 'nope'}: no such file"


@pytest.mark.parametrize("failing", ["create_device_class", "create_claim", "create_pod", "replace_claim_status"])
def test_a_failing_step_deletes_what_was_made_before_the_error(failing):
    api = FakeApi([node_slice("s", ["d-0", "d-1"])])
    api.fail[failing] = ApiError(422, "Unprocessable Entity")
    with pytest.raises(BadInput) as raised:
        claims_auto(api).make()
    assert raised.value.problem == (
        "--claims auto: creating the claims in dc-certify-claims-abc123: HTTP 422 Unprocessable Entity"
    )
    assert raised.value.fix == auto.FIX_RBAC
    assert api.left() == {}


# -- every way out deletes --------------------------------------------------------------------------------------


@pytest.mark.parametrize("failure", [RuntimeError("boom"), KeyboardInterrupt()])
def test_the_session_deletes_everything_on_a_crash_or_ctrl_c(failure):
    api = FakeApi([node_slice("s", ["d-0", "d-1"])])
    before = signal.getsignal(signal.SIGTERM)
    with (
        pytest.raises(type(failure)),
        auto.session("kc", DRIVER, NODE, api=api, log=lambda _: None, ceiling=2.0) as maker,
    ):
        assert signal.getsignal(signal.SIGTERM) is not before  # SIGTERM reaches the deletion as Ctrl-C
        maker.make()
        assert api.left()
        raise failure
    assert api.left() == {}
    assert signal.getsignal(signal.SIGTERM) is before


def test_ctrl_c_during_the_deletion_is_held_until_it_is_done(monkeypatch):
    api = FakeApi([node_slice("s", ["d-0", "d-1"])])
    maker = claims_auto(api)
    maker.make()
    real = api.delete_pod

    def delete_pod(namespace, name):
        signal.raise_signal(signal.SIGINT)  # Ctrl-C half-way
        real(namespace, name)

    api.delete_pod = delete_pod
    with pytest.raises(KeyboardInterrupt):
        maker.delete()
    assert api.left() == {}


def test_what_cannot_be_deleted_is_named_with_the_command_that_deletes_it():
    api = FakeApi([node_slice("s", ["d-0", "d-1"])])
    lines: list[str] = []
    maker = claims_auto(api, log=lines.append)
    maker.make()
    api.fail["delete_device_class"] = ApiError(403, "Forbidden")
    maker.delete()
    assert lines[-1] == (
        "--claims auto: could not delete ['deviceclass dc-certify-claims-abc123 (HTTP 403 Forbidden)']; remove them "
        "with: kubectl delete namespace dc-certify-claims-abc123; kubectl delete deviceclass dc-certify-claims-abc123"
    )


def test_a_subject_gone_while_waiting_makes_no_claims():
    api = FakeApi()
    made = claims_auto(api, ceiling=30.0).make(subject_gone=lambda: "the subject exited (exit 2)")
    assert (made.claims, made.allocated) == ([], {})
    assert made.note == "--claims auto: no claims made: the subject exited (exit 2)"
    assert api.left() == {}


# -- the certifier uses them ----------------------------------------------------------------------------------


def test_the_certifier_makes_the_claims_once_the_driver_serves_and_judges_them():
    """The fake DRA driver (its claims known from its state file) with the claims handed over by make_claims:
    called once, after DRA-SERVICE (the driver answers then), and every claim clause is judged on them."""
    calls = []

    def make_claims(subject_gone):
        calls.append(subject_gone())
        return MadeClaims(list(CLAIMS), dict(ALLOCATED), "claims made")

    cert = run_dra_driver(claims=(), make_claims=make_claims)
    verdicts = {r.clause.id: r.verdict for r in cert.results}
    assert calls == [None]  # the subject was up
    assert {v for k, v in verdicts.items() if k != "DRA-SLICES"} == {"PASS"}, cert.results
    assert "claims made" in cert.notes


def test_bad_input_from_make_claims_ends_the_run_with_the_subject_stopped():
    def make_claims(subject_gone):
        raise BadInput("--claims auto: no slices", "fix it")

    with pytest.raises(BadInput, match="no slices"):
        run_dra_driver(claims=(), make_claims=make_claims)
