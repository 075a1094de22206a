"""Processes on the machine that runs the suite: the ones we start, and the Docker CLI."""
