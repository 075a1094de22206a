"""A vendor's subject (its device plugin or DRA driver): as given on the command line, as the suites start it,
and the manifests of the upstream subjects."""
