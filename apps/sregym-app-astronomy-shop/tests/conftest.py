"""Astronomy Shop tests (the SREGym harness comes from the repository's root conftest)."""
