"""SREGym fault pack: node-level faults acting through the cluster handle's node fault hooks."""
