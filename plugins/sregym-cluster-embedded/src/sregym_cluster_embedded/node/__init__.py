"""Node agents: pods run as real local processes (image catalog, volumes, probes, limits, logs).

Entry point for the cluster process: :func:`start_nodes` returns a :class:`NodeSet` whose
``runtime`` implements the PodRuntime contract (logs, exec, metrics). Options of
``start_nodes(client, settings, **options)``:

* ``image_sources``: callables returning ``[(pattern, Recipe), ...]`` (apps register images);
  defaults to ``settings.image_sources`` when the settings carry one.
* ``service_env(namespace) -> dict``: the ``<SVC>_SERVICE_HOST/PORT`` variables (default: computed
  from the namespace's Services).
* ``pod_env(pod) -> dict``: extra env for every container of a pod.
* ``resolv_conf(pod) -> str | None``: a pod's /etc/resolv.conf (used with mount namespaces).
* ``token_source(pod, projection) -> str``: service-account tokens for projected volumes (the API
  server's signer); without it pods get a placeholder token.
* ``backend``: "cgroup-v2" | "cgroup-v1" | "userspace" | "none" (default: detected).
* ``mount_ns``: force exact paths on/off (default: on when root and it works here).

How container paths work (processes cannot chroot into an image):

* As root, each container gets a private mount namespace and a chroot that shows the host's
  directories plus every volume and image directory at its exact mountPath (see mountns.py);
  nothing is created or mounted on the host itself. A volume that would hide the runtime (the
  Python interpreter, the state dir, /usr ...) makes that one container fall back to rewriting.
* Otherwise paths are rewritten (see pathmap.py): arguments, env values and the working directory
  that start with a mountPath point at the real directory, and ``$SREGYM_MOUNTS`` (JSON) and
  ``$SREGYM_ROOT`` tell apps where things are.

Each pod gets an IP in ``<pod_cidr_prefix>.<node>.<n>``; an LD_PRELOAD shim (or a sitecustomize
fallback for Python without gcc) makes binds to 0.0.0.0/127.0.0.1 use it and "localhost" reach it.
"""

from __future__ import annotations

from .images import ImageCatalog, Recipe
from .kubelet import NodeSet, start_nodes

__all__ = ["ImageCatalog", "NodeSet", "Recipe", "start_nodes"]
