"""Files injected into pod processes (see sitecustomize.py); not imported by the cluster itself."""
