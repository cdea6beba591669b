"""An OTLP/HTTP receiver for benchmarks: takes every export with 200 and counts bodies and bytes, parsing nothing,
so the receiver's own cost stays out of the figures. Prints its totals on SIGTERM.

    python otlp_sink.py PORT
"""

import http.server
import signal
import sys

totals = {"requests": 0, "bytes": 0}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        self.rfile.read(length)
        totals["requests"] += 1
        totals["bytes"] += length
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def main():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)

    def stop(*_):
        print(f"otlp_sink requests={totals['requests']} bytes={totals['bytes']}", flush=True)
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    server.serve_forever()


if __name__ == "__main__":
    main()
