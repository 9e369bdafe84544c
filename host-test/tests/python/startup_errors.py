"""Start-up errors a real client shows (issue 40): the Python MCP SDK starts `crm-sandbox` with
the README's Claude Desktop arguments, from a working directory it cannot write, as Claude
Desktop may.

Usage: python startup_errors.py <path to crm-sandbox>

- With XDG_DATA_HOME set (to a temporary folder here), it serves: its state goes there, not to
  the working directory.
- With a data directory it cannot make (XDG_DATA_HOME under a regular file: "Not a directory",
  which root cannot get around either), the SDK's `initialize` raises MCPError whose message
  says why and what to do, and the process, run directly, exits non-zero with that one line on
  stderr and nothing but the JSON-RPC error on stdout.

Exits non-zero on the first thing that is not as it should be.
"""

import asyncio
import json
import os
import subprocess
import sys
import tempfile

from mcp import ClientSession, MCPError
from mcp.client.stdio import StdioServerParameters, stdio_client

# README.md, "Use it from an assistant (MCP)": the Claude Desktop entry's args.
README_ARGS = ["mcp", "--tenant", "acme", "--user", "you@example.com"]
REASON = "cannot create the data directory"


def check(condition, what):
    if not condition:
        raise AssertionError(what)


def unwritable_cwd(workdir):
    """A working directory this user cannot make anything in: a read-only folder, or for root
    (whom permissions do not stop) /proc."""
    if os.geteuid() == 0:
        cwd = "/proc"
    else:
        cwd = os.path.join(workdir, "read-only")
        os.mkdir(cwd, 0o555)
    try:
        os.mkdir(os.path.join(cwd, "crm-host-data"))
    except OSError:
        return cwd
    raise AssertionError(f"{cwd} is writable")


async def serves_from_an_unwritable_cwd(crm_host, workdir, cwd):
    data_home = os.path.join(workdir, "xdg-data")
    params = StdioServerParameters(command=crm_host, args=README_ARGS, cwd=cwd,
                                   env=dict(os.environ, XDG_DATA_HOME=data_home))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = (await session.list_tools()).tools
            check(len(tools) == 30, f"30 tools, got {len(tools)}")
            read_back = await session.call_tool(
                "crmb_get_record",
                {"object": "Account", "record_id": "0015gA000000001ABA", "fields": ["Name"]})
            check(not read_back.is_error and "Acme Energy" in read_back.content[0].text,
                  f"read: {read_back}")
    store = os.path.join(data_home, "crm-host", "acme", "mappings.sqlite")
    check(os.path.isfile(store), f"the tenant's store is in XDG_DATA_HOME: {store}")
    print("unwritable cwd: serves, state in XDG_DATA_HOME: ok")


async def the_client_shows_why_it_cannot_start(crm_host, workdir, cwd):
    blocker = os.path.join(workdir, "a-file")
    open(blocker, "w").close()
    env = dict(os.environ, XDG_DATA_HOME=os.path.join(blocker, "x"))
    params = StdioServerParameters(command=crm_host, args=README_ARGS, cwd=cwd, env=env)
    errlog_path = os.path.join(workdir, "stderr.txt")
    shown = None
    with open(errlog_path, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                try:
                    await asyncio.wait_for(session.initialize(), 60)
                except MCPError as error:
                    shown = error.message
    check(shown is not None, "initialize succeeded on a data directory that cannot be made")
    check(REASON in shown and "Not a directory" in shown and "--data-dir" in shown,
          f"the client shows why: {shown!r}")
    with open(errlog_path) as f:
        logged = f.read()
    check(shown in logged, f"and stderr says the same: {logged!r}")
    print(f"the SDK's initialize raises MCPError: {shown}")

    # Directly: the exit status, stdout and stderr the SDK does not show.
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "startup-errors", "version": "1"}}}
    done = subprocess.run([crm_host, *README_ARGS], cwd=cwd, env=env, capture_output=True,
                          text=True, input=json.dumps(initialize) + "\n", timeout=60)
    check(done.returncode != 0, f"exits non-zero: {done.returncode}")
    stderr_lines = done.stderr.splitlines()
    check(len(stderr_lines) == 1 and REASON in stderr_lines[0], f"one line on stderr: {done.stderr!r}")
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    check(answers == [{"jsonrpc": "2.0", "id": 1,
                       "error": {"code": -32603, "message": stderr_lines[0]}}],
          f"only the JSON-RPC error on stdout: {done.stdout!r}")
    print("unmakeable data directory: MCPError shown, one line on stderr, exit "
          f"{done.returncode}: ok")


async def main(crm_host):
    crm_host = os.path.abspath(crm_host)
    with tempfile.TemporaryDirectory(prefix="crm-startup-errors-") as workdir:
        cwd = unwritable_cwd(workdir)
        try:
            await serves_from_an_unwritable_cwd(crm_host, workdir, cwd)
            await the_client_shows_why_it_cannot_start(crm_host, workdir, cwd)
        finally:
            if cwd.startswith(workdir):
                os.chmod(cwd, 0o755)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    asyncio.run(main(sys.argv[1]))
