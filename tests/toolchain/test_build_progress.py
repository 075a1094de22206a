"""Build progress: n of the total packages, a percentage and the time left, not only a count."""

import textwrap

from device_conformance.toolchain import gobuild

FAKE_GO = """\
    #!/bin/sh
    # go list ... -deps -f '{{if .Stale}}...': four packages to build; go build -v: prints each one.
    if [ "$1" = list ]; then printf 'a\\nb\\n\\nc\\nd\\n'; exit 0; fi
    sleep 0.5
    for p in a b c d; do echo "$p"; sleep 0.1; done
"""


def test_progress_line_has_total_percentage_and_time_left():
    assert gobuild.progress_line("Kubernetes v1.37.1", 300, 1200, 90) == (
        "  building Kubernetes v1.37.1: 300/1200 packages (25%), 1m30s elapsed, about 4m30s left"
    )
    assert gobuild.progress_line("x", 0, 1200, 5) == (
        "  building x: 0/1200 packages (0%), 0m05s elapsed, time left not known yet"
    )
    # go list counted fewer than go build -v printed: never past 99 % before the build ends.
    assert "(99%)" in gobuild.progress_line("x", 1300, 1200, 100)
    assert gobuild.progress_line("x", 7, None, 12) == "  building x: 7 packages compiled, 12s elapsed"


def test_run_go_counts_the_packages_to_build_while_it_builds(tmp_path, monkeypatch):
    go = tmp_path / "go"
    go.write_text(textwrap.dedent(FAKE_GO))
    go.chmod(0o755)
    monkeypatch.setattr(gobuild, "PROGRESS_EVERY_SECONDS", 0)
    lines: list[str] = []
    gobuild.run_go(
        [str(go), "build", "-v", "./cmd/kubelet"], tmp_path, "fake", lines.append, packages=["./cmd/kubelet"]
    )
    steps = [line for line in lines if "packages" in line]
    assert [line.split(": ", 1)[1].split(",", 1)[0] for line in steps] == [
        "1/4 packages (25%)",
        "2/4 packages (50%)",
        "3/4 packages (75%)",
        "4/4 packages (99%)",
    ], lines
    assert lines[-1].startswith("built fake in ")


def test_a_failing_count_leaves_the_plain_count(tmp_path, monkeypatch):
    go = tmp_path / "go"
    go.write_text(textwrap.dedent(FAKE_GO).replace("exit 0", "exit 1"))
    go.chmod(0o755)
    monkeypatch.setattr(gobuild, "PROGRESS_EVERY_SECONDS", 0)
    lines: list[str] = []
    gobuild.run_go([str(go), "build", "-v"], tmp_path, "fake", lines.append, packages=["./cmd/kubelet"])
    assert "  building fake: 4 packages compiled" in lines[-2], lines
