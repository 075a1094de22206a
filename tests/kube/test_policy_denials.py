"""admission.denials: the API server's policy decisions counted from its /metrics text (no cluster)."""

from types import SimpleNamespace

from device_conformance.kube import admission

# As a 1.33.13 API server serves it: a counter family, one sample per policy, binding, error type and action.
NAME = "apiserver_validating_admission_policy_check_total"
TEXT = f"""# HELP {NAME} [BETA] Validation admission policy check total
# TYPE {NAME} counter
{NAME}{{enforcement_action="deny",error_type="no_error",policy="dc-freeze-a",policy_binding="dc-freeze-a"}} 4
{NAME}{{enforcement_action="allow",error_type="no_error",policy="dc-freeze-a",policy_binding="dc-freeze-a"}} 9
{NAME}{{enforcement_action="deny",error_type="no_error",policy="dc-freeze-b",policy_binding="dc-freeze-b"}} 7
"""


class _Reply:
    data = TEXT.encode()


def _kube(calls: list) -> SimpleNamespace:
    def call_api(path, method, **kwargs):
        calls.append((path, method, kwargs["_preload_content"]))
        return _Reply()

    return SimpleNamespace(api_client=SimpleNamespace(call_api=call_api))


def test_counts_only_the_denials_of_the_named_policy():
    calls: list = []
    assert admission.denials(_kube(calls), "dc-freeze-a") == 4
    assert admission.denials(_kube(calls), "dc-freeze-b") == 7
    assert admission.denials(_kube(calls), "dc-freeze-c") == 0
    assert calls[0] == ("/metrics", "GET", False)
