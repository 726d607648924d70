"""These snippets are data for tests/test_lint.py: they are read, never run or collected (not even by nbval)."""

collect_ignore_glob = ["*.py", "*.ipynb"]
