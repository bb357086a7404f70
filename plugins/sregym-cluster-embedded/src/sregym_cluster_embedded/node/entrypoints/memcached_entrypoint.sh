#!/bin/sh
# What the official memcached image entrypoint does: flags alone mean "memcached <flags>".
case "$1" in
  -*) set -- memcached "$@" ;;
esac
# memcached refuses to run as root without -u; the image runs as user memcache.
if [ "$1" = memcached ] && [ "$(id -u)" = 0 ]; then
  case " $* " in
    *" -u "*|*" --user"*) ;;
    *) if id memcache >/dev/null 2>&1; then set -- "$@" -u memcache; else set -- "$@" -u nobody; fi ;;
  esac
fi
exec "$@"
