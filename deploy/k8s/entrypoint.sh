#!/bin/sh
# deploy/k8s/Dockerfile's entrypoint: give the pod's uid a name if it has none (each user's
# pod runs as a uid of its own), then run the command (jupyterhub-singleuser).
set -e
if ! whoami >/dev/null 2>&1; then
    grep -v '^jovyan:' /etc/passwd > /tmp/passwd.$$ || true
    echo "jovyan:x:$(id -u):$(id -g):student:/home/jovyan:/bin/sh" >> /tmp/passwd.$$
    cat /tmp/passwd.$$ > /etc/passwd && rm -f /tmp/passwd.$$
fi
exec "$@"
