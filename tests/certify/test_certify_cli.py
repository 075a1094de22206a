"""`device-conformance certify ...` end to end: the verb starts the subject, writes the report folder and exits
1 when a clause failed, 0 when none did."""

import json

import pytest
from certify_subjects import CLAIMS, DRIVER, RESOURCE, fake_command

from device_conformance.certify.report import FILES, clean_report_dir
from device_conformance.cli.main import main
from device_conformance.core.errors import BadInput
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
    earlier_run(tmp_path / "out")
    assert main(argv) == 1
    result = json.loads((tmp_path / "out" / "result.json").read_text())
    assert [c["id"] for c in result["clauses"] if c["verdict"] == "FAIL"] == ["DP-LAW-UNIQUE"]
    assert result["subject"]["version"] == "9.9"
    out = capsys.readouterr().out
    assert "| DP-LAW-UNIQUE | **FAIL** |" in out and "FAILED: {'PASS': 12, 'FAIL': 1, 'NOT APPLICABLE': 3}" in out
    assert out.startswith("Ran 13 of 16 clauses: 12 passed, 1 failed; 3 NOT APPLICABLE (not run).\n")
    assert "\nFAIL DP-LAW-UNIQUE (ListAndWatch: device IDs unique): response #1 lists IDs " in out
    # The earlier run's subject folder is gone: the report's only subject log is this run's.
    left = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert left[:4] == sorted(FILES) and len(left) == 5 and left[4].startswith("subject-") and left[4] != "subject-old"
    log = str(next((tmp_path / "out").glob("subject-*/subject.log")))
    assert result["notes"][-1] == f"subject log: {log}"
    assert f"## Subject log (tail)\n\nLast 20 lines of `{log}`:" in (tmp_path / "out" / "report.md").read_text()


def earlier_run(out):
    """What an earlier certify run left in its --out: the report files and its subject's work folder."""
    (out / "subject-old").mkdir(parents=True)
    (out / "subject-old" / "subject.log").write_text("the previous subject's log\n")
    for name in FILES:
        (out / name).write_text("old")


def test_out_is_emptied_of_an_earlier_run_and_refused_when_it_holds_anything_else(tmp_path):
    earlier_run(tmp_path / "out")
    assert clean_report_dir(tmp_path / "out") == ["junit.xml", "report.html", "report.md", "result.json", "subject-old"]
    assert list((tmp_path / "out").iterdir()) == []
    earlier_run(tmp_path / "mine")
    (tmp_path / "mine" / "notes.txt").write_text("mine")
    (tmp_path / "mine" / "subject-link").symlink_to(tmp_path / "out")
    with pytest.raises(BadInput) as refused:
        clean_report_dir(tmp_path / "mine")
    assert refused.value.problem == f"--out {tmp_path / 'mine'} holds 2 entries a certify run does not write: " + (
        "notes.txt, subject-link"
    )
    assert refused.value.fix == (
        "give --out a new or empty folder (a certify run replaces only its own report files junit.xml, report.md, "
        "report.html, result.json and subject-* folders), or move those entries away"
    )
    assert len(list((tmp_path / "mine").iterdir())) == 7, "a refused folder is left as it was"


def test_the_verb_refuses_an_out_folder_holding_other_files_before_it_starts_anything(tmp_path, plugin_root, capsys):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "README").write_text("mine")
    argv = ["certify", "device-plugin", "--socket-dir", str(plugin_root / "dp"), "--out", str(tmp_path / "out")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"device-conformance: --out {tmp_path / 'out'} holds 1 entry a certify run does not write: README\n" in err
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["README"] and not (plugin_root / "dp").exists()


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
        health_service=True,
        initial_health="Healthy",
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
    assert result["counts"] == {"PASS": 14, "FAIL": 0, "NOT APPLICABLE": 1}
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
