"""Inside the CLI sandbox's own network namespace: the listeners that stand for the allowed endpoints.

This file is copied into the sandbox and run by the system ``python3`` (standard library only: the
SREGym package is not visible inside). ``python3 forwarder.py SPEC -- COMMAND...`` reads SPEC (JSON
``{"forwards": [{"host": "127.0.0.1", "port": 8000, "socket": "/.../ep-0.sock"}, ...]}``), listens
on each ``host:port`` (any 127.0.0.0/8 address can be bound on the namespace's loopback), relays
every connection to its Unix socket (the host-side relay, which connects to the one real address),
then runs COMMAND and exits with its status. Nothing else is reachable: the namespace has only
loopback, so an address not listed has no route to the host.
"""

import json
import signal
import socket
import subprocess
import sys
import threading


def _pump(source, sink):
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    finally:
        try:
            sink.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def _serve(listener, path):
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=_connect, args=(client, path), daemon=True).start()


def _connect(client, path):
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        upstream.close()
        return
    back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
    back.start()
    _pump(client, upstream)
    back.join()
    client.close()
    upstream.close()


def main(argv):
    if len(argv) < 3 or argv[1] != "--":
        sys.stderr.write("usage: forwarder.py SPEC -- COMMAND...\n")
        return 2
    with open(argv[0]) as handle:
        spec = json.load(handle)
    for forward in spec["forwards"]:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            listener.bind((forward["host"], int(forward["port"])))
            listener.listen(64)
        except OSError as exc:  # e.g. a port below 1024: the sandbox holds no capability to bind it
            sys.stderr.write(f"sregym sandbox: cannot listen on {forward['host']}:{forward['port']}: {exc}\n")
            listener.close()
            continue
        threading.Thread(target=_serve, args=(listener, forward["socket"]), daemon=True).start()
    child = subprocess.Popen(argv[2:])
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda number, _frame: child.send_signal(number))
    code = child.wait()
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
