"""Transient, self-recovering disturbances for SREGym's ambient noise (see :mod:`.sources`)."""
