"""Drives `crm-host` with the Python MCP SDK, a client that is not ours, as assistants do.

Usage: python mcp_client.py <path to crm-host>

Over stdio (`crm-host mcp`) and over Streamable HTTP (`crm-host serve`, two tenants, two
tokens): lists the tools with their annotations and output schemas, calls a read, a create
and a failing call against the sandbox, and reads a large result back as a resource. The SDK
itself checks every structuredContent against the tool's outputSchema (`--answers structured`). With
CRM_POLICY_CONFIRM_WRITES=user, a write asks the person through the SDK's elicitation callback:
accept writes once, decline sends nothing (journal: declined), a client without the callback
is refused, and the model's own token is refused. In the default form (text), the tools list no
output schema and each answer is its text alone, which the SDK takes as it is: a query's rows,
each with its link, in the text block, as a table too. Exits non-zero on the first thing that is
not as it should be.
"""

import asyncio
import hashlib
import json
import os
import subprocess
import sys
import tempfile

import httpx2
from mcp import ClientSession, types
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

ACME_ACCOUNT = "0015gA000000001ABA"
GLOBEX_ACCOUNT = "0017kB200000001ABA"


def check(condition, what):
    if not condition:
        raise AssertionError(what)


async def exercise(session, account_id, account_name):
    tools = (await session.list_tools()).tools
    check(len(tools) == 30, f"30 tools, got {len(tools)}")
    for tool in tools:
        check(tool.title, f"{tool.name} has a title")
        check(tool.output_schema and tool.output_schema.get("type") == "object",
              f"{tool.name} has an object output schema")
        check(tool.annotations.read_only_hint is not None, f"{tool.name} is annotated")
    by_name = {t.name: t for t in tools}
    check(by_name["crma_merge_companies"].annotations.destructive_hint is True, "merge is destructive")
    check(by_name["crma_create_record"].annotations.destructive_hint is False, "create is not")

    read = await session.call_tool(
        "crmb_get_record", {"object": "Account", "record_id": account_id, "fields": ["Name"]})
    check(not read.is_error, f"read: {read}")
    check(read.structured_content["record"]["Name"] == account_name, f"read: {read.structured_content}")
    check(json.loads(read.content[0].text) == read.structured_content, "text block is the JSON")

    created = await session.call_tool(
        "crma_create_record", {"object_type": "deals", "properties": {"dealname": "From Python"}})
    check(not created.is_error and created.structured_content["id"], f"create: {created}")

    failed = await session.call_tool("crmb_get_record", {"object": "Account", "record_id": "nope"})
    check(failed.is_error, "a bad id is an error result")
    # No structuredContent on an error (clients would check it against the success schema);
    # the kind and message are the text the client shows.
    check(failed.structured_content is None, f"{failed.structured_content}")
    error = json.loads(failed.content[0].text)["error"]
    check(error["kind"] == "invalid-input" and "nope" in error["message"], f"{error}")

    heard = []

    async def progress(done, total, message):
        heard.append((done, total))

    query = await session.call_tool("crmb_run_soql_query", {"query": "SELECT Id, Name FROM Account"},
                                    progress_callback=progress)
    check(not query.is_error, f"query: {query}")
    # Written to a file, so it reports how far it came: growing, ending at every record.
    count = query.structured_content["record_count"]
    check(heard and heard[-1] == (count, count), f"progress of the export: {heard} of {count}")
    check(all(a[0] < b[0] for a, b in zip(heard, heard[1:])), f"progress grows: {heard}")
    links = [c for c in query.content if c.type == "resource_link"]
    check(links and links[0].mime_type == "application/x-ndjson", f"a result file link: {query.content}")
    resource = await session.read_resource(links[0].uri)
    lines = resource.contents[0].text.splitlines()
    check(len(lines) == query.structured_content["record_count"], "the resource holds every record")
    return links[0].uri


async def over_stdio(crm_host, workdir):
    env = dict(os.environ, CRM_FILE_THRESHOLD_RECORDS="1")
    params = StdioServerParameters(
        command=crm_host,
        args=["mcp", "--answers", "structured", "--data-dir", os.path.join(workdir, "stdio-data"),
              "--results-dir", os.path.join(workdir, "stdio-results")],
        env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            print("stdio: negotiated", init.protocol_version)
            await exercise(session, ACME_ACCOUNT, "Acme Energy")
    print("stdio: ok")


async def the_person_confirms(crm_host, workdir):
    env = dict(os.environ, CRM_POLICY_CONFIRM_WRITES="user")
    params = StdioServerParameters(
        command=crm_host,
        args=["mcp", "--answers", "structured", "--data-dir", os.path.join(workdir, "confirm-data"),
              "--results-dir", os.path.join(workdir, "confirm-results")],
        env=env)
    asked = []

    def person(action):
        async def answer(context, params):
            asked.append(params.message)
            content = {"confirm": True} if action == "accept" else None
            return types.ElicitResult(action=action, content=content)
        return answer

    deal = {"object_type": "deals", "record_id": "357300"}

    async def amount(session):
        got = await session.call_tool("crma_get_record", dict(deal, properties=["amount"]))
        return got.structured_content["properties"]["amount"]

    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, elicitation_callback=person("accept")) as session:
            await session.initialize()
            made = await session.call_tool(
                "crma_update_record", dict(deal, properties={"amount": "195000"}))
            check(not made.is_error and made.structured_content["change_id"], f"accept: {made}")
            check("confirmation_token" not in made.content[0].text, "the model holds no token")
            check(len(asked) == 1 and "amount: 180000 → 195000" in asked[0], f"the form: {asked}")
            check(await amount(session) == "195000", "accepted: written")
            own = await session.call_tool(
                "crma_update_record", dict(deal, properties={"amount": "1"}, confirmation_token="x"))
            check(own.is_error and json.loads(own.content[0].text)["error"]["kind"] == "invalid-input",
                  f"the model's own token: {own}")
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, elicitation_callback=person("decline")) as session:
            await session.initialize()
            # Each stdio server runs its own sandbox: compare with what this one holds.
            before = await amount(session)
            declined = await session.call_tool(
                "crma_update_record", dict(deal, properties={"amount": "2"}))
            check(declined.is_error and json.loads(declined.content[0].text)["error"]["kind"] == "declined",
                  f"decline: {declined}")
            check(await amount(session) == before, "declined: nothing sent")
            changes = await session.call_tool("crm_list_changes", {"record_id": "357300", "limit": 1})
            check(changes.structured_content["changes"][0]["status"] == "declined",
                  f"journal: {changes.structured_content}")
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            before = await amount(session)
            refused = await session.call_tool(
                "crma_update_record", dict(deal, properties={"amount": "3"}))
            error = json.loads(refused.content[0].text)["error"]
            check(refused.is_error and error["kind"] == "forbidden" and "cannot ask its user" in error["message"],
                  f"no elicitation: {refused}")
            check(await amount(session) == before, "refused: nothing sent")
    # Under user-or-token, a client that cannot ask keeps the token flow.
    either = StdioServerParameters(
        command=crm_host, args=params.args,
        env=dict(os.environ, CRM_POLICY_CONFIRM_WRITES="user-or-token"))
    async with stdio_client(either) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            preview = await session.call_tool(
                "crma_update_record", dict(deal, properties={"amount": "4"}, preview=True))
            token = preview.structured_content["preview"]["confirmation_token"]
            made = await session.call_tool(
                "crma_update_record", dict(deal, properties={"amount": "4"}, confirmation_token=token))
            check(not made.is_error and await amount(session) == "4", f"token flow: {made}")
    print("stdio: the person confirms writes (accept, decline, no elicitation, own token, "
          "user-or-token) ok")


async def http_session(url, token, account_id, account_name):
    client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                timeout=httpx2.Timeout(30, read=120))
    async with client, streamable_http_client(url, http_client=client) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            return session, await exercise(session, account_id, account_name)


TOKENS = {"acme": "token-for-acme", "globex": "token-for-globex"}


def start_serve(crm_host, workdir, name, policies=None, env=None):
    """`crm-host serve` for TOKENS' tenants (each with its [tenants.policy] lines from
    `policies`), with its own data and results folders: the process and its URL."""
    tenants = os.path.join(workdir, f"{name}.toml")
    with open(tenants, "w") as f:
        for tenant in TOKENS:
            f.write(f'[[tenants]]\nid = "{tenant}"\n')
            if policies and tenant in policies:
                f.write(f"[tenants.policy]\n{policies[tenant]}\n")
        for tenant, token in TOKENS.items():
            digest = hashlib.sha256(token.encode()).hexdigest()
            f.write(f'[[tokens]]\nsha256 = "{digest}"\ntenant = "{tenant}"\nuser = "{tenant}-user"\n')
    server = subprocess.Popen(
        [crm_host, "serve", "--answers", "structured", "--listen", "127.0.0.1:0", "--tenants", tenants,
         "--data-dir", os.path.join(workdir, f"{name}-data"),
         "--results-dir", os.path.join(workdir, f"{name}-results")],
        stdout=subprocess.PIPE, env=dict(os.environ, **(env or {})), text=True)
    return server, json.loads(server.stdout.readline())["listening"]


async def over_http(crm_host, workdir):
    tokens = TOKENS
    server, url = start_serve(crm_host, workdir, "http", env={"CRM_FILE_THRESHOLD_RECORDS": "1"})
    try:
        async with httpx2.AsyncClient() as raw:
            refused = await raw.post(url, json={})
            check(refused.status_code == 401, f"no token: {refused.status_code}")
            check("resource_metadata=" in refused.headers["www-authenticate"], "points to metadata")
            wrong = await raw.post(url, json={}, headers={"Authorization": "Bearer wrong"})
            check(wrong.status_code == 401, f"wrong token: {wrong.status_code}")
        await asyncio.gather(
            http_session(url, tokens["acme"], ACME_ACCOUNT, "Acme Energy"),
            http_session(url, tokens["globex"], "0017kB200000001ABA", "Globex Shipping"),
        )
        print("http: two tenants served concurrently, each its own data")
    finally:
        server.terminate()
        server.wait(timeout=10)
    print("http: ok")


async def each_tenant_its_own_confirmation(crm_host, workdir):
    """One `serve`, two tenants: acme's person confirms each write (confirm_writes = "user"),
    globex's assistant confirms with a preview's token (confirm_writes = true)."""
    policies = {"acme": 'confirm_writes = "user"', "globex": "confirm_writes = true"}
    server, url = start_serve(crm_host, workdir, "per-tenant-confirm", policies)
    asked = []

    async def person(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"confirm": True})

    def update(account, name, **extra):
        return dict(object="Account", record_id=account, fields={"Name": name}, **extra)

    async def session_for(url, token, body):
        client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                    timeout=httpx2.Timeout(30, read=120))
        async with client, streamable_http_client(url, http_client=client) as (read, write):
            async with ClientSession(read, write, elicitation_callback=person) as session:
                await session.initialize()
                tools = {t.name: t for t in (await session.list_tools()).tools}
                offered = set(tools["crmb_update_record"].input_schema["properties"])
                await body(session, offered)

    async def acme(session, offered):
        check(not offered & {"preview", "confirmation_token"}, f"acme offers no token: {offered}")
        made = await session.call_tool("crmb_update_record", update(ACME_ACCOUNT, "Acme (asked)"))
        check(not made.is_error and made.structured_content["change_id"], f"acme: {made}")
        check(len(asked) == 1 and "Acme (asked)" in asked[0], f"acme asks its person: {asked}")

    async def globex(session, offered):
        check({"preview", "confirmation_token"} <= offered, f"globex offers both: {offered}")
        bare = await session.call_tool("crmb_update_record", update(GLOBEX_ACCOUNT, "Globex (token)"))
        error = json.loads(bare.content[0].text)["error"]
        check(bare.is_error and '"preview": true first' in error["message"], f"globex: {error}")
        preview = await session.call_tool(
            "crmb_update_record", update(GLOBEX_ACCOUNT, "Globex (token)", preview=True))
        token = preview.structured_content["preview"]["confirmation_token"]
        made = await session.call_tool(
            "crmb_update_record", update(GLOBEX_ACCOUNT, "Globex (token)", confirmation_token=token))
        check(not made.is_error and made.structured_content["change_id"], f"globex: {made}")
        check(len(asked) == 1, f"globex never asks the person: {asked}")

    try:
        await session_for(url, TOKENS["acme"], acme)
        await session_for(url, TOKENS["globex"], globex)
    finally:
        server.terminate()
        server.wait(timeout=10)
    print("http: acme (confirm_writes = \"user\") asks its person, globex (true) takes a token: ok")


async def text_answers(crm_host, workdir):
    """The default form: no --answers, no CRM_HOST_ANSWERS."""
    params = StdioServerParameters(
        command=crm_host,
        args=["mcp", "--data-dir", os.path.join(workdir, "text-data"),
              "--results-dir", os.path.join(workdir, "text-results")],
        env={k: v for k, v in os.environ.items() if k != "CRM_HOST_ANSWERS"})
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = (await session.list_tools()).tools
            check(all(t.output_schema is None for t in tools), "text answers: no output schemas")
            query = "SELECT Id, Name, Amount FROM Opportunity LIMIT 5"
            rows = await session.call_tool("crmb_run_soql_query", {"query": query})
            check(not rows.is_error and rows.structured_content is None, f"text answer: {rows}")
            records = json.loads(rows.content[0].text)["records"]
            check(records and all(r["record_url"].endswith("/" + r["Id"]) for r in records),
                  f"every row linked: {records}")
            table = await session.call_tool("crmb_run_soql_query",
                                            {"query": query, "layout": "table"})
            out = json.loads(table.content[0].text)
            check(out["fields"][-1] == "record_url" and len(out["rows"]) == len(records),
                  f"table: {out}")
    print("stdio, text answers: ok")


async def main():
    crm_host = sys.argv[1]
    with tempfile.TemporaryDirectory() as workdir:
        await over_stdio(crm_host, workdir)
        await text_answers(crm_host, workdir)
        await the_person_confirms(crm_host, workdir)
        await over_http(crm_host, workdir)
        await each_tenant_its_own_confirmation(crm_host, workdir)


if __name__ == "__main__":
    asyncio.run(main())
