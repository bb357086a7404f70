"""Hotel Reservation: a gRPC microservice application for SREGym.

Modelled on the public DeathStarBench Hotel Reservation topology: an HTTP ``frontend`` in front of
``search``, ``geo``, ``rate``, ``profile``, ``recommendation``, ``user`` and ``reservation``, each its own
process talking gRPC, with a PostgreSQL per data-owning service and memcached in front of profile,
rate and reservation. One package, one image; ``python -m sregym_app_hotel_reservation.serve <name>``
chooses the service.
"""

from __future__ import annotations

__version__ = "0.2.0"
IMAGE_REPO = "sregym/hotel-reservation"
IMAGE_TAG = "1.0"
