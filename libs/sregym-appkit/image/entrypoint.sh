#!/bin/sh
# An app image's entry point (libs/sregym-appkit/Dockerfile): `python -m <module> <args>`, the module
# and the default first argument read from /etc/sregym-app-entry (written at build time). A
# container's args name the service or command; with none, the image's default service runs.
# exec: python is the container's first process and receives its signals (SIGTERM on a stop).
{ read -r module; read -r service; } < /etc/sregym-app-entry
if [ "$#" -eq 0 ] && [ -n "$service" ]; then
    set -- "$service"
fi
exec python -m "$module" "$@"
