"""sregym-appkit: the runtime every SREGym app's services share, in one copy.

An app (a package under ``apps/``) takes from it:

- :mod:`sregym_appkit.logs` — JSON log lines on stdout (``ts``, ``level``, ``service``, ``event``,
  trace ids inside a traced request). Call ``logs.configure(service, level)`` once per process.
- :mod:`sregym_appkit.admin` — ``AdminServer``: ``/healthz``, ``/readyz`` (your readiness callable)
  and ``/metrics`` (the process's Prometheus registry) on the admin port.
- :mod:`sregym_appkit.tracing` — ``setup_tracing(service, namespace)`` (OTLP/HTTP when
  ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set, else no-op), ``shutdown_tracing``, and ``carrier()`` /
  ``extract()`` to carry the W3C trace context over any hop. Your metrics stay in your app (their
  names carry your app's prefix).
- :mod:`sregym_appkit.workload` — the open-loop workload generator and its ``/stats`` + ``/control``
  API (the mitigation oracles' functional SLO): subclass ``Generator`` with ``endpoints``,
  ``choose``, ``prepare`` and ``send`` (send one request, check its content, return an
  ``Outcome``), and expose ``main(build)`` as your image's ``workload`` command.
- :mod:`sregym_appkit.flagd` — ``FlagFile``: flagd's JSON flag file, reloaded on change and evaluated
  for the OpenFeature Remote Evaluation Protocol (an app's ``flagd`` service routes OFREP to it).
- :mod:`sregym_appkit.stats` — the request ring buffer and ``summarize`` behind ``/stats``.
- :mod:`sregym_appkit.deploy` — ``Kubectl`` and ``AppDeployment`` (apply manifests, wait until every
  pod is Ready and the workload succeeds), for the app's ``AppSpec.deploy``.
- :mod:`sregym_appkit.manifests` — load the YAML manifests shipped in your package and render
  parameters into them (image tag, replicas, env).

It depends only on what every app image already installs (prometheus-client, opentelemetry-api,
aiohttp, pyyaml); the modules the images use never import sregym_core: images install the app
packages with ``pip install --no-deps`` and do not carry the core. :mod:`sregym_appkit.deploy` runs on
the host and needs the core (the ``deploy`` extra).
"""
