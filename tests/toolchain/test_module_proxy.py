"""toolchain/module_proxy.py: whether a release can be had, asked of a stand-in Go module proxy on 127.0.0.1
(no network): GOPROXY's fall-through rules, the build modules of a served release, an unreachable proxy, and
release_run.refuse_unavailable refusing before anything is built."""

import functools
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from device_conformance.cli import release_run
from device_conformance.core.errors import BadInput
from device_conformance.expectations.versions import KubeVersion
from device_conformance.toolchain import module_proxy as mp

V = KubeVersion.parse

GOMOD = """module k8s.io/kubernetes

go 1.26.0

require (
\tgithub.com/Azure/go-ansiterm v0.0.0-20250102033503-faa5f7b0171c
\tk8s.io/api v0.0.0
\tsigs.k8s.io/iptables-wrappers v1.0.0
)

replace (
\tk8s.io/api => ./staging/src/k8s.io/api
)
"""


class Proxy:
    """A GOPROXY on 127.0.0.1: `files` maps a path to (status, body); anything else is 404."""

    def __init__(self, files):
        self.files = files
        self.seen = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def answer(self, body_too):
                owner.seen.append((self.command, self.path))
                status, body = owner.files.get(self.path, (404, "not found: unknown revision"))
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if body_too:
                    self.wfile.write(data)

            def do_GET(self):
                self.answer(True)

            def do_HEAD(self):
                self.answer(False)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def proxy():
    served = Proxy({})
    yield served
    served.close()


def release(proxy, version):
    """The files of a release whose build modules are all served."""
    tag = f"v{version}"
    proxy.files.update(
        {
            f"/k8s.io/kubernetes/@v/{tag}.info": (200, f'{{"Version": "{tag}"}}'),
            f"/k8s.io/kubernetes/@v/{tag}.mod": (200, GOMOD),
            f"/k8s.io/api/@v/{V(version).staging_tag}.zip": (200, "zip"),
            # a capital letter is escaped as the GOPROXY protocol spells it
            "/github.com/!azure/go-ansiterm/@v/v0.0.0-20250102033503-faa5f7b0171c.zip": (200, "zip"),
            "/sigs.k8s.io/iptables-wrappers/@v/v1.0.0.zip": (200, "zip"),
        }
    )


def check(proxy, version, goproxy=None):
    """check_release against the stand-in, its release site (the same server) answering 404."""
    proxies = mp.parse_goproxy(goproxy or proxy.url)
    return mp.check_release(V(version), proxies, release_url=proxy.url + "/dl/{tag}/{name}")


def test_goproxy_is_read_as_the_go_command_reads_it():
    assert mp.parse_goproxy("https://proxy.golang.org,direct") == [
        mp.Proxy("https://proxy.golang.org"),
        mp.Proxy("direct"),
    ]
    assert mp.parse_goproxy("https://a.example/|https://b.example,off") == [
        mp.Proxy("https://a.example", any_error=True),
        mp.Proxy("https://b.example"),
        mp.Proxy("off"),
    ]
    assert mp.escape_path("github.com/Azure/go-ansiterm") == "github.com/!azure/go-ansiterm"


def test_a_release_whose_build_modules_are_all_served_can_be_had(proxy):
    release(proxy, "1.37.2")
    answer = check(proxy, "1.37.2")
    assert (answer.state, answer.detail) == (mp.SERVED, "k8s.io/kubernetes@v1.37.2 and all 3 build modules are served")
    heads = sorted(path for method, path in proxy.seen if method == "HEAD" and path.endswith(".zip"))
    assert heads[0] == "/github.com/!azure/go-ansiterm/@v/v0.0.0-20250102033503-faa5f7b0171c.zip"


def test_a_release_the_proxy_refuses_is_refused_with_its_answer(proxy):
    proxy.files["/k8s.io/kubernetes/@v/v1.37.99.info"] = (403, "This module version is not available.\n")
    answer = check(proxy, "1.37.99")
    assert answer.state == mp.REFUSED
    assert answer.detail == f"k8s.io/kubernetes@v1.37.99: {proxy.url} answers 403 This module version is not available."


def test_a_served_release_whose_build_modules_are_refused_is_refused_naming_them(proxy):
    release(proxy, "1.38.0-beta.0")
    proxy.files["/sigs.k8s.io/iptables-wrappers/@v/v1.0.0.zip"] = (403, "Forbidden")
    answer = check(proxy, "1.38.0-beta.0")
    assert answer.state == mp.REFUSED and answer.refused_modules == ("sigs.k8s.io/iptables-wrappers@v1.0.0",)
    assert answer.detail.startswith(
        "k8s.io/kubernetes@v1.38.0-beta.0 is served, but 1 of the 3 modules its build fetches are not: "
        "sigs.k8s.io/iptables-wrappers@v1.0.0"
    )


def test_not_found_falls_through_to_the_next_proxy_and_then_refuses(proxy):
    other = Proxy({})
    try:
        release(other, "1.37.2")
        assert check(proxy, "1.37.2", f"{proxy.url},{other.url}").state == mp.SERVED
        # found nowhere: refused, also when `direct` comes last (the builds here fetch through the proxy)
        answer = check(proxy, "1.37.98", f"{proxy.url},direct")
        assert answer.state == mp.REFUSED and "answers 404 not found" in answer.detail
    finally:
        other.close()


def test_an_error_other_than_not_found_stops_at_a_comma_but_not_at_a_pipe(proxy):
    other = Proxy({})
    try:
        release(other, "1.37.2")
        proxy.files["/k8s.io/kubernetes/@v/v1.37.2.info"] = (403, "Forbidden")
        assert check(proxy, "1.37.2", f"{proxy.url},{other.url}").state == mp.REFUSED
        assert check(proxy, "1.37.2", f"{proxy.url}|{other.url}").state == mp.SERVED
    finally:
        other.close()


def test_an_unreachable_proxy_or_none_to_ask_is_unknown(proxy):
    proxy.close()  # nothing listens there any more
    answer = check(proxy, "1.37.2")
    assert answer.state == mp.UNKNOWN and answer.detail.startswith(f"k8s.io/kubernetes@v1.37.2: {proxy.url}: ")
    assert check(proxy, "1.37.2", "direct").state == mp.UNKNOWN
    assert check(proxy, "1.37.2", "off").state == mp.UNKNOWN
    proxy.close = lambda: None  # the fixture's close


def test_a_release_the_release_site_serves_needs_no_proxy(proxy):
    proxy.files["/dl/v1.34.13/kubelet.sha256"] = (200, "abc")
    assert check(proxy, "1.34.13").state == mp.SERVED


def test_refuse_unavailable_asks_the_proxy_and_refuses_before_anything_starts(proxy, monkeypatch):
    monkeypatch.delenv("K8S_BIN_DIR", raising=False)
    release(proxy, "1.37.2")
    checker = functools.partial(mp.check_release, release_url=proxy.url + "/dl/{tag}/{name}")
    said = []
    wanted = [*release_run.needed(V("1.37.2"), V("1.37.99"))]
    assert wanted == [(V("1.37.2"), release_run.COMPONENTS), (V("1.37.99"), ("kubelet",))]
    with pytest.raises(BadInput) as excinfo:
        release_run.refuse_unavailable(
            wanted, said.append, check=checker, is_cached=lambda v, c: False, goproxy=lambda: proxy.url
        )
    assert excinfo.value.problem.startswith("cannot be had here, so nothing was built or started: Kubernetes 1.37.99:")
    assert "1.37's matrix release 1.37.2" in excinfo.value.fix
    assert len(said) == 2
