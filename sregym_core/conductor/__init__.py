"""The conductor: runs problems end to end (deploy once, inject, hand over to the agent, grade,
recover, reconcile, record)."""
