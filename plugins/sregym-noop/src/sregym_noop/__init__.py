"""SREGym stand-in plugin."""
