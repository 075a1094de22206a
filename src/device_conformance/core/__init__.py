"""What every layer may use, importing nothing of the package: the errors, the wait limits, Ctrl-C held over a
teardown, and the suites' recorded module durations that --dist loadgroup orders by."""
