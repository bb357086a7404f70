#!/bin/sh
# kube-proxy on an embedded node. The node's service rules are programmed in the cluster's service
# proxy, which follows this pod's image (network/kubeproxy.py); this process logs what kube-proxy
# logs at start-up (klog format, on stderr) and then waits, as kube-proxy does between syncs.
now() { date -u '+%m%d %H:%M:%S.000000'; }
node="${NODE_NAME:-$(hostname)}"
{
  echo "I$(now)       1 server_linux.go:66] \"Using iptables proxy\""
  echo "I$(now)       1 server.go:677] \"Successfully retrieved node IP(s)\" node=\"$node\""
  echo "I$(now)       1 server_linux.go:169] \"Using iptables Proxier\""
  echo "I$(now)       1 proxier.go:245] \"Setting route_localnet=1 to allow node-ports on localhost\""
  echo "I$(now)       1 config.go:199] \"Starting service config controller\""
  echo "I$(now)       1 config.go:105] \"Starting endpoint slice config controller\""
  echo "I$(now)       1 shared_informer.go:320] \"Caches are synced\" controller=\"service config\""
  echo "I$(now)       1 shared_informer.go:320] \"Caches are synced\" controller=\"endpoint slice config\""
} >&2
exec sleep 2147483647
