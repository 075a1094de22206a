"""The suite's privileged node agent for existing clusters: node faults through a pod.

`--provider existing --allow-node-disruption NODE[,NODE]` deploys one agent pod (agent.go: hostPID,
hostNetwork, privileged, the node's root at /proc/1/root) on each node named, and on no other; the harness
reaches it over TLS on the node's IP (never through the kubelet, which the tests stop) with a per-session
token, runs systemctl / journalctl / kill / cat in the node's namespaces through it, and forwards the
kubelet's podresources and the runtime's CRI Unix sockets to local sockets (agent_node.py). The session
deletes its namespace (and with it the pods and secret) at the end, also after Ctrl-C or a failure.

- image.py: the agent's binary (Go, standard library only) and its image (busybox for nsenter and wget);
- manifest.py: the Namespace, Secret and per-node Pods, rendered from plain data;
- client.py: the wire protocol and the local socket forwarder;
- agent_node.py: NodeTransport / KubeletService / NodeControl over the agent;
- deploy.py: bring-up and removal against the API server.
"""
