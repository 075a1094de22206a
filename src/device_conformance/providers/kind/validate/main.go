// dc-kind-validate: check a kind config with kind's own code, without Docker or a node image.
//
// It is compiled inside a copy of the sigs.k8s.io/kind module (as pkg/cluster/dc-kind-validate), because the
// code that matters is internal to kind: the loader `kind create cluster --config` runs first
// (encoding.Load: strict YAML decode of v1alpha4, defaulting, conversion; then Cluster.Validate), the
// kubeadm config template kind fills for each node (kubeadm.Config) with kind's patch merging
// (patch.KubeYAML, cluster patches then node patches), and kind's containerd TOML patching applied to
// the base image's /etc/containerd/config.toml. Only the node IP and the Kubernetes version, which
// kind would read from the running node, are supplied by us.
//
// Usage: dc-kind-validate CONFIG K8S_VERSION BASE_CONTAINERD_TOML  -> JSON on stdout, errors exit 1.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"sigs.k8s.io/kind/pkg/cluster/constants"
	"sigs.k8s.io/kind/pkg/cluster/internal/kubeadm"
	"sigs.k8s.io/kind/pkg/cluster/internal/providers/common"
	"sigs.k8s.io/kind/pkg/internal/apis/config"
	"sigs.k8s.io/kind/pkg/internal/apis/config/encoding"
	"sigs.k8s.io/kind/pkg/internal/patch"
)

type node struct {
	Name    string `json:"name"`
	Role    string `json:"role"`
	Image   string `json:"image"`
	Kubeadm string `json:"kubeadm"`
	Mounts  []config.Mount `json:"mounts"`
}

type result struct {
	Name       string `json:"name"`
	Nodes      []node `json:"nodes"`
	Containerd string `json:"containerd"`
}

func fail(stage string, err error) {
	fmt.Fprintf(os.Stderr, "%s: %v\n", stage, err)
	os.Exit(1)
}

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: dc-kind-validate CONFIG K8S_VERSION BASE_CONTAINERD_TOML")
		os.Exit(2)
	}
	cfg, err := encoding.Load(os.Args[1])
	if err != nil {
		fail("load", err)
	}
	if err := cfg.Validate(); err != nil {
		fail("validate", err)
	}
	out := result{Name: cfg.Name}
	namer := common.MakeNodeNamer(cfg.Name)
	for i, n := range cfg.Nodes {
		name := namer(string(n.Role))
		data := kubeadm.ConfigData{
			NodeProvider:         "docker",
			ClusterName:          cfg.Name,
			KubernetesVersion:    os.Args[2],
			ControlPlaneEndpoint: cfg.Name + "-control-plane:6443",
			APIBindPort:          common.APIServerInternalPort,
			APIServerAddress:     cfg.Networking.APIServerAddress,
			Token:                kubeadm.Token,
			PodSubnet:            cfg.Networking.PodSubnet,
			KubeProxyMode:        string(cfg.Networking.KubeProxyMode),
			ServiceSubnet:        cfg.Networking.ServiceSubnet,
			ControlPlane:         string(n.Role) == constants.ControlPlaneNodeRoleValue,
			IPFamily:             cfg.Networking.IPFamily,
			FeatureGates:         cfg.FeatureGates,
			RuntimeConfig:        cfg.RuntimeConfig,
			NodeAddress:          fmt.Sprintf("172.18.0.%d", i+2),
			NodeName:             name,
		}
		generated, err := kubeadm.Config(data)
		if err != nil {
			fail("kubeadm config for "+name, err)
		}
		patched, err := patch.KubeYAML(generated, cfg.KubeadmConfigPatches, cfg.KubeadmConfigPatchesJSON6902)
		if err != nil {
			fail("cluster kubeadmConfigPatches for "+name, err)
		}
		if len(n.KubeadmConfigPatches) > 0 || len(n.KubeadmConfigPatchesJSON6902) > 0 {
			patched, err = patch.KubeYAML(patched, n.KubeadmConfigPatches, n.KubeadmConfigPatchesJSON6902)
			if err != nil {
				fail("node kubeadmConfigPatches for "+name, err)
			}
		}
		patched = strings.ReplaceAll(patched, "metadata:\n  name: config\n", "")
		out.Nodes = append(out.Nodes, node{Name: name, Role: string(n.Role), Image: n.Image, Kubeadm: patched, Mounts: n.ExtraMounts})
	}
	base, err := os.ReadFile(os.Args[3])
	if err != nil {
		fail("read base containerd config", err)
	}
	out.Containerd = string(base)
	if len(cfg.ContainerdConfigPatches) > 0 || len(cfg.ContainerdConfigPatchesJSON6902) > 0 {
		out.Containerd, err = patch.ContainerdTOML(string(base), cfg.ContainerdConfigPatches, cfg.ContainerdConfigPatchesJSON6902)
		if err != nil {
			fail("containerdConfigPatches", err)
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fail("encode", err)
	}
}
