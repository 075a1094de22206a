"""What a scenario in suites/ works with: handles on pods, claim pods and node resources, and the
device-taint eviction as a user sees it."""
