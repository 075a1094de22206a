pytest_plugins: list[str] = []  # our plugin loads through the pytest11 entry point (pyproject.toml)
