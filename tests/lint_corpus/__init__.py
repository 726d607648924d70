"""Snippets for tests/test_lint.py (a package only so that its conftest gets a unique module name)."""
