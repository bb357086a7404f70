"""Every problem file Hotel Reservation ships resolves against the installed plugins."""

from __future__ import annotations

import sregym_app_hotel_reservation.plugin

from sregym_core.testing.contracts import ProblemContract


class TestHotelProblems(ProblemContract):
    plugin = sregym_app_hotel_reservation.plugin
