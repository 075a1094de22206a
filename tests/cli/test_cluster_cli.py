"""`device-conformance cluster VERB [--provider NAME]` and its old spelling `kind VERB`: the parser, which provider's
function each verb reaches and with what settings, and the error for a verb a provider does not answer (no cluster:
the providers' functions are replaced by recorders)."""

from __future__ import annotations

import pytest

from device_conformance.cli import cluster
from device_conformance.cli.kind import RENAMED
from device_conformance.cli.main import build_parser, main
from device_conformance.core.errors import BadInput
from device_conformance.providers import load
from device_conformance.settings import KNOBS, PROVIDER_CAPABILITIES, PROVIDERS


@pytest.fixture(autouse=True)
def no_knobs_in_the_environment(monkeypatch):
    for knob in KNOBS.values():
        if knob.env:
            monkeypatch.delenv(knob.env, raising=False)
    monkeypatch.delenv("KUBECONFIG", raising=False)


@pytest.fixture
def calls(monkeypatch):
    """Every provider's verb functions replaced by one recording (provider, verb, settings, args)."""
    made: list[tuple] = []
    for name in PROVIDERS:
        for verb, target in PROVIDER_CAPABILITIES[name].cluster_verbs.items():
            module, _, function = target.partition(":")

            def record(settings, args, name=name, verb=verb):
                made.append((name, verb, settings, args))
                return 0

            monkeypatch.setattr(f"{module}.{function}", record)
    return made


# -- the registry and the parser ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", PROVIDERS)
def test_each_providers_verbs_are_tree_verbs_reached_by_dotted_paths_in_its_own_folder(name):
    for verb, target in PROVIDER_CAPABILITIES[name].cluster_verbs.items():
        assert verb in cluster.CLUSTER_VERBS
        assert target.startswith(f"device_conformance.providers.{name}.cluster_verbs:"), target
        assert callable(load(target)), target


def test_every_verb_of_the_tree_is_answered_by_some_provider():
    assert {verb: cluster.answering(verb) for verb in cluster.CLUSTER_VERBS} == {
        "up": ["local"],
        "config": ["kind"],
        "list": ["local", "kind"],
        "down": ["local", "kind"],
        "cleanup": ["local", "kind"],
        "build-node-image": ["kind"],
    }


def test_the_parser_takes_each_verbs_options_and_the_provider():
    parser = build_parser()
    args = parser.parse_args(["cluster", "config", "--provider", "kind", "--profile", "dra", "--image", "img:1"])
    assert (args.cluster_verb, args.provider, args.kind_profile, args.kind_image, args.name) == (
        "config",
        "kind",
        "dra",
        "img:1",
        "dc-manual",
    )
    args = parser.parse_args(["cluster", "down", "r1", "r2"])
    assert (args.provider, args.names, args.all) == (None, ["r1", "r2"], False)
    with pytest.raises(SystemExit):
        parser.parse_args(["cluster", "list", "--provider", "nope"])


def test_the_old_kind_spelling_parses_as_the_new_verb_with_its_options():
    parser = build_parser()
    for old, new in RENAMED.items():
        assert parser.parse_args(["kind", old]).cluster_verb == new
    args = parser.parse_args(["kind", "render", "--profile", "dra", "--name", "mine"])
    assert (args.cluster_verb, args.kind_profile, args.name) == ("config", "dra", "mine")
    with pytest.raises(SystemExit):  # the old spelling means kind: no --provider
        parser.parse_args(["kind", "list", "--provider", "local"])


# -- dispatch -------------------------------------------------------------------------------------------------


def test_a_verb_reaches_the_chosen_providers_function_with_the_settings_of_its_options(calls):
    assert main(["cluster", "up", "--provider", "local", "--k8s-version", "1.36.3"]) == 0
    assert main(["cluster", "config", "--provider", "kind", "--profile", "dra", "--image", "img:1", "--name", "x"]) == 0
    [(name, verb, settings, _), (name2, verb2, settings2, args2)] = calls
    assert (name, verb, settings.provider.value, str(settings.k8s_version.value)) == ("local", "up", "local", "1.36.3")
    assert (name2, verb2, settings2.provider.value) == ("kind", "config", "kind")
    assert (settings2.kind_profile.value, settings2.kind_image.value, args2.name) == ("dra", "img:1", "x")
    assert str(settings2.kind_profile.source) == "option --profile"  # messages name the verb's own option


def test_without_provider_a_verb_goes_to_the_provider_setting(calls, monkeypatch):
    monkeypatch.setenv("PROVIDER", "kind")
    assert main(["cluster", "cleanup"]) == 0
    assert main(["cluster", "down", "dc-1"]) == 0
    assert [(name, verb, args.names if verb == "down" else None) for name, verb, _, args in calls] == [
        ("kind", "cleanup", None),
        ("kind", "down", ["dc-1"]),
    ]
    assert str(calls[0][2].provider.source) == "environment PROVIDER"


def test_list_without_provider_lists_every_providers_clusters_under_a_heading(calls, capsys):
    assert main(["cluster", "list"]) == 0
    assert [(name, verb, settings.provider.value) for name, verb, settings, _ in calls] == [
        ("local", "list", "local"),
        ("kind", "list", "kind"),
    ]
    assert capsys.readouterr().out == "# provider local\n# provider kind\n"
    calls.clear()
    assert main(["cluster", "list", "--provider", "kind"]) == 0
    assert [name for name, *_ in calls] == ["kind"]


def test_list_without_provider_skips_a_provider_whose_settings_do_not_resolve(calls, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("K8S_SOURCE", str(tmp_path / "missing"))
    assert main(["cluster", "list"]) == 2
    out = capsys.readouterr().out
    assert out.count(f"#   skipped: K8S_SOURCE='{tmp_path}/missing' (environment) is not a directory") == 2
    assert calls == []


def test_a_verb_the_provider_does_not_answer_names_who_does(calls, capsys, monkeypatch):
    assert main(["cluster", "up", "--provider", "kind"]) == 2
    err = capsys.readouterr().err
    assert "provider kind (option --provider) does not answer `cluster up`" in err
    assert "fix: use `device-conformance cluster up --provider local`; provider kind answers: config, list" in err
    # existing is refused before its settings are resolved (they would ask for a kubeconfig first)
    with pytest.raises(
        BadInput,
        match=r"answer `cluster list`\n  fix: use `device-conformance cluster list --provider local` or "
        r"`device-conformance cluster list --provider kind`; provider existing answers no `cluster` verb",
    ):
        cluster.run(build_parser().parse_args(["cluster", "list", "--provider", "existing"]))
    monkeypatch.setenv("PROVIDER", "kind")
    assert main(["cluster", "up"]) == 2
    assert "provider kind (environment PROVIDER) does not answer `cluster up`" in capsys.readouterr().err
    assert calls == []


def test_the_old_kind_spelling_says_the_new_one_on_stderr_and_runs_it(calls, capsys):
    assert main(["kind", "render", "--profile", "dra"]) == 0
    [(name, verb, settings, _)] = calls
    assert (name, verb, settings.kind_profile.value) == ("kind", "config", "dra")
    captured = capsys.readouterr()
    assert captured.err == "device-conformance: `kind render` is now `cluster config --provider kind`\n"
    assert captured.out == ""  # `kind render > FILE` still writes only the config
    assert main(["kind", "delete", "dc-1"]) == 0
    assert calls[-1][:2] == ("kind", "down") and calls[-1][3].names == ["dc-1"]
