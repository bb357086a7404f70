#!/bin/sh
# What the official redis/valkey image entrypoint does, for the host's redis-server:
# a first argument that is a flag or a .conf file means "redis-server <args>".
case "$1" in
  -*|*.conf) set -- redis-server "$@" ;;
esac
# The official image is built with protected mode off; Debian's binary is not. Pods reach each
# other from other 127/8 addresses, which protected mode would refuse.
if [ "$1" = redis-server ] || [ "$1" = valkey-server ]; then
  case " $* " in
    *" --protected-mode "*|*.conf*) ;;
    *) set -- "$@" --protected-mode no ;;
  esac
fi
exec "$@"
