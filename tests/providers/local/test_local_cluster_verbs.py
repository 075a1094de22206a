"""`device-conformance cluster VERB --provider local` (providers/local/cluster_verbs.py): what its verbs refuse
(no cluster: the runs are stubbed)."""

from __future__ import annotations

import pytest

from device_conformance.cli.main import build_parser
from device_conformance.core.errors import BadInput
from device_conformance.providers.local import cluster_verbs as local_verbs


def test_local_down_refuses_unknown_runs_and_none_given(monkeypatch):
    from device_conformance.providers.local import leftovers

    monkeypatch.setattr(leftovers, "all_runs", lambda: [])
    with pytest.raises(BadInput, match=r"no such run: r9\n  fix: .*cluster list --provider local"):
        main_args = build_parser().parse_args(["cluster", "down", "--provider", "local", "r9"])
        local_verbs.down(None, main_args)
    with pytest.raises(BadInput, match=r"no such run: \(none given\)"):
        local_verbs.down(None, build_parser().parse_args(["cluster", "down", "--provider", "local"]))
