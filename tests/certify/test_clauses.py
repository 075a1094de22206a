"""The clause catalogue: unique IDs, every clause with a rule and an upstream source (docs/certify-clauses.md is
checked with the other derived docs: tests/repo/test_derived_docs.py)."""

from device_conformance.certify.clauses import BY_ID, DEVICE_PLUGIN_CLAUSES, DRA_DRIVER_CLAUSES


def test_every_clause_has_a_unique_id_a_rule_and_a_source():
    clauses = [*DEVICE_PLUGIN_CLAUSES, *DRA_DRIVER_CLAUSES]
    assert len(BY_ID) == len(clauses) == 31
    for clause in clauses:
        assert clause.id.startswith(("DP-", "DRA-")) and clause.rule.endswith(".") and clause.source, clause
