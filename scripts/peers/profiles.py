"""Host builds side by side: size, precompile time, warm start to tools/list, server-side p50 per call.

How the host's release profile was chosen (docs/contributors.md, "The host's release profile"):
build crm-host several ways (e.g. `cargo build --release -p crm-host --target-dir /tmp/t-x
--config profile.release.opt-level=3`), then, with the machine quiet, in run.sh's venv:

    /tmp/peers/venv/bin/python scripts/peers/profiles.py /tmp/t-a/release/crm-host /tmp/t-b/release/crm-host

Ours only, against compare.py's stub and with its bare JSON-RPC client; rounds alternate the order.
"""
import sys, os, json, subprocess, statistics, time, shutil, types
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import compare
bins = sys.argv[1:]
a = types.SimpleNamespace(scratch="/tmp/peers", answers="text", calls=300, warmup=30, node="node")
stub_proc = subprocess.Popen([sys.executable, os.path.join(here, "stub.py")], stdout=subprocess.PIPE, text=True)
stub = json.loads(stub_proc.stdout.readline()); stub["https"] = stub["ca"] = None
rows = {}
try:
    for rnd in range(2):
        for b in (bins if rnd % 2 == 0 else bins[::-1]):
            a.ours = b
            srv = compare.servers(a, stub); cmd, env = srv["ours"]
            r = rows.setdefault(b, {"pre": [], "list": [], **{c[0]: [] for c in compare.CALLS}})
            for _ in range(2):
                d = os.path.join(a.scratch, "profiles-cache"); shutil.rmtree(d, ignore_errors=True)
                t = time.perf_counter()
                subprocess.run([b, "precompile", "--cache-dir", d], check=True, capture_output=True, env={**os.environ, **env})
                r["pre"].append(time.perf_counter() - t)
            warm = compare.with_cache_dir(cmd, os.path.join(a.scratch, "profiles-cache"))
            for _ in range(10):
                init, listed, called = compare.start_mode(warm, env, compare.CALLS[0][1][1], compare.CALLS[0][1][2], a)
                r["list"].append(listed)
            for label, ours, peer, ids in compare.CALLS:
                times, _ = compare.bare_mode(warm, env, ours[1], ours[2], a)
                r[label].append(compare.pct(times, .5))
            print("done", b, file=sys.stderr, flush=True)
finally:
    stub_proc.terminate()
print("| binary | size | precompile (median) | warm start to tools/list (median) | " + " | ".join(c[0] + " p50" for c in compare.CALLS) + " |")
print("|---" * (4 + len(compare.CALLS)) + "|")
for b in bins:
    r = rows[b]; med = statistics.median
    print(f"| {os.path.basename(b)} | {os.path.getsize(b)/1e6:.1f} MB | {med(r['pre'])*1000:.0f} ms | {med(r['list'])*1000:.1f} ms | "
          + " | ".join(f"{med(r[c[0]])*1000:.2f} ms" for c in compare.CALLS) + " |")
