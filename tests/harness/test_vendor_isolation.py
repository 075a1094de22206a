"""The pure helpers of the black-box isolation tests (fixtures/vendor_isolation.py): a container's printed view,
what an allocation names (a device plugin's Allocate answer, CDI devices merged as the runtime merges them) and
each rule's judgement, with the message naming the rule."""

import json

import pytest
from device_conformance.fixtures import vendor_isolation as iso
from device_conformance.fixtures.vendor_isolation import Items, View

from device_conformance.kubelet_state.allocresp import ContainerAllocateResponse, DeviceSpec, Mount

LOG = """env PATH=/bin
env DRA_CLAIM_UID_DEV-0=uid-1
env MULTI=first line
second line of MULTI
node /dev/null 1:3
node /dev/dc dev 0 a:e5
mount /dev
mount /info\\040dir
END-OF-VIEW
env AFTER=the end
"""


def test_a_view_is_what_the_container_printed_before_its_end_line():
    view = iso.parse_view(LOG)
    assert view.env == {"PATH=/bin", "DRA_CLAIM_UID_DEV-0=uid-1", "MULTI=first line"}
    assert view.nodes == {"/dev/null": "1:3", "/dev/dc dev 0": "a:e5"}
    assert view.mounts == {"/dev", "/info\\040dir"}


def test_the_probe_reads_the_environment_from_proc_not_from_the_shell():
    script = iso.PROBE[2]
    assert "/proc/1/environ" in script and " env" not in script.replace("'s/^/env /'", "")
    assert "$$" not in script and "$(" not in script, "the kubelet would expand them"
    assert script.endswith("exec sleep 86400")


def _write(directory, name, spec):
    directory.mkdir(exist_ok=True)
    (directory / name).write_text(json.dumps({"cdiVersion": "0.6.0", **spec}))


@pytest.fixture
def specs(tmp_path):
    """A shared spec whose spec-level edits reach both its devices, and a spec of one device of its own."""
    _write(
        tmp_path,
        "shared.json",
        {
            "kind": "vendor.com/gpu",
            "containerEdits": {"env": ["SHARED=1"], "deviceNodes": [{"path": "/dev/ctl"}]},
            "devices": [
                {"name": "a", "containerEdits": {"env": ["A=1"], "deviceNodes": [{"path": "/dev/a"}]}},
                {
                    "name": "b",
                    "containerEdits": {"env": ["B=1"], "mounts": [{"hostPath": "/x", "containerPath": "/b"}]},
                },
            ],
        },
    )
    _write(
        tmp_path, "c.json", {"kind": "vendor.com/gpu", "devices": [{"name": "c", "containerEdits": {"env": ["C=1"]}}]}
    )
    return tmp_path


def test_cdi_items_merge_the_spec_level_and_the_device_level_edits(specs):
    assert iso.cdi_items(specs, ["vendor.com/gpu=a"]) == Items(
        frozenset({"SHARED=1", "A=1"}), frozenset({"/dev/ctl", "/dev/a"}), frozenset()
    )
    assert iso.cdi_items(specs, ["vendor.com/gpu=b", "vendor.com/gpu=c"]) == Items(
        frozenset({"SHARED=1", "B=1", "C=1"}), frozenset({"/dev/ctl"}), frozenset({"/b"})
    )
    assert iso.device_level_items(specs, ["vendor.com/gpu=b"]) == Items(frozenset({"B=1"}), mounts=frozenset({"/b"}))


def test_a_cdi_device_defined_nowhere_is_named(specs):
    with pytest.raises(AssertionError, match=r"CDI device vendor.com/gpu=z is defined in 0 spec file\(s\)"):
        iso.cdi_items(specs, ["vendor.com/gpu=z"])


def test_an_allocate_answer_gives_its_envs_device_nodes_mounts_and_cdi_devices_not_its_annotations(specs):
    answer = ContainerAllocateResponse(
        envs={"DEVICES": "dev-0"},
        mounts=[Mount("/info/dev-0", "/tmp/dev-0", True)],
        devices=[DeviceSpec("/dev/dc-dev-0", "/dev/null", "rw")],
        annotations={"example.com/x": "y"},
        cdi_devices=["vendor.com/gpu=c"],
    )
    assert iso.answer_items(answer, specs) == Items(
        frozenset({"DEVICES=dev-0", "C=1"}), frozenset({"/dev/dc-dev-0"}), frozenset({"/info/dev-0"})
    )
    assert iso.answer_items(ContainerAllocateResponse(annotations={"a": "b"}), None).empty


EXPECTED = Items(frozenset({"DEVICES=dev-0"}), frozenset({"/dev/dc-dev-0"}), frozenset({"/info/dev-0"}))
HOLDER = View(
    frozenset({"PATH=/bin", "DEVICES=dev-0"}), {"/dev/null": "1:3", "/dev/dc-dev-0": "1:3"}, frozenset({"/info/dev-0"})
)
PLAIN = View(frozenset({"PATH=/bin"}), {"/dev/null": "1:3"}, frozenset({"/etc/hosts"}))


def test_a_holder_seeing_its_allocation_and_a_plain_container_seeing_none_pass():
    assert iso.judge_holder("main", EXPECTED, HOLDER) == []
    assert iso.judge_without("plain", "main", EXPECTED, PLAIN) == []
    assert iso.note_other_nodes("main", HOLDER, PLAIN, EXPECTED) == []


def test_the_holder_lacking_an_env_value_a_node_or_a_mount_fails_naming_the_rule():
    wrong = View(frozenset({"DEVICES=dev-1"}), {}, frozenset())
    [problem] = iso.judge_holder("main", EXPECTED, wrong)
    assert problem.startswith(
        "main lacks env ['DEVICES=dev-0']; device nodes ['/dev/dc-dev-0']; mounts ['/info/dev-0'] of its allocation"
    )
    assert problem.endswith(iso.RULE_SEES)


def test_a_container_without_the_device_seeing_any_of_it_fails_whatever_the_env_value():
    leaky = View(frozenset({"PATH=/bin", "DEVICES=dev-1"}), {"/dev/dc-dev-0": "1:3"}, frozenset({"/info/dev-0"}))
    [problem] = iso.judge_without("plain", "main", EXPECTED, leaky)
    assert problem == (
        "plain sees env ['DEVICES=dev-1']; device nodes ['/dev/dc-dev-0']; mounts ['/info/dev-0'] of what main was "
        f"given: {iso.RULE_NONE}"
    )


def test_the_image_and_kubelet_variables_an_allocation_also_sets_are_not_the_devices():
    expected = Items(frozenset({"PATH=/usr/local/vendor/bin:/bin", "KUBERNETES_PORT=x", "HOSTNAME=h"}))
    plain = View(frozenset({"PATH=/bin", "KUBERNETES_PORT=tcp://10.0.0.1:443", "HOSTNAME=p"}))
    assert iso.judge_without("plain", "main", expected, plain) == []


def test_device_nodes_beyond_the_allocation_and_the_runtime_defaults_are_noted_listing_the_first_ones():
    host_dev = {f"/host/dev/n{i:02}": f"a:{i}" for i in range(12)}
    holder = View(HOLDER.env, {**HOLDER.nodes, **host_dev, "/host/dev/null": "1:3"}, HOLDER.mounts)
    assert iso.other_nodes(holder, PLAIN, EXPECTED) == sorted(f"{p} ({n})" for p, n in host_dev.items())
    [note] = iso.note_other_nodes("main", holder, PLAIN, EXPECTED)
    assert note.startswith("main sees 12 device node(s) its answer does not name: ['/host/dev/n00 (a:0)', ")
    assert note.endswith(f"'/host/dev/n09 (a:9)'] and 2 more: {iso.NOTE_OTHER_NODES}")


def test_a_device_file_the_allocation_mounts_is_no_other_device_node():
    """nvidia's volume-mounts strategy: the answer mounts /dev/null at a path naming the device."""
    expected = Items(mounts=frozenset({"/var/run/nvidia-container-devices/GPU-1"}))
    holder = View(nodes={"/dev/null": "1:3", "/var/run/nvidia-container-devices/GPU-1": "1:3", "/dev/nvidia0": "c3:0"})
    assert iso.other_nodes(holder, View(nodes={"/dev/null": "1:3"}), expected) == ["/dev/nvidia0 (c3:0)"]


def test_what_only_another_claims_cdi_device_defines_must_not_reach_a_container():
    theirs = Items(frozenset({"DRA_DEVICE_DEV_1=ns/other", "VENDOR=x"}))
    own = Items(frozenset({"DRA_DEVICE_DEV_0=ns/mine", "VENDOR=x"}))
    clean = View(frozenset({"DRA_DEVICE_DEV_0=ns/mine", "VENDOR=x"}))
    assert iso.judge_other_claim("main", "the other claim", theirs, own, clean) == [], "a line both define is shared"
    leaky = View(clean.env | {"DRA_DEVICE_DEV_1=ns/other"})
    [problem] = iso.judge_other_claim("main", "the other claim", theirs, own, leaky)
    assert problem == (
        "main sees env ['DRA_DEVICE_DEV_1=ns/other'], which only the other claim's CDI devices define: "
        f"{iso.RULE_NOT_ANOTHER_CLAIMS}"
    )
