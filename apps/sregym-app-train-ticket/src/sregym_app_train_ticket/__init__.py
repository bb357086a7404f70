"""TrainTicket: the railway ticketing microservice benchmark's topology as an SREGym application.

Our own implementation: ``ts-ui-dashboard`` (the gateway) routes ``/api/v1/<service>/...`` to 25
``ts-*-service`` services speaking JSON over HTTP; services that own data keep it in their own
schema of one MariaDB server (``ts-mysql``); feature flags come from a flagd-compatible ``flagd``
over OFREP and guard faulty code paths (real SQL errors), beside decoy flags that change nothing.
One package, one image; ``python -m sregym_app_train_ticket.serve <service>`` picks the service.
"""

from __future__ import annotations

__version__ = "0.2.0"
IMAGE_REPO = "sregym/train-ticket"
IMAGE_TAG = "1.0"
