#!/usr/bin/env python3
"""An HTTP server that echoes the request's Authorization header in an
HTTP 400 body, for the test that mcpmux keeps config secrets out of errors.

    python3 tests/servers/net/echo_auth.py [--port N]

Binds 127.0.0.1:N (N = 0, the default, picks a free port), then prints one
line `READY <port>` on stdout. Every request (any method, any path) is
answered 400 text/plain:

  /pad...   300 - 20 bytes of padding first, so the echoed header value is
            cut in two where mcpmux cuts a quoted body (300 bytes)
  else      `bad request: Authorization: <value> is not accepted`

Standard library only.
"""
import argparse
import http.server
import sys


class Handler(http.server.BaseHTTPRequestHandler):
    def answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        value = self.headers.get("Authorization", "")
        body = "bad request: Authorization: %s is not accepted" % value
        if self.path.startswith("/pad"):
            body = "x" * (300 - 20 - len("Authorization: ")) + "Authorization: " + value
        data = body.encode("utf-8")
        self.send_response(400)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_POST = answer
    do_GET = answer
    do_DELETE = answer

    def log_message(self, *args):
        pass


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print("READY %d" % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
