#!/usr/bin/env python3
"""One loopback stub CRM (Salesforce REST + HubSpot search) for the peer comparison.

Every server under test reads the same rows from it: ours through the broker layout
(`/sdk/proxy/{salesforce|hubspot}/...`, which the stub strips), the peers at the bare paths.
It serves plain HTTP and, with --tls DIR, HTTPS too (a throw-away CA signs a leaf for
127.0.0.1 in DIR, for a host that insists on https). Stdlib only.

Prints one JSON line, {"http": URL, "https": URL|null, "ca": PEM|null}, then serves until
killed. GET /_stats answers the requests counted per method and path (who sent what).
"""
import argparse, json, os, re, socket, ssl, subprocess, sys, threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

ACCOUNTS, CONTACTS, CONTACTS_TOTAL = 200, 100, 1000
INDUSTRIES = ["Energy", "Banking", "Retail", "Technology", "Healthcare", "Manufacturing"]
CITIES = [("Houston", "United States"), ("London", "United Kingdom"), ("Paris", "France"),
          ("Toronto", "Canada"), ("Munich", "Germany"), ("Osaka", "Japan")]


def sf_id(prefix, n):
    """An 18-character Salesforce id: 15 characters plus Salesforce's case checksum."""
    body = f"{prefix}5gA{n:09d}"
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ012345"
    return body + "".join(
        alphabet[sum(1 << i for i, c in enumerate(body[k:k + 5]) if c.isupper())]
        for k in (0, 5, 10))


def account(n):
    city, country = CITIES[n % len(CITIES)]
    return {"Id": sf_id("001", n), "Name": f"Account {n:03d} {INDUSTRIES[n % 6]} Ltd",
            "Industry": INDUSTRIES[n % 6], "Type": "Customer - Direct", "BillingCity": city,
            "BillingCountry": country, "Phone": f"+1 713 555 {n:04d}",
            "Website": f"https://www.example.com/a{n}", "AnnualRevenue": 1_000_000 * (n % 90 + 1),
            "NumberOfEmployees": 10 * (n % 500 + 1), "OwnerId": sf_id("005", n % 7 + 1),
            "CreatedDate": f"2025-{n % 12 + 1:02d}-{n % 28 + 1:02d}T15:20:00.000+0000",
            "LastModifiedDate": "2026-11-02T09:00:00.000+0000"}


def contact(n):
    cid = str(357200 + n)
    stamp = f"2025-{n % 12 + 1:02d}-{n % 28 + 1:02d}T10:00:00.000Z"
    props = {"firstname": f"First{n}", "lastname": f"Last{n}",
             "email": f"person{n}@company{n % 40}.example.com", "phone": f"+1 617 555 {n:04d}",
             "company": f"Company {n % 40}", "jobtitle": "VP Operations",
             "lifecyclestage": "customer", "hubspot_owner_id": str(81035700 + n % 7),
             "hs_object_id": cid, "createdate": stamp, "lastmodifieddate": stamp}
    return {"id": cid, "properties": props, "createdAt": stamp, "updatedAt": stamp,
            "archived": False}


ACCOUNT_ROWS = [account(n) for n in range(1, ACCOUNTS + 1)]
BY_ID = {a["Id"][:15]: a for a in ACCOUNT_ROWS}
CONTACT_ROWS = [contact(n) for n in range(1, CONTACTS + 1)]
JSON = "application/json;charset=UTF-8"
HUBSPOT_DEFAULTS = ["firstname", "lastname", "email", "hs_object_id", "createdate", "lastmodifieddate"]
SOQL = re.compile(r"SELECT\s+(.+?)\s+FROM\s+(\w+)(?:\s+WHERE\s+Id\s*=\s*'(\w+)')?"
                  r"(?:\s+LIMIT\s+(\d+))?\s*$", re.I | re.S)


def sf_record(row, version, fields):
    # Salesforce's shape: `attributes` first, then the fields asked for in the order asked.
    out = {"attributes": {"type": "Account",
                          "url": f"/services/data/{version}/sobjects/Account/{row['Id']}"}}
    out.update({f: row.get(f) for f in fields})
    return out


def salesforce(method, rest, query, base):
    if method == "POST" and rest[:3] == ["services", "Soap", "u"]:
        # jsforce's SOAP login (the Salesforce peer logs in on every tool call): hand back
        # this stub as the instance.
        return 200, "text/xml", (
            '<?xml version="1.0" encoding="UTF-8"?><soapenv:Envelope '
            'xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"><soapenv:Body>'
            '<loginResponse><result><passwordExpired>false</passwordExpired>'
            f'<serverUrl>{base}/services/Soap/u/{rest[3]}/00D5gA000000001</serverUrl>'
            '<sessionId>00D5gA000000001!stub</sessionId><userId>0055gA000000001ABA</userId>'
            '<userInfo><organizationId>00D5gA000000001MAA</organizationId></userInfo>'
            '<organizationId>00D5gA000000001MAA</organizationId></result></loginResponse>'
            '</soapenv:Body></soapenv:Envelope>').encode()
    if method != "GET" or rest[:2] != ["services", "data"]:
        return None
    if len(rest) == 2:  # the version list
        return 200, None, [{"version": "62.0", "url": "/services/data/v62.0"},
                           {"version": "65.0", "url": "/services/data/v65.0"}]
    version = rest[2]
    if rest[3:] == ["query"]:
        m = SOQL.match(parse_qs(query).get("q", [""])[0])
        if not m:
            return 400, None, [{"message": "stub: unsupported SOQL", "errorCode": "MALFORMED_QUERY"}]
        fields = [f.strip() for f in m.group(1).split(",")]
        rows = [BY_ID[m.group(3)[:15]]] if m.group(3) else ACCOUNT_ROWS
        rows = rows[: int(m.group(4) or len(rows))]
        return 200, None, {"totalSize": len(rows), "done": True,
                           "records": [sf_record(r, version, fields) for r in rows]}
    if rest[3:5] == ["sobjects", "Account"] and len(rest) == 6 and rest[5][:15] in BY_ID:
        row = BY_ID[rest[5][:15]]
        fields = parse_qs(query).get("fields", [",".join(row)])[0].split(",")
        return 200, None, sf_record(row, version, ["Id"] + [f for f in fields if f != "Id"])
    return 404, None, [{"message": "The requested resource does not exist", "errorCode": "NOT_FOUND"}]


def hubspot(method, rest, body):
    if method != "POST" or rest != ["crm", "v3", "objects", "contacts", "search"]:
        return None
    ask = json.loads(body or b"{}")
    # HubSpot answers the properties asked for plus hs_object_id, createdate and
    # lastmodifieddate; nothing asked for, its default set for contacts.
    names = list(ask.get("properties") or HUBSPOT_DEFAULTS)
    names += [d for d in ("hs_object_id", "createdate", "lastmodifieddate") if d not in names]
    limit = int(ask.get("limit", 10))
    results = [dict(c, properties={n: c["properties"].get(n) for n in names})
               for c in CONTACT_ROWS[:limit]]
    after = str(limit)
    return 200, None, {"total": CONTACTS_TOTAL, "results": results,
                       "paging": {"next": {"after": after, "link": f"?after={after}"}}}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"   # keep-alive, as both the host's pool and Node's use it
    disable_nagle_algorithm = True  # headers and body go in separate writes
    stats = Counter()
    cache = {}                      # answers are deterministic: serialise each one once

    def log_message(self, *args):
        pass

    def body(self):
        # jsforce streams its SOAP login chunked: a body left unread would be taken for the
        # next request on the kept-alive connection (and jsforce retries after 500 ms).
        if self.headers.get("Transfer-Encoding", "").lower() != "chunked":
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))
        out = b""
        # Its chunks come in small writes held by the client's Nagle until acknowledged: ACK at
        # once, or each login waits out the delayed ACK (40 ms over TLS).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
        while size := int(self.rfile.readline().split(b";")[0], 16):
            out += self.rfile.read(size)
            self.rfile.readline()
        while self.rfile.readline() not in (b"\r\n", b"\n", b""):  # trailers
            pass
        return out

    def answer(self):
        url = urlsplit(self.path)
        body = self.body()
        segments = [s for s in url.path.split("/") if s]
        if segments[:2] == ["sdk", "proxy"]:
            segments = segments[3:]   # the broker's /sdk/proxy/{integration}/ prefix
        base = f"{'https' if isinstance(self.connection, ssl.SSLSocket) else 'http'}://{self.headers['Host']}"
        key = (base, self.command, tuple(segments), url.query, body)
        if url.path == "/_stats":
            status, ctype, data = 200, JSON, json.dumps(Handler.stats).encode()
        elif key in Handler.cache:
            status, ctype, data = Handler.cache[key]
        else:
            got = (hubspot(self.command, segments, body) if segments[:1] == ["crm"]
                   else salesforce(self.command, segments, url.query, base))
            status, ctype, data = got or (404, None, {"status": "error", "message": "stub: no route"})
            if ctype is None:
                # Compact, as the APIs answer unless asked to pretty-print (X-PrettyPrint: 1)
                ctype, data = JSON, json.dumps(data, separators=(",", ":")).encode()
            Handler.cache[key] = (status, ctype, data)
        Handler.stats[f"{self.command} {url.path}"] += 1
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = answer


def make_certs(folder):
    """A throw-away CA and a CA:FALSE leaf for 127.0.0.1 (webpki refuses a CA used as a leaf)."""
    os.makedirs(folder, exist_ok=True)
    p = lambda name: os.path.join(folder, name)
    run = lambda *a: subprocess.run(a, check=True, capture_output=True)
    run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
        "/CN=peers stub CA", "-keyout", p("ca.key"), "-out", p("ca.pem"),
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign")
    run("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
        "-keyout", p("leaf.key"), "-out", p("leaf.csr"))
    with open(p("leaf.ext"), "w") as f:
        f.write("basicConstraints=critical,CA:FALSE\nsubjectAltName=IP:127.0.0.1\n"
                "extendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n")
    run("openssl", "x509", "-req", "-in", p("leaf.csr"), "-CA", p("ca.pem"), "-CAkey", p("ca.key"),
        "-CAcreateserial", "-days", "2", "-extfile", p("leaf.ext"), "-out", p("leaf.pem"))
    return p("ca.pem"), p("leaf.pem"), p("leaf.key")


def serve(server):
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.server_address[1]


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tls", metavar="DIR", help="also serve HTTPS, with certificates made in DIR")
    args = ap.parse_args()
    info = {"http": f"http://127.0.0.1:{serve(ThreadingHTTPServer(('127.0.0.1', 0), Handler))}",
            "https": None, "ca": None}
    if args.tls:
        ca, cert, key = make_certs(args.tls)
        tls = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(cert, key)
        tls.socket = ctx.wrap_socket(tls.socket, server_side=True)
        info.update(https=f"https://127.0.0.1:{serve(tls)}", ca=ca)
    print(json.dumps(info), flush=True)
    threading.Event().wait()
