"""Whether a Kubernetes release can be had here, asked of the Go module proxy before anything is built or started.

The proxies are `go env GOPROXY`'s (https://proxy.golang.org,direct by default), asked as the go command asks
them (the GOPROXY protocol, go.dev/ref/mod#goproxy-protocol): GET <proxy>/k8s.io/kubernetes/@v/<tag>.info. A 404
or 410 sends the go command on to the next entry; after a `|` any failure does. A release the proxy serves is
then asked for the modules a build of its server binaries fetches (gobuild.build_requirements, the superset that
`device-conformance versions` checks): HEAD of each module zip, so a served k8s.io/kubernetes whose build the
proxy would break (1.38.0-beta.0 here: k8s.io/apiextensions-api@v0.38.0-beta.0 answers 403) is refused too.

A release the official download site serves (dl.k8s.io, which binaries.ensure_binaries tries first) counts as
available whatever the proxy says. An answer that cannot be had (no network, a 5xx, GOPROXY=direct or off) is
UNKNOWN: the caller says so and goes on, and the build names what failed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from device_conformance.expectations.versions import KubeVersion
from device_conformance.toolchain.binaries import RELEASE_URL
from device_conformance.toolchain.gobuild import build_requirements
from device_conformance.toolchain.platform_arch import go_arch

SERVED, REFUSED, UNKNOWN = "served", "refused", "unknown"
DEFAULT_GOPROXY = "https://proxy.golang.org,direct"
KUBERNETES = "k8s.io/kubernetes"
TIMEOUT = 10  # seconds per request
WORKERS = 16  # concurrent HEAD requests for the build modules

# (method, url) -> (HTTP status, or None when no answer came; the body's first line, or why no answer came)
Fetch = Callable[[str, str], tuple[int | None, str]]


@dataclass(frozen=True)
class Proxy:
    """One GOPROXY entry: a URL, `direct` or `off`; `any_error` when a `|` follows it (any failure goes on)."""

    url: str
    any_error: bool = False


@dataclass(frozen=True)
class Answer:
    state: str  # SERVED, REFUSED or UNKNOWN
    detail: str  # what the proxy said, for messages


@dataclass(frozen=True)
class ReleaseAnswer:
    """What the proxy (or the release site) answered for one release."""

    version: KubeVersion
    state: str
    detail: str
    refused_modules: tuple[str, ...] = field(default=())


def parse_goproxy(text: str) -> list[Proxy]:
    """GOPROXY's entries, in order (`,` and `|` separated, as cmd/go reads it)."""
    proxies = []
    for match in re.finditer(r"([^,|]+)([,|]?)", text.strip()):
        url = match.group(1).strip()
        if url:
            proxies.append(Proxy(url.rstrip("/"), match.group(2) == "|"))
    return proxies or [Proxy("off")]


def goproxy_setting() -> str:
    """GOPROXY as the go command sees it (`go env GOPROXY`: go.env and `go env -w` included), else the
    environment's, else the go command's default."""
    go = shutil.which("go")
    if go is not None:
        try:
            done = subprocess.run([go, "env", "GOPROXY"], capture_output=True, text=True, timeout=30, check=False)
        except (OSError, subprocess.TimeoutExpired):
            done = None
        if done is not None and done.returncode == 0 and done.stdout.strip():
            return done.stdout.strip()
    return os.environ.get("GOPROXY") or DEFAULT_GOPROXY


def escape_path(text: str) -> str:
    """A module path or version as the GOPROXY protocol spells it: each capital letter as `!` and its lower case."""
    return re.sub(r"[A-Z]", lambda m: "!" + m.group(0).lower(), text)


def http_fetch(method: str, url: str) -> tuple[int | None, str]:
    """One request: (status, first line of the body) or (None, why there was no answer)."""
    if url.startswith("file://"):  # a GOPROXY directory: a missing file is the proxy's 404
        path = Path(urlparse(url).path)
        if not path.is_file():
            return 404, "not found"
        return 200, path.read_text(errors="replace") if method == "GET" else ""
    request = urllib.request.Request(url, method=method, headers={"User-Agent": "device-conformance"})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as reply:
            return reply.status, reply.read().decode(errors="replace") if method == "GET" else ""
    except urllib.error.HTTPError as exc:
        body = exc.read().decode(errors="replace").strip() if method == "GET" else ""
        return exc.code, (body.splitlines() or [exc.reason or ""])[0]
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        return None, str(getattr(exc, "reason", exc))


def ask(proxies: Sequence[Proxy], path: str, method: str = "GET", fetch: Fetch = http_fetch) -> tuple[Answer, str]:
    """Ask the proxies for `path` (<module>/@v/<file>) as the go command would: the answer, and the body of
    a served GET."""
    not_found: list[str] = []
    for proxy in proxies:
        if proxy.url in ("direct", "off"):
            if not_found:  # the proxies do not have it: the builds here fetch through them
                return Answer(REFUSED, "; ".join(not_found)), ""
            return Answer(UNKNOWN, f"GOPROXY entry {proxy.url!r}: no proxy to ask"), ""
        url = f"{proxy.url}/{path}"
        status, text = fetch(method, url)
        if status == 200:
            return Answer(SERVED, url), text
        said = f"{proxy.url} answers {status} {text.strip()}".strip() if status else f"{proxy.url}: {text}"
        if status in (404, 410):
            not_found.append(said)
            continue
        if proxy.any_error:
            not_found.append(said)
            continue
        if status is None or status >= 500:
            return Answer(UNKNOWN, said), ""
        return Answer(REFUSED, said), ""
    if not_found:
        return Answer(REFUSED, "; ".join(not_found)), ""
    return Answer(UNKNOWN, "GOPROXY names no proxy"), ""


def release_site_serves(version: KubeVersion, fetch: Fetch = http_fetch, release_url: str = RELEASE_URL) -> bool:
    """Whether the official release site answers for this release's kubelet (binaries.ensure_binaries
    downloads from it when it can)."""
    status, _ = fetch("HEAD", release_url.format(tag=version.tag, name="kubelet", arch=go_arch()) + ".sha256")
    return status == 200


def check_release(
    version: KubeVersion,
    proxies: Sequence[Proxy],
    fetch: Fetch = http_fetch,
    *,
    workers: int = WORKERS,
    release_url: str = RELEASE_URL,
) -> ReleaseAnswer:
    """Whether the binaries of `version` can be had here: from the release site, or built from the proxy
    (k8s.io/kubernetes served, and every module its build fetches)."""
    if release_site_serves(version, fetch, release_url):
        return ReleaseAnswer(version, SERVED, "the official release site serves it")
    info, _ = ask(proxies, f"{KUBERNETES}/@v/{escape_path(version.tag)}.info", "GET", fetch)
    if info.state != SERVED:
        return ReleaseAnswer(version, info.state, f"{KUBERNETES}@{version.tag}: {info.detail}")
    mod, gomod = ask(proxies, f"{KUBERNETES}/@v/{escape_path(version.tag)}.mod", "GET", fetch)
    if mod.state != SERVED or "module k8s.io/kubernetes" not in gomod:
        return ReleaseAnswer(version, UNKNOWN, f"{KUBERNETES}@{version.tag} is served; its go.mod: {mod.detail}")
    specs = build_requirements(version, gomod)

    def zip_answer(spec: str) -> Answer:
        module, _, module_version = spec.partition("@")
        return ask(proxies, f"{escape_path(module)}/@v/{escape_path(module_version)}.zip", "HEAD", fetch)[0]

    with ThreadPoolExecutor(max_workers=workers) as pool:
        answers = dict(zip(specs, pool.map(zip_answer, specs), strict=True))
    refused = tuple(spec for spec, answer in answers.items() if answer.state == REFUSED)
    if refused:
        first = answers[refused[0]].detail
        return ReleaseAnswer(
            version,
            REFUSED,
            f"{KUBERNETES}@{version.tag} is served, but {len(refused)} of the {len(specs)} modules its build "
            f"fetches are not: {', '.join(refused)} ({first})",
            refused,
        )
    unknown = [spec for spec, answer in answers.items() if answer.state == UNKNOWN]
    if unknown:
        return ReleaseAnswer(
            version,
            UNKNOWN,
            f"{KUBERNETES}@{version.tag} is served; {len(unknown)} build modules went unanswered "
            f"({answers[unknown[0]].detail})",
        )
    return ReleaseAnswer(version, SERVED, f"{KUBERNETES}@{version.tag} and all {len(specs)} build modules are served")
