"""`device-conformance certify ...` end to end: the verb starts the subject, writes the report folder and exits
1 when a clause failed, 0 when none did."""

import json

from certify_subjects import CLAIMS, DRIVER, RESOURCE, fake_command

from device_conformance.cli.main import main
from device_conformance.fakes.device_plugin import DeviceConfig, DevicePluginConfig
from device_conformance.fakes.dra_driver import DeviceSpec, DriverConfig
from device_conformance.fakes.kubelet_stub import KubeletStub


def test_device_plugin_verb_fails_a_defective_plugin_and_writes_the_report(tmp_path, plugin_root, capsys):
    config = DevicePluginConfig(
        resource_name=RESOURCE,
        socket_dir=str(plugin_root / "dp"),
        devices=[DeviceConfig("dev-1"), DeviceConfig("dev-2")],
        control_socket=str(plugin_root / "ctl.sock"),
        defects=["duplicate-device-ids"],
    )
    config.save(tmp_path / "config.json")
    argv = ["certify", "device-plugin", "--socket-dir", str(plugin_root / "dp"), "--resource", RESOURCE]
    argv += ["--command", fake_command("device_plugin", tmp_path / "config.json"), "--out", str(tmp_path / "out")]
    argv += ["--subject-name", "fake", "--subject-version", "9.9", "--reregister-timeout", "8"]
    assert main(argv) == 1
    result = json.loads((tmp_path / "out" / "result.json").read_text())
    assert [c["id"] for c in result["clauses"] if c["verdict"] == "FAIL"] == ["DP-LAW-UNIQUE"]
    assert result["subject"]["version"] == "9.9"
    out = capsys.readouterr().out
    assert "| DP-LAW-UNIQUE | **FAIL** |" in out and "FAILED: {'PASS': 12, 'FAIL': 1, 'NOT APPLICABLE': 3}" in out


def test_dra_driver_verb_passes_the_fake_driver(tmp_path, plugin_root):
    config = DriverConfig(
        driver_name=DRIVER,
        node_name="node-1",
        registry_dir=str(plugin_root / "registry"),
        plugin_dir=str(plugin_root / "plugins"),
        cdi_dir=str(tmp_path / "cdi"),
        devices=[DeviceSpec("dev-0"), DeviceSpec("dev-1")],
        control_socket=str(plugin_root / "ctl.sock"),
        call_log=str(tmp_path / "calls.jsonl"),
        state_file=str(tmp_path / "state.json"),
    )
    allocations = {
        uid: {"namespace": ns, "name": name, "results": [{"device": f"dev-{n}"}]}
        for n, (ns, uid, name) in enumerate(CLAIMS)
    }
    (tmp_path / "state.json").write_text(json.dumps({"allocations": allocations}))
    (tmp_path / "config.json").write_text(config.to_json())
    claims = [{"namespace": n, "uid": u, "name": m, "devices": [f"dev-{i}"]} for i, (n, u, m) in enumerate(CLAIMS)]
    (tmp_path / "claims.yaml").write_text(json.dumps(claims))
    argv = ["certify", "dra-driver", "--registry-dir", str(plugin_root / "registry"), "--driver", DRIVER]
    argv += ["--claims", str(tmp_path / "claims.yaml"), "--cdi-dir", str(tmp_path / "cdi")]
    argv += ["--command", fake_command("dra_driver", tmp_path / "config.json"), "--out", str(tmp_path / "out")]
    assert main(argv) == 0
    result = json.loads((tmp_path / "out" / "result.json").read_text())
    assert result["counts"] == {"PASS": 13, "FAIL": 0, "NOT APPLICABLE": 1}
    assert result["api_versions"] == [
        "pluginregistration/v1 (Registration: GetInfo, NotifyRegistrationStatus)",
        "dra/v1 (v1.DRAPlugin)",
    ]
    assert not list((tmp_path / "cdi").glob("*.json")), "the certifier leaves no prepared claim behind"


def test_the_verb_refuses_a_directory_where_a_kubelet_answers(tmp_path, plugin_root, capsys):
    (plugin_root / "dp").mkdir()
    with KubeletStub(str(plugin_root / "dp")):  # stands for the node's kubelet
        argv = ["certify", "device-plugin", "--socket-dir", str(plugin_root / "dp"), "--out", str(tmp_path / "out")]
        assert main(argv) == 2
    assert f"a kubelet answers on {plugin_root / 'dp' / 'kubelet.sock'}" in capsys.readouterr().err
