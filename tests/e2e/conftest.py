"""End-to-end tests: real Chromium through the real HTTP app (fixtures: tests/conftest.py)."""
