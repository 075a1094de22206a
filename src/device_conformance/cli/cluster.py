"""`device-conformance cluster VERB [--provider NAME]`: one tree for every provider's clusters. Which provider
answers which verb is data on the provider (settings.PROVIDER_CAPABILITIES[NAME].cluster_verbs, verb ->
"module:function"), as kind keeps what a provider can do (sigs.k8s.io/kind pkg/cluster/internal/providers/provider.go,
ProviderInfo); a verb the provider does not answer is an error naming the providers that do."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

from device_conformance.core.errors import BadInput
from device_conformance.settings import KNOBS, PROVIDER_CAPABILITIES, PROVIDERS, Settings, resolve

# The knobs a verb's options may set (argparse dest = knob name) -> the option as the verb spells it, for messages.
KNOB_OPTIONS = {
    "k8s_version": "--k8s-version",
    "k8s_source": "--k8s-source",
    "kubelet_version": "--kubelet-version",
    "kind_profile": "--profile",
    "kind_image": "--image",
    "k8s_bin_dir": "--k8s-bin-dir",
}


def _up_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--k8s-version", help=KNOBS["k8s_version"].help_text())
    parser.add_argument("--k8s-source", metavar="DIR", help=KNOBS["k8s_source"].help_text())
    parser.add_argument("--kubelet-version", metavar="X.Y.Z", help=KNOBS["kubelet_version"].help_text())


def _down_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("names", nargs="*", metavar="NAME", help="run ids or cluster names from `cluster list`")
    parser.add_argument("--all", action="store_true", help="every one of the provider's on this machine")


def _config_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--k8s-version", help=KNOBS["k8s_version"].help_text())
    parser.add_argument("--name", default="dc-manual", help="cluster name (default dc-manual)")
    parser.add_argument("--profile", dest="kind_profile", help=KNOBS["kind_profile"].help_text())
    parser.add_argument("--image", dest="kind_image", help=KNOBS["kind_image"].help_text())


def _node_image_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--k8s-version", help=KNOBS["k8s_version"].help_text())
    parser.add_argument("--k8s-bin-dir", help=KNOBS["k8s_bin_dir"].help_text())
    parser.add_argument(
        "--image", help="name of the image (default device-conformance.local/kind-node:vX.Y.Z of --k8s-version)"
    )
    parser.add_argument(
        "--load",
        action="store_true",
        help="also `docker load` it into the Docker engine of DOCKER_HOST (or the default)",
    )


def _no_options(_: argparse.ArgumentParser) -> None:
    pass


@dataclass(frozen=True)
class ClusterVerb:
    help: str
    options: Callable[[argparse.ArgumentParser], None] = _no_options
    # Without --provider: every provider that answers it, rather than the PROVIDER setting's.
    every_provider_by_default: bool = False


CLUSTER_VERBS = {
    "up": ClusterVerb("bring a cluster up and keep it; prints its kubeconfig", _up_options),
    "config": ClusterVerb("print the config the suite would create a cluster with", _config_options),
    "list": ClusterVerb(
        "the suite's clusters on this machine (every provider's without --provider)", every_provider_by_default=True
    ),
    "down": ClusterVerb("tear kept clusters down (only the suite's; nothing is left behind)", _down_options),
    "cleanup": ClusterVerb("tear down clusters left by crashed or killed sessions"),
    "build-node-image": ClusterVerb(
        "build a node image with no registry (Debian packages and Go modules only), cached by content",
        _node_image_options,
    ),
}


def answering(verb: str) -> list[str]:
    """The providers that answer `cluster VERB`, in the order messages list them."""
    return [name for name in PROVIDERS if verb in PROVIDER_CAPABILITIES[name].cluster_verbs]


def register(subparsers: argparse._SubParsersAction) -> None:
    cluster = subparsers.add_parser(
        "cluster", help="the suite's clusters, of any provider: up, config, list, down, cleanup, build-node-image"
    )
    verbs = cluster.add_subparsers(dest="cluster_verb", required=True)
    for verb, spec in CLUSTER_VERBS.items():
        parser = verbs.add_parser(verb, help=f"{spec.help} [--provider {'|'.join(answering(verb))}]")
        add_verb_options(parser, verb)
        parser.set_defaults(func=run)


def add_verb_options(parser: argparse.ArgumentParser, verb: str, *, provider_option: bool = True) -> None:
    """The options of `cluster VERB`; its old spelling (`kind ...`) has them all but --provider."""
    if provider_option:
        every = CLUSTER_VERBS[verb].every_provider_by_default
        default = "every provider that answers it" if every else "env PROVIDER, else auto"
        parser.add_argument("--provider", choices=PROVIDERS, help=f"whose clusters (default: {default})")
    CLUSTER_VERBS[verb].options(parser)


def run(args: argparse.Namespace) -> int:
    """Call the chosen provider's function for the verb with the settings of the verb's options."""
    verb = args.cluster_verb
    if args.provider is None and CLUSTER_VERBS[verb].every_provider_by_default:
        return _every_provider(verb, args)
    if args.provider is not None:
        verb_function(args.provider, verb, "option --provider")  # before resolving: existing's needs a kubeconfig
    settings = verb_settings(args, args.provider)
    function = verb_function(settings.provider.value, verb, str(settings.provider.source))
    return int(function(settings, args) or 0)


def verb_settings(args: argparse.Namespace, provider: str | None) -> Settings:
    """The settings of the verb's options (then the environment, then the defaults) for this provider."""
    given = {knob: getattr(args, knob) for knob in KNOB_OPTIONS if hasattr(args, knob)}
    return resolve({**given, "provider": provider}, option_names=KNOB_OPTIONS)


def verb_function(provider: str, verb: str, chosen_by: str) -> Callable[[Settings, argparse.Namespace], int]:
    """The provider's function for `cluster VERB`; BadInput naming who answers it when the provider does not."""
    from device_conformance.providers import load

    verbs = PROVIDER_CAPABILITIES[provider].cluster_verbs
    if verb not in verbs:
        others = " or ".join(f"`device-conformance cluster {verb} --provider {name}`" for name in answering(verb))
        own = (
            f"provider {provider} answers: {', '.join(verbs)}"
            if verbs
            else f"provider {provider} answers no `cluster` verb"
        )
        raise BadInput(
            f"provider {provider} ({chosen_by}) does not answer `cluster {verb}`",
            f"use {others}; {own}",
        )
    function: Callable[[Settings, argparse.Namespace], int] = load(verbs[verb])
    return function


def _every_provider(verb: str, args: argparse.Namespace) -> int:
    """The verb for each provider that answers it, under a heading each; a provider whose settings do not
    resolve (e.g. K8S_SOURCE set, which kind refuses) is reported and skipped, and the status is then 2."""
    status = 0
    for name in answering(verb):
        print(f"# provider {name}")
        function = verb_function(name, verb, f"every provider that answers `cluster {verb}`")
        try:
            settings = verb_settings(args, name)
        except BadInput as exc:
            print(f"#   skipped: {exc.problem} (fix: {exc.fix})")
            status = 2
            continue
        status = max(status, int(function(settings, args) or 0))
    return status
