"""The GitHub workflows cannot run here, so actionlint checks them: syntax, expressions, job needs, matrix
keys, action inputs. actionlint is built once with `go install` into the cache (toolchain/go_tools.py).

Its shellcheck and pyflakes passes are off: they run only where those programs are installed (GitHub's
runners have shellcheck), and this test gives the same verdict on every machine.
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from device_conformance.core.errors import BadInput
from device_conformance.toolchain.cache import CACHE_ENV
from device_conformance.toolchain.go_tools import ACTIONLINT, GoTool

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.y*ml"))


def test_workflows_pass_actionlint():
    assert WORKFLOWS, "no workflow under .github/workflows"
    if ACTIONLINT.cached() is None and shutil.which("go") is None:
        pytest.skip(f"`go` is not on PATH, so actionlint {ACTIONLINT.version} cannot be built to lint the workflows")
    actionlint = ACTIONLINT.install(progress=lambda _: None)
    proc = subprocess.run(
        [str(actionlint), "-no-color", "-shellcheck=", "-pyflakes=", *(str(w.relative_to(ROOT)) for w in WORKFLOWS)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, (
        f"actionlint {ACTIONLINT.version} (exit {proc.returncode}):\n{proc.stdout}{proc.stderr}"
    )


def _fake_go(directory: Path, script: str) -> None:
    directory.mkdir()
    go = directory / "go"
    go.write_text("#!/bin/sh\n" + script)
    go.chmod(0o755)


def test_go_tool_is_built_once_into_the_cache(monkeypatch, tmp_path):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    calls = tmp_path / "calls"
    _fake_go(tmp_path / "bin", f'echo "$@" >> {calls}\nprintf "#!/bin/sh\\n" > "$GOBIN/tool"\n')
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    tool = GoTool("tool", "example.com/x/cmd/tool", "v1.2.3")
    binary = tool.install(progress=lambda _: None)
    assert binary == tmp_path / "cache" / "tools" / "tool-v1.2.3" / "tool"
    assert tool.install(progress=lambda _: None) == binary
    assert calls.read_text() == "install example.com/x/cmd/tool@v1.2.3\n"
    assert [p.name for p in binary.parent.parent.iterdir()] == ["tool-v1.2.3"]


def test_go_tool_failures_leave_nothing_and_name_the_fix(monkeypatch, tmp_path):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    tool = GoTool("tool", "example.com/x/cmd/tool", "v1.2.3")
    _fake_go(tmp_path / "bin", "echo 'module lookup disabled' >&2\nexit 1\n")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    with pytest.raises(BadInput, match="module lookup disabled"):
        tool.install(progress=lambda _: None)
    assert list((tmp_path / "cache" / "tools").iterdir()) == []
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(BadInput, match="no Go toolchain"):
        tool.install(progress=lambda _: None)
