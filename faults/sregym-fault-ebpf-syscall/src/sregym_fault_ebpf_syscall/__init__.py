"""SREGym fault pack: syscall faults on a node's pods (cgroup BPF, a seccomp supervisor or the shim)."""
