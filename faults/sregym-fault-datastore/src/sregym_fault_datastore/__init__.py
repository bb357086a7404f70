"""Datastore fault primitives."""
