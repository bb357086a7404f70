"""Names and ports every part of the app agrees on (manifests, services, workload, tests).

Image-side: imports nothing but the standard library, so the services and the host share it.
"""

from __future__ import annotations

NAMESPACE = "myapp"
#: the workload generator's namespace, hidden from agents (AppSpec.hidden_namespaces)
WORKLOAD_NAMESPACE = "myapp-workload"

FRONTEND, FRONTEND_PORT = "frontend", 8080
BACKEND, BACKEND_PORT = "backend", 8081
#: every service's /healthz, /readyz and /metrics (sregym_appkit.admin)
ADMIN_PORT = 9464

#: the datastore: a PostgreSQL StatefulSet keeping its data on the PVC ``<name>-data``
DATASTORE, DATASTORE_PORT = "postgres", 5432
DATASTORE_DB = "myapp"
DATASTORE_SECRET = "postgres-credentials"

LOAD_GENERATOR, LOAD_GENERATOR_PORT = "load-generator", 8089
