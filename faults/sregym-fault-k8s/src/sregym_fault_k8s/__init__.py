"""Kubernetes-object and storage fault primitives."""
