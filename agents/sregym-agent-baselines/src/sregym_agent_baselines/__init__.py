"""SREGym validation agents."""
