// dc-node-agent: device-conformance's privileged node agent for node faults on an existing cluster.
//
// The suite runs it as a pod (hostPID, hostNetwork, privileged, on the nodes named by
// --allow-node-disruption only) and reaches it directly over TLS on the node's IP: not through the API
// server and the kubelet (kubectl exec / port-forward go through the kubelet, which the tests stop).
//
// One request per connection: a JSON line
//
//	{"token": "...", "op": "run", "argv": [...], "stdin": <base64>, "in_node": true, "timeout": 120}
//	{"token": "...", "op": "unix", "path": "/var/lib/kubelet/pod-resources/kubelet.sock"}
//
// "run" runs argv (in_node: through `nsenter -t 1 -m -u -i -n --`, i.e. in the node's mount, UTS, IPC and
// network namespaces; the pod shares the node's pid namespace) and answers one JSON line
// {"rc": N, "stdout": <base64>, "stderr": <base64>, "error": "..."}.
// "unix" connects to the node's Unix socket at path (through /proc/1/root: the node's root), answers
// {"rc": 0} (or an error) and then copies bytes both ways: a gRPC client on the test host talks to the
// kubelet's podresources or the runtime's CRI socket through it.
//
// Standard library only; built by device_conformance.providers.agent.image with CGO_ENABLED=0.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/subtle"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net"
	"os"
	"os/exec"
	"strings"
	"time"
)

type request struct {
	Token   string   `json:"token"`
	Op      string   `json:"op"`
	Argv    []string `json:"argv"`
	Stdin   []byte   `json:"stdin"`
	InNode  bool     `json:"in_node"`
	Timeout float64  `json:"timeout"`
	Path    string   `json:"path"`
}

type reply struct {
	RC     int    `json:"rc"`
	Stdout []byte `json:"stdout"`
	Stderr []byte `json:"stderr"`
	Error  string `json:"error,omitempty"`
}

// NodeRoot is the node's root as this pod sees it (hostPID: pid 1 is the node's init).
var nodeRoot = "/proc/1/root"

func main() {
	listen := os.Getenv("DC_AGENT_LISTEN")
	dir := os.Getenv("DC_AGENT_SECRETS")
	if root := os.Getenv("DC_AGENT_NODE_ROOT"); root != "" {
		nodeRoot = root
	}
	token, err := os.ReadFile(dir + "/token")
	if err != nil {
		log.Fatalf("token: %v", err)
	}
	cert, err := tls.LoadX509KeyPair(dir+"/tls.crt", dir+"/tls.key")
	if err != nil {
		log.Fatalf("certificate: %v", err)
	}
	ln, err := tls.Listen("tcp", listen, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		log.Fatalf("listen %s: %v", listen, err)
	}
	log.Printf("dc-node-agent listening on %s", ln.Addr())
	for {
		conn, err := ln.Accept()
		if err != nil {
			log.Printf("accept: %v", err)
			continue
		}
		go serve(conn, bytes.TrimSpace(token))
	}
}

func serve(conn net.Conn, token []byte) {
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	in := bufio.NewReaderSize(conn, 1<<16)
	line, err := in.ReadBytes('\n')
	if err != nil {
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	var req request
	if err := json.Unmarshal(line, &req); err != nil {
		answer(conn, reply{RC: -1, Error: "bad request: " + err.Error()})
		return
	}
	if subtle.ConstantTimeCompare([]byte(req.Token), token) != 1 {
		log.Printf("refused a request from %s: wrong token", conn.RemoteAddr())
		answer(conn, reply{RC: -1, Error: "wrong token"})
		return
	}
	switch req.Op {
	case "run":
		answer(conn, run(req))
	case "unix":
		bridge(conn, in, req.Path)
	default:
		answer(conn, reply{RC: -1, Error: "unknown op " + req.Op})
	}
}

func answer(conn net.Conn, r reply) {
	data, _ := json.Marshal(r)
	_, _ = conn.Write(append(data, '\n'))
}

func run(req request) reply {
	if len(req.Argv) == 0 {
		return reply{RC: -1, Error: "empty argv"}
	}
	argv := req.Argv
	if req.InNode {
		argv = append([]string{"nsenter", "-t", "1", "-m", "-u", "-i", "-n", "--"}, argv...)
	}
	timeout := time.Duration(req.Timeout * float64(time.Second))
	if timeout <= 0 {
		timeout = 120 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin = bytes.NewReader(req.Stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	out := reply{Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		out.RC, out.Error = -1, "timed out after "+timeout.String()
	case errors.As(err, &exit):
		out.RC = exit.ExitCode()
		if out.RC == -1 { // killed by a signal: say which (an exit status alone would read as "exit -1")
			out.Error = exit.String()
		}
	case err != nil:
		out.RC, out.Error = -1, err.Error()
	}
	return out
}

func bridge(conn net.Conn, in *bufio.Reader, path string) {
	if !strings.HasPrefix(path, "/") {
		answer(conn, reply{RC: -1, Error: "not an absolute path: " + path})
		return
	}
	target, err := net.Dial("unix", nodeRoot+path)
	if err != nil {
		answer(conn, reply{RC: -1, Error: err.Error()})
		return
	}
	defer target.Close()
	answer(conn, reply{})
	done := make(chan struct{}, 2)
	go func() {
		_, _ = io.Copy(target, in)
		if unix, ok := target.(*net.UnixConn); ok {
			_ = unix.CloseWrite()
		}
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(conn, target)
		if t, ok := conn.(*tls.Conn); ok {
			_ = t.CloseWrite()
		}
		done <- struct{}{}
	}()
	<-done
	<-done
}
