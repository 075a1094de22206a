"""DeviceConfig.numa_nodes (the fake's NUMA knob) survives the config file the handle writes for the process."""

from device_conformance.fakes.device_plugin import DeviceConfig, DevicePluginConfig


def test_numa_nodes_round_trip_through_the_config_file(tmp_path):
    config = DevicePluginConfig(
        "example.com/dev",
        "/tmp/dp",
        devices=[DeviceConfig("dev-0", numa_nodes=[0]), DeviceConfig("dev-1", numa_nodes=[1]), DeviceConfig("dev-2")],
    )
    config.save(tmp_path / "config.json")
    loaded = DevicePluginConfig.load(tmp_path / "config.json")
    assert [(d.id, d.numa_nodes) for d in loaded.devices] == [("dev-0", [0]), ("dev-1", [1]), ("dev-2", [])]
    assert loaded == config
