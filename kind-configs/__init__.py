"""kind cluster configurations (YAML data), shipped as device_conformance.kind_configs."""
