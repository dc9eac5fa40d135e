#!/usr/bin/env python3
"""push_receiver.py -- a Pyroscope ingest endpoint on loopback for the tests
of heapattach --push and heapdiff --push (tests/t_push*.sh).

    push_receiver.py DIR [--fail-first N] [--status CODE] [--delay SECS]
                         [--close-mid-body N] [--tls CERT KEY]

Listens on 127.0.0.1, an ephemeral port, written to DIR/port once it
listens.  Each request is checked as Pyroscope's /ingest handler reads it
(pkg/ingester/pyroscope/ingest_handler.go, api/model/labelset):
  - POST, path /ingest;
  - the query parsed as Go's url.ParseQuery does (';' is an error); name
    parsed by a port of labelset.Parse (the service name up to '{' of
    letters, digits and "._-/", label names of letters, digits, '_' and
    '.', a value ends at ',' or '}', both trimmed), label values valid
    UTF-8; from and until integers (unix seconds), from <= until;
    format=pprof;
  - a body that is gzip (pprof's own check reads it later: go tool pprof).
A request that fails a check is answered 400 with the reason, as Pyroscope
would; one that passes 200 with an empty body.  Every request is recorded
as DIR/req-N.json (method, path, query, the parsed labels, headers, the
answer, the error if any) with its body as DIR/req-N.body, N from 1 in the
order they were answered; DIR/count holds how many have been recorded
(written after the files, so a test can wait for it), DIR/arrived how many
requests have come in (before any delay), DIR/aborted how many were cut.

Faults, for the tests of what heapattach does with a bad receiver:
  --fail-first N      the first N requests are answered --status (503)
  --delay SECS        every answer comes SECS seconds after the body
  --close-mid-body N  the first N requests: half the body is read, then the
                      connection is closed without an answer
  --tls CERT KEY      https with that certificate
"""
import argparse
import gzip
import http.server
import json
import os
import socket
import ssl
import sys
import threading
import time
import urllib.parse

SERVICE_CHARS = set('abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-/')
LABEL_CHARS = set('abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.')


class Bad(Exception):
    pass


def parse_query(q):
    """Go's url.ParseQuery: '&'-separated, ';' an error, QueryUnescape."""
    out = {}
    for part in q.split('&'):
        if not part:
            continue
        if ';' in part:
            raise Bad('invalid semicolon separator in query')
        k, _, v = part.partition('=')
        try:
            k = urllib.parse.unquote_plus(k, errors='strict')
            v = urllib.parse.unquote_plus(v, errors='strict')
        except UnicodeDecodeError as e:
            raise Bad('query is not UTF-8: %s' % e)
        out.setdefault(k, []).append(v)
    return out


def parse_name(name):
    """A port of Pyroscope's labelset.Parse, with its validation."""
    labels = {}
    state, key, value = 'name', '', ''
    for ch in name + '{':
        if state == 'name':
            if ch == '{':
                svc = value.strip()
                if not svc:
                    raise Bad('service name is required')
                bad = [c for c in svc if c not in SERVICE_CHARS]
                if bad:
                    raise Bad('invalid service name: %r: character is not allowed: %r' % (svc, bad[0]))
                labels['__name__'] = svc
                state = 'labels'
            else:
                value += ch
        elif state == 'labels':
            if ch == '}':
                state = 'done'
            elif ch == '=':
                state, value = 'value', ''
            else:
                key += ch
        elif state == 'value':
            if ch in ',}':
                k = key.strip()
                if k != '__name__':
                    if not k:
                        raise Bad('label name is required')
                    bad = [c for c in k if c not in LABEL_CHARS]
                    if bad:
                        raise Bad('invalid label name: %r: character is not allowed: %r' % (k, bad[0]))
                labels[k] = value.strip()
                key = ''
                state = 'labels' if ch == ',' else 'done'
            else:
                value += ch
    return labels


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'   # keep-alive, as a real server

    def log_message(self, fmt, *args):
        with open(os.path.join(self.server.dir, 'log'), 'a') as f:
            f.write('%s %s\n' % (time.strftime('%H:%M:%S'), fmt % args))

    def record(self, body, status, error):
        srv = self.server
        with srv.lock:
            srv.n += 1
            n = srv.n
        u = urllib.parse.urlsplit(self.path)
        rec = {'n': n, 'method': self.command, 'path': u.path, 'raw_query': u.query,
               'headers': {k.lower(): v for k, v in self.headers.items()},
               'status': status, 'error': error, 'size': len(body), 'time': time.time()}
        try:
            q = parse_query(u.query)
            rec['query'] = {k: v[0] for k, v in q.items()}
            if 'name' in q:
                rec['labels'] = parse_name(q['name'][0])
        except Bad:
            pass
        with open(os.path.join(srv.dir, 'req-%d.body' % n), 'wb') as f:
            f.write(body)
        with open(os.path.join(srv.dir, 'req-%d.json' % n), 'w') as f:
            json.dump(rec, f, indent=1)
        with srv.lock:
            srv.recorded += 1
            tmp = os.path.join(srv.dir, 'count.tmp')
            with open(tmp, 'w') as f:
                f.write('%d\n' % srv.recorded)
            os.replace(tmp, os.path.join(srv.dir, 'count'))

    def check(self, body):
        u = urllib.parse.urlsplit(self.path)
        if self.command != 'POST':
            raise Bad('method %s' % self.command)
        if u.path != '/ingest':
            raise Bad('path %s, not /ingest' % u.path)
        q = parse_query(u.query)
        for k in ('name', 'from', 'until', 'format'):
            if k not in q:
                raise Bad('no %s in the query' % k)
            if len(q[k]) != 1:
                raise Bad('%s given %d times' % (k, len(q[k])))
        if q['format'][0] != 'pprof':
            raise Bad('format %r, not pprof' % q['format'][0])
        labels = parse_name(q['name'][0])
        for k, v in labels.items():
            if isinstance(v, str) and '\ufffd' in v:
                raise Bad('label %s: invalid UTF-8' % k)
        try:
            t0, t1 = int(q['from'][0]), int(q['until'][0])
        except ValueError:
            raise Bad('from/until are not integers: %r %r' % (q['from'][0], q['until'][0]))
        if t0 > t1:
            raise Bad('from %d after until %d' % (t0, t1))
        try:
            gzip.decompress(body)
        except Exception as e:
            raise Bad('the body is not gzip: %s' % e)

    def do_POST(self):
        srv = self.server
        with srv.lock:
            srv.arrived += 1
            nth = srv.arrived
            tmp = os.path.join(srv.dir, 'arrived.tmp')
            with open(tmp, 'w') as f:
                f.write('%d\n' % nth)
            os.replace(tmp, os.path.join(srv.dir, 'arrived'))
        length = int(self.headers.get('Content-Length', '0'))
        if nth <= srv.args.close_mid_body:
            self.rfile.read(length // 2)
            self.log_message('request %d: closed after %d of %d bytes', nth, length // 2, length)
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            with srv.lock:
                srv.aborted += 1
                with open(os.path.join(srv.dir, 'aborted'), 'w') as f:
                    f.write('%d\n' % srv.aborted)
            return
        body = self.rfile.read(length)
        error = None
        try:
            self.check(body)
            status = srv.args.status if nth <= srv.args.fail_first else 200
        except Bad as e:
            status, error = 400, str(e)
        if srv.args.delay:
            time.sleep(srv.args.delay)
        self.record(body, status, error)
        payload = (error or ('injected failure' if status != 200 else '')).encode()
        self.send_response(status)
        self.send_header('Content-Length', str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('dir')
    ap.add_argument('--fail-first', type=int, default=0)
    ap.add_argument('--status', type=int, default=503)
    ap.add_argument('--delay', type=float, default=0)
    ap.add_argument('--close-mid-body', type=int, default=0)
    ap.add_argument('--tls', nargs=2, metavar=('CERT', 'KEY'))
    args = ap.parse_args()
    srv = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
    srv.daemon_threads = True
    srv.dir, srv.args, srv.lock = args.dir, args, threading.Lock()
    srv.n = srv.arrived = srv.recorded = srv.aborted = 0
    if args.tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.tls[0], args.tls[1])
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    tmp = os.path.join(args.dir, 'port.tmp')
    with open(tmp, 'w') as f:
        f.write('%d\n' % srv.server_address[1])
    os.replace(tmp, os.path.join(args.dir, 'port'))
    srv.serve_forever()


if __name__ == '__main__':
    sys.exit(main())
