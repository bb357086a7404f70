"""SREGym embedded Kubernetes-compatible cluster."""
