"""moto_server that handles one request at a time.

moto's backends are not safe under concurrent requests: seen in our pipeline tests under CPU
load, two concurrent TransactWriteItems with `attribute_not_exists` on the same key both
succeeded (an item counted twice), and concurrent ReceiveMessage calls on one queue handed a
message to two receivers and lost another. Real AWS serialises these; so does this wrapper,
by taking a lock around each request. Connections are still accepted concurrently.

Usage: python3 scripts/moto_serial.py -H 127.0.0.1 -p PORT
"""
import argparse
import os
import threading

from moto.server import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import run_simple


class Serialised:
    def __init__(self, app):
        self.app = app
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        with self.lock:
            # Build the whole response under the lock: moto may compute it lazily.
            return list(self.app(environ, start_response))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("-H", "--host", default="127.0.0.1")
    parser.add_argument("-p", "--port", type=int, required=True)
    args = parser.parse_args()
    os.environ.setdefault("MOTO_PORT", str(args.port))
    app = DomainDispatcherApplication(create_backend_app)
    run_simple(args.host, args.port, Serialised(app), threaded=True)


if __name__ == "__main__":
    main()
