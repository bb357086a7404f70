"""Entrypoint scripts that stand in for official images' ``docker-entrypoint.sh``."""
