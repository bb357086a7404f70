"""SREGym fault pack: syscall faults on a node's pods (LD_PRELOAD shim on the embedded cluster)."""
