#!/usr/bin/env python3
"""Our MCP server against two peer MCP servers, on one loopback stub CRM (issue 24).

Each call is made by ours and by the peer against the same stub rows, in two modes:
  client  the Python `mcp` SDK over stdio (it validates structuredContent against each tool's
          outputSchema): the wall time a real client sees, and the text the model reads;
  bare    requests written straight to the server's stdin, response lines read back, no
          parsing in the timed loop: the server's own time, and the exact bytes on the wire.
Ours and the peer alternate within each round (the first to go swaps every round) and every
figure is the median over rounds of that round's p50/p99. Not for CI: needs the peers from npm
(run.sh installs them into a scratch folder).
"""
import argparse, asyncio, json, os, re, statistics, subprocess, sys, time, urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # no __pycache__ in the repository
from stub import ACCOUNT_ROWS, CONTACT_ROWS  # the ids the stub serves, for the link check

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

FIELDS = ["Id", "Name", "Industry", "Type", "BillingCity", "BillingCountry", "Phone", "Website",
          "AnnualRevenue", "NumberOfEmployees", "OwnerId", "CreatedDate"]
ONE = ACCOUNT_ROWS[0]["Id"]
PROPS = ["firstname", "lastname", "email", "phone", "company", "jobtitle", "lifecyclestage"]
# (label, server, tool, arguments, ids the answer holds). The Salesforce peer has no get-record
# tool: its one record is its query tool with `Id = '...'`. Its query tool builds
# `SELECT {fields} FROM {object} LIMIT n`, so ours gets that very text.
CALLS = [
    ("Salesforce, one record",
     ("ours", "crmb_get_record", {"object": "Account", "record_id": ONE, "fields": FIELDS[1:]}),
     ("salesforce", "salesforce_query_records",
      {"objectName": "Account", "fields": FIELDS, "whereClause": f"Id = '{ONE}'"}),
     [ONE]),
    ("Salesforce, 200-row SOQL",
     ("ours", "crmb_run_soql_query", {"query": f"SELECT {', '.join(FIELDS)} FROM Account LIMIT 200"}),
     ("salesforce", "salesforce_query_records",
      {"objectName": "Account", "fields": FIELDS, "limit": 200}),
     [a["Id"] for a in ACCOUNT_ROWS]),
    # The same rows, ours with layout "table" (field names once, a row of values per record,
    # the link in each): the form a model asks for when it expects many records.
    ("Salesforce, 200-row SOQL, layout table",
     ("ours", "crmb_run_soql_query",
      {"query": f"SELECT {', '.join(FIELDS)} FROM Account LIMIT 200", "layout": "table"}),
     ("salesforce", "salesforce_query_records",
      {"objectName": "Account", "fields": FIELDS, "limit": 200}),
     [a["Id"] for a in ACCOUNT_ROWS]),
    ("HubSpot, 100-contact search",
     ("ours", "crma_search_records", {"object_type": "contacts", "properties": PROPS, "limit": 100}),
     ("hubspot", "hubspot-search-objects", {"objectType": "contacts", "properties": PROPS, "limit": 100}),
     [c["id"] for c in CONTACT_ROWS]),
]


def servers(a, stub):
    """Command line and environment of each server, all pointed at the stub."""
    base, mods = stub["https"] or stub["http"], os.path.join(a.scratch, "npm", "node_modules")
    node_env = {"NODE_EXTRA_CA_CERTS": stub["ca"]} if stub["ca"] else {}
    ours = [a.ours, "mcp", "--proxy-base", base, "--tenant", "acme", "--user", "bench",
            "--instance-url", "https://acme.my.salesforce.com",
            # scratch state, and no pacing (the peers pace nothing either)
            "--data-dir", os.path.join(a.scratch, "data"), "--cache-dir", os.path.join(a.scratch, "cache"),
            "--pace", "off", "--answers", a.answers] + (["--ca-cert", stub["ca"]] if stub["ca"] else [])
    return {
        # The broker knows the connected HubSpot portal, as it knows the Salesforce org's URL:
        # with it every HubSpot record carries a link, as every Salesforce row does.
        "ours": (ours, {"CRM_PROXY_CREDENTIAL": "bench-credential", "CRM_A_PORTAL_ID": "12345678"}),
        # jsforce's username/password flow: a SOAP login at SALESFORCE_INSTANCE_URL, whose answer
        # names the stub as the instance (the token and CLI flows cannot reach a loopback port).
        "salesforce": ([a.node, f"{mods}/@tsmztech/mcp-server-salesforce/dist/index.js"],
                       {"SALESFORCE_CONNECTION_TYPE": "User_Password", "SALESFORCE_INSTANCE_URL": base,
                        "SALESFORCE_USERNAME": "bench@acme.example.com", "SALESFORCE_PASSWORD": "pw",
                        "SALESFORCE_TOKEN": "", **node_env}),
        "hubspot": ([a.node, f"{mods}/@hubspot/mcp-server/dist/index.js"],
                    {"BASE_URL_OVERRIDE": base, "PRIVATE_APP_ACCESS_TOKEN": "bench-token", **node_env}),
    }


def texts(content):
    """The text blocks of an answer: what the model reads."""
    return "".join(c.text for c in content if c.type == "text")


async def client_mode(cmd, env, tool, args, a):
    """Wall times through the validating Python client; the last answer's text."""
    params = StdioServerParameters(command=cmd[0], args=cmd[1:], env=env, cwd=a.scratch)
    with open(os.devnull, "w") as quiet:
        async with stdio_client(params, errlog=quiet) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            await s.list_tools()  # the output schemas the client validates against
            times = []
            for i in range(a.warmup + a.calls):
                t0 = time.perf_counter()
                res = await s.call_tool(tool, args)
                dt = time.perf_counter() - t0
                if res.is_error:
                    raise SystemExit(f"{tool} failed: {texts(res.content)[:500]}")
                if i >= a.warmup:
                    times.append(dt)
            return times, texts(res.content)


class Stdio:
    """A server process spoken to with bare JSON-RPC lines over its stdin and stdout."""

    def __init__(self, cmd, env, a):
        self.cmd = cmd
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, env={**os.environ, **env}, cwd=a.scratch)

    def ask(self, msg_id, method, params):
        """Sends one request; its response line, parsed, and the moment it was read."""
        self.p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method,
                                       "params": params}).encode() + b"\n")
        self.p.stdin.flush()
        while True:
            line = self.p.stdout.readline()
            t = time.perf_counter()  # parsed only after the clock stops
            if not line:
                raise SystemExit(f"{self.cmd[0]} exited")
            answer = json.loads(line) if line.startswith(b"{") else {}
            if answer.get("id") == msg_id:
                return line, answer, t  # anything else is a notification or a log line

    def initialize(self):
        """initialize and its notification; the moment the answer was read."""
        _, _, t = self.ask(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                             "clientInfo": {"name": "peers-bench", "version": "1"}})
        self.p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        return t

    def close(self):
        self.p.stdin.close()
        try:
            self.p.wait(5)
        except subprocess.TimeoutExpired:
            self.p.kill()


def bare_mode(cmd, env, tool, args, a):
    """Server-side times with a bare JSON-RPC client; the last response line's bytes."""
    server = Stdio(cmd, env, a)
    try:
        server.initialize()
        times = []
        for i in range(1, a.warmup + a.calls + 1):
            t0 = time.perf_counter()
            line, answer, t1 = server.ask(i, "tools/call", {"name": tool, "arguments": args})
            if "error" in answer or answer["result"].get("isError"):
                raise SystemExit(f"{tool} failed: {line[:500]!r}")
            if i > a.warmup:
                times.append(t1 - t0)
        return times, len(line.rstrip(b"\n"))
    finally:
        server.close()


def start_mode(cmd, env, tool, args, a):
    """Seconds from spawning a server to the answers of initialize, tools/list and a first call."""
    t0 = time.perf_counter()
    server = Stdio(cmd, env, a)
    try:
        init = server.initialize()
        _, _, listed = server.ask(1, "tools/list", {})
        line, answer, called = server.ask(2, "tools/call", {"name": tool, "arguments": args})
        if "error" in answer or answer["result"].get("isError"):
            raise SystemExit(f"{tool} failed: {line[:500]!r}")
        return init - t0, listed - t0, called - t0
    finally:
        server.close()


def with_cache_dir(cmd, cache):
    """Our command line with another --cache-dir."""
    cmd = list(cmd)
    cmd[cmd.index("--cache-dir") + 1] = cache
    return cmd


def start_figures(a, srv):
    """Start-up, each way a person meets it, the median over --start-runs fresh processes."""
    import shutil
    one_record = {"ours": CALLS[0][1], "peer": CALLS[0][2]}
    search = {"ours": CALLS[3][1], "peer": CALLS[3][2]}
    rows = []  # (who, how, install step s or None, [(init, list, call)])
    cmd, env = srv["ours"]
    tool, args = one_record["ours"][1:]
    precompile = lambda cache: subprocess.run([cmd[0], "precompile", "--cache-dir", cache], check=True,
                                              capture_output=True, env={**os.environ, **env})
    warm = os.path.join(a.scratch, "start-cache", "warm")
    shutil.rmtree(warm, ignore_errors=True)
    precompile(warm)
    for how in ("after install (crm-host precompile)", "no install step (empty cache)", "warm cache"):
        runs, install = [], []
        for _ in range(a.start_runs):
            cache = warm if how == "warm cache" else os.path.join(a.scratch, "start-cache", "fresh")
            if cache != warm:
                shutil.rmtree(cache, ignore_errors=True)
            if how.startswith("after install"):
                t = time.perf_counter()
                precompile(cache)
                install.append(time.perf_counter() - t)
            runs.append(start_mode(with_cache_dir(cmd, cache), env, tool, args, a))
        rows.append(("ours", how, statistics.median(install) if install else None, runs))
    for server, calls in (("salesforce", one_record), ("hubspot", search)):
        cmd, env = srv[server]
        runs = [start_mode(cmd, env, calls["peer"][1], calls["peer"][2], a) for _ in range(a.start_runs)]
        rows.append((server, "installed by npm", None, runs))
    ms = lambda s: f"{s * 1000:.0f} ms"
    print(f"\nstart-up: spawn to each answer, bare JSON-RPC over stdio, median of {a.start_runs} "
          "fresh processes (ours: crmb_get_record; Salesforce peer: its one-record query; "
          "HubSpot peer: its 100-contact search)\n")
    print("| server | how | install step | initialize | tools/list | first call |")
    print("|---|---|---|---|---|---|")
    for who, how, install, runs in rows:
        med = lambda i: statistics.median(r[i] for r in runs)
        print(f"| {who} | {how} | {ms(install) if install is not None else '-'} "
              f"| {ms(med(0))} | {ms(med(1))} | {ms(med(2))} |")


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def linked(text, ids):
    """Whether every record id of the answer appears inside a URL in the text the model reads."""
    urls = " ".join(re.findall(r"https?://[^\s\"'<>]+", text))
    return all(i in urls for i in ids)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ours", default="/work/main/target/release/crm-host", help="crm-host binary")
    ap.add_argument("--scratch", default="/tmp/peers", help="where run.sh put the peers (npm/)")
    ap.add_argument("--node", default="node", help="Node for the peers")
    ap.add_argument("--calls", type=int, default=200, help="timed calls per server per round and mode")
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--tls", action="store_true", help="everyone reaches the stub over HTTPS")
    ap.add_argument("--start-runs", type=int, default=5, help="fresh processes per start-up figure")
    ap.add_argument("--start-only", action="store_true", help="only the start-up figures")
    ap.add_argument("--answers", choices=["structured", "text"], default="text",
                    help="ours: the text alone (the default), or structuredContent with the text beside it")
    a = ap.parse_args()
    a.ours = os.path.abspath(a.ours)

    stub_cmd = [sys.executable, os.path.join(os.path.dirname(__file__), "stub.py")]
    stub_cmd += ["--tls", os.path.join(a.scratch, "tls")] if a.tls else []
    stub_proc = subprocess.Popen(stub_cmd, stdout=subprocess.PIPE, text=True)
    try:
        stub = json.loads(stub_proc.stdout.readline())
        if not a.tls:
            stub["https"] = stub["ca"] = None
        srv = servers(a, stub)
        if a.start_runs:
            start_figures(a, srv)
        if a.start_only:
            return
        # per call and side: one list per figure, one entry per round
        got = {(c[0], side): {k: [] for k in ("p50", "p99", "srv", "text", "wire", "linked")}
               for c in CALLS for side in ("ours", "peer")}
        for rnd in range(a.rounds):
            for label, ours, peer, ids in CALLS:
                for side, (server, tool, args) in sorted({"ours": ours, "peer": peer}.items(),
                                                         reverse=rnd % 2 == 1):
                    cmd, env = srv[server]
                    times, text = asyncio.run(client_mode(cmd, env, tool, args, a))
                    stimes, wire = bare_mode(cmd, env, tool, args, a)
                    g = got[(label, side)]
                    g["p50"].append(pct(times, .5)); g["p99"].append(pct(times, .99))
                    g["srv"].append(pct(stimes, .5)); g["text"].append(len(text.encode()))
                    g["wire"].append(wire); g["linked"].append(linked(text, ids))
            print(f"round {rnd + 1}/{a.rounds} done", file=sys.stderr, flush=True)
        with urllib.request.urlopen(stub["http"] + "/_stats") as r:
            seen = json.load(r)
    finally:
        stub_proc.terminate()

    med = lambda label, side, k: statistics.median(got[(label, side)][k])
    ms = lambda s: f"{s * 1000:.2f} ms"
    build = "debug build: not final figures" if "/debug/" in a.ours else "release build"
    build += f", --answers {a.answers}"
    print(f"\nours: {a.ours} ({build}); peers: @tsmztech/mcp-server-salesforce, @hubspot/mcp-server "
          f"on node {subprocess.run([a.node, '--version'], capture_output=True, text=True).stdout.strip()}; "
          f"stub over {'HTTPS' if a.tls else 'HTTP'}; {a.rounds} rounds x {a.calls} calls "
          f"(+{a.warmup} warm-up) per server and mode; medians over rounds\n")
    print("| call | ours p50 / p99 | peer p50 / p99 | server-side p50, ours / peer "
          "| text the model reads, ours / peer | bytes on the wire, ours / peer |")
    print("|---|---|---|---|---|---|")
    for label, *_ in CALLS:
        m = lambda side, k: med(label, side, k)
        print(f"| {label} | {ms(m('ours', 'p50'))} / {ms(m('ours', 'p99'))} "
              f"| {ms(m('peer', 'p50'))} / {ms(m('peer', 'p99'))} "
              f"| {ms(m('ours', 'srv'))} / {ms(m('peer', 'srv'))} "
              f"| {m('ours', 'text'):,.0f} / {m('peer', 'text'):,.0f} B "
              f"| {m('ours', 'wire'):,.0f} / {m('peer', 'wire'):,.0f} B |")
    print("\nevery record carries a link (an http(s) URL holding its id, in the text the model reads):")
    for label, *_ in CALLS:
        yes = lambda side: "yes" if all(got[(label, side)]["linked"]) else "no"
        print(f"  {label}: ours {yes('ours')}, peer {yes('peer')}")
    print("\nstub requests by path (the Salesforce peer logs in with SOAP on every call):")
    for path, n in sorted(seen.items()):
        print(f"  {n:7d}  {path}")


if __name__ == "__main__":
    main()
