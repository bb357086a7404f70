"""SREGym fault pack: faults in the cluster itself (admission webhooks, Pod Security admission)."""
