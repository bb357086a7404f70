"""Run SREGym work items on Ray workers (``sregym validate|run --executor ray --parallel N``)."""
