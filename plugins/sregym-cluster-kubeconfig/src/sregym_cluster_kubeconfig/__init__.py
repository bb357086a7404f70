"""SREGym cluster provider for existing clusters."""
