"""The clause catalogue: unique IDs, every clause with a rule and an upstream source, and docs/certify-clauses.md
as `device-conformance certify clauses` prints it."""

from pathlib import Path

from device_conformance.certify.clauses import (
    BY_ID,
    DEVICE_PLUGIN_CLAUSES,
    DRA_DRIVER_CLAUSES,
    REGENERATE,
    markdown,
)

DOC = Path(__file__).resolve().parents[2] / "docs" / "certify-clauses.md"


def test_every_clause_has_a_unique_id_a_rule_and_a_source():
    clauses = [*DEVICE_PLUGIN_CLAUSES, *DRA_DRIVER_CLAUSES]
    assert len(BY_ID) == len(clauses) == 30
    for clause in clauses:
        assert clause.id.startswith(("DP-", "DRA-")) and clause.rule.endswith(".") and clause.source, clause


def test_docs_certify_clauses_md_is_current():
    assert DOC.read_text(encoding="utf-8") == markdown(), f"regenerate it: .venv/bin/{REGENERATE}"
