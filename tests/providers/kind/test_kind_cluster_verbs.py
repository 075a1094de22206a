"""`device-conformance cluster VERB --provider kind` (providers/kind/cluster_verbs.py): which clusters its verbs
touch (no cluster, no Docker: the state, the kind CLI and the deletion are stubbed)."""

from __future__ import annotations

import pytest

from device_conformance.cli.main import build_parser
from device_conformance.core.errors import BadInput
from device_conformance.providers.kind import cluster_verbs as kind_verbs


@pytest.fixture
def kind_state(monkeypatch, tmp_path):
    """Kind clusters under tmp_path: `ours` created by the suite, `theirs` not; deletions recorded."""
    from device_conformance.providers.kind import provider, state
    from device_conformance.providers.kind.layout import KindLayout

    monkeypatch.setattr(KindLayout, "for_cluster", classmethod(lambda cls, name: cls(tmp_path / name)))
    monkeypatch.setattr(state, "all_layouts", lambda: [KindLayout(tmp_path / n) for n in ("ours", "theirs")])
    monkeypatch.setattr(kind_verbs, "_created", lambda layout: layout.cluster == "ours")
    monkeypatch.setattr(kind_verbs, "_cli", lambda: "cli")
    deleted: list[str] = []
    monkeypatch.setattr(provider, "delete_created_cluster", lambda cli, layout, log: deleted.append(layout.cluster))
    return deleted


def test_kind_down_deletes_only_the_suites_clusters_and_all_of_them_with_all(kind_state):
    parse = build_parser().parse_args
    with pytest.raises(BadInput, match="kind cluster theirs was not created by this suite"):
        kind_verbs.down(None, parse(["cluster", "down", "ours", "theirs"]))
    assert kind_state == []  # checked before anything is deleted
    kind_verbs.down(None, parse(["cluster", "down", "--all"]))
    assert kind_state == ["ours"]
    with pytest.raises(BadInput, match=r"no cluster named \(none given\)\n  fix: .*--provider kind`, or pass --all"):
        kind_verbs.down(None, parse(["cluster", "down"]))
