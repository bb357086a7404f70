"""The embedded cluster's ingress controller: Debian's nginx driven by Ingress objects.

* :mod:`.render` — Ingress objects → ``nginx.conf`` (pure);
* :mod:`.controller` — the controller process the ``registry.k8s.io/ingress-nginx/controller``
  image runs in a pod (API reads, nginx reloads, Ingress status, ``Sync`` events);
* :mod:`.addon` — the objects the cluster installs at start (namespace ``ingress-nginx``, RBAC,
  the ``nginx`` IngressClass, the controller Deployment and its LoadBalancer Service).

This package imports nothing heavy: the controller pod imports it alone.
"""
