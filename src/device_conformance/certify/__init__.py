"""Certify a vendor's device plugin or DRA driver: the tool plays the kubelet and checks the contract
clause by clause, then writes a report folder a vendor can hand over (part 3).

clauses: the catalogue (ID, rule, upstream source); verdicts: the results; subject: the process under test
when the tool starts it; device_plugin / dra_driver: the checks; cdi / resourceslices: offline validators;
report_*: the writers.
"""
