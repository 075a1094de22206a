"""The verbs of `device-conformance cluster VERB --provider NAME`, one module per provider: each function is named
in that provider's settings.PROVIDER_CAPABILITIES[NAME].cluster_verbs and called as (settings, args) -> exit status
by cli/cluster.py."""
