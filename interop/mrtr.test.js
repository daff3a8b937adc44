// The official TypeScript SDK's v2 client (@modelcontextprotocol/client)
// answers httptools' approval question and connection prompt by multi
// round-trip requests
// (MCP 2026-07-28: the call is answered input_required, the client asks
// its user through its elicitation/create handler and retries the call
// with the answer), over streamable HTTP and stdio. The Go test
// TestNodeInterop starts what it needs and passes it in the environment:
//   HTTPTOOLS_ELICIT_URL, HTTPTOOLS_ELICIT_KEY  a serve (admin key) whose
//                                               tools include t.guarded
//   HTTPTOOLS_PERSONAL, HTTPTOOLS_APPS          its tools and apps, for stdio
//   HTTPTOOLS_MRTR_UP                           the address t.guarded calls,
//                                               served here, counted
//   HTTPTOOLS_BIN, HTTPTOOLS_STATE              the binary, a state folder
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

const env = process.env;
const skip = !env.HTTPTOOLS_MRTR_UP;

// The upstream of t.guarded: every request it gets is counted.
let upstream = 0;
let server;
before(async () => {
  if (skip) return;
  const [host, port] = env.HTTPTOOLS_MRTR_UP.split(":");
  server = createServer((req, res) => {
    upstream++;
    req.resume();
    res.setHeader("Content-Type", "application/json");
    res.end(JSON.stringify({ ran: req.url }));
  });
  await new Promise((resolve) => server.listen(Number(port), host, resolve));
});
after(() => server?.close());

// client is a v2 client that negotiates 2026-07-28 and answers every
// approval question with answer, keeping what it was asked.
function client(answer) {
  const c = new Client({ name: "interop-v2", version: "1.0.0" }, {
    capabilities: { elicitation: { form: {} } },
    versionNegotiation: { mode: "auto" },
  });
  c.asked = [];
  c.setRequestHandler("elicitation/create", async (request) => {
    c.asked.push({ params: request.params, upstream });
    return answer(request.params);
  });
  return c;
}

const yes = () => ({ action: "accept", content: { approve: true } });
const no = () => ({ action: "accept", content: { approve: false } });

async function http(answer) {
  const c = client(answer);
  await c.connect(new StreamableHTTPClientTransport(new URL(env.HTTPTOOLS_ELICIT_URL + "/mcp"), {
    requestInit: { headers: { Authorization: `Bearer ${env.HTTPTOOLS_ELICIT_KEY}`, "X-Person-Id": "u1" } },
  }));
  return c;
}

async function stdio(answer) {
  const c = client(answer);
  await c.connect(new StdioClientTransport({
    command: env.HTTPTOOLS_BIN,
    args: ["mcp", "--tools", env.HTTPTOOLS_PERSONAL, "--apps", env.HTTPTOOLS_APPS, "--allow-cidr", "127.0.0.0/8",
      "--person", "u1", "--db", `sqlite:${env.HTTPTOOLS_STATE}/mrtr-stdio.db`],
    env: { ...process.env },
    cwd: "/",
    stderr: "ignore",
  }));
  return c;
}

// unattended calls t.guarded in a run no person started.
function unattended(c, input) {
  return c.callTool({ name: "t.guarded", arguments: input, _meta: { "httptools/context": { run: "nightly", unattended: true } } });
}

async function approvals(state) {
  const res = await fetch(`${env.HTTPTOOLS_ELICIT_URL}/v1/approvals?state=${state}`, {
    headers: { Authorization: `Bearer ${env.HTTPTOOLS_ELICIT_KEY}` },
  });
  assert.equal(res.status, 200);
  return (await res.json()).approvals.filter((a) => a.tool === "t.guarded");
}

for (const [name, connect] of [["http", http], ["stdio", stdio]]) {
  test(`${name}: the v2 client approves an unattended call by multi round-trip requests`, { skip }, async () => {
    const c = await connect(yes);
    try {
      const before = upstream;
      const res = await unattended(c, { n: `${name}-yes` });
      assert.ok(!res.isError, JSON.stringify(res));
      assert.equal(c.getNegotiatedProtocolVersion(), "2026-07-28");
      assert.equal(c.asked.length, 1, "asked once");
      assert.equal(c.asked[0].upstream - before, 0, "nothing ran while asked");
      assert.equal(c.asked[0].params.mode ?? "form", "form");
      assert.match(c.asked[0].params.message, /t\.guarded/);
      assert.match(c.asked[0].params.message, /\[outside data [0-9a-f]+\]/);
      assert.equal(upstream - before, 1, "one upstream request after the yes");
      if (name === "http") {
        const used = await approvals("used");
        assert.equal(used.length, 1, JSON.stringify(used));
      }
    } finally {
      await c.close();
    }
  });

  test(`${name}: the v2 client denies one`, { skip }, async () => {
    const c = await connect(no);
    try {
      const before = upstream;
      const res = await unattended(c, { n: `${name}-no` });
      assert.equal(res.isError, true, JSON.stringify(res));
      assert.match(res.content[0].text, /it is denied/);
      assert.equal(c.asked.length, 1, "asked once");
      assert.equal(upstream - before, 0, "no upstream request after the no");
      if (name === "http") {
        const denied = await approvals("denied");
        assert.equal(denied.length, 1, JSON.stringify(denied));
      }
    } finally {
      await c.close();
    }
  });
}

// The connection prompt: a person without the connection t.pmail needs is
// asked, inside the call's answer, to open the connect flow's URL (URL
// mode); the client opens it and its retry runs the call.
test("http: the v2 client connects a missing connection by multi round-trip requests", { skip: skip || !env.HTTPTOOLS_ELICIT_URL }, async () => {
  const c = new Client({ name: "interop-v2-connect", version: "1.0.0" }, {
    capabilities: { elicitation: { url: {} } },
    versionNegotiation: { mode: "auto" },
  });
  const asked = [];
  c.setRequestHandler("elicitation/create", async (request) => {
    asked.push(request.params);
    const page = await fetch(request.params.url); // the person's browser: provider, then the service's callback
    assert.match(await page.text(), /Connected/);
    return { action: "accept" };
  });
  await c.connect(new StreamableHTTPClientTransport(new URL(env.HTTPTOOLS_ELICIT_URL + "/mcp"), {
    requestInit: { headers: { Authorization: `Bearer ${env.HTTPTOOLS_ELICIT_KEY}`, "X-Person-Id": "u-mrtr" } },
  }));
  try {
    assert.equal(c.getNegotiatedProtocolVersion(), "2026-07-28");
    const res = await c.callTool({ name: "t.pmail", arguments: {} });
    assert.ok(!res.isError, JSON.stringify(res));
    assert.equal(asked.length, 1, "asked once");
    assert.equal(asked[0].mode, "url");
    assert.match(asked[0].url, /^http/);
  } finally {
    await c.close();
  }
});

// fastServed reads how many MCP requests the serve at url answered on its
// fast path (the rest go through the Go SDK's handler).
async function fastServed(url, key) {
  const res = await fetch(`${url}/metrics`, { headers: { Authorization: `Bearer ${key}` } });
  assert.equal(res.status, 200);
  const m = (await res.text()).match(/^httptools_mcp_fast_total (\d+)/m);
  assert.ok(m, "httptools_mcp_fast_total is exported");
  return Number(m[1]);
}

// A v2 client as it comes (2026-07-28, no elicitation): its tools/list and
// tools/call take the fast path, its list is private and kept for the TTL,
// and it hears, through subscriptions/listen, that a policy change took a
// tool from it.
test("http: a plain v2 client takes the fast path and hears a policy change", { skip }, async () => {
  const url = env.HTTPTOOLS_ELICIT_URL, key = env.HTTPTOOLS_ELICIT_KEY;
  const changes = [];
  const c = new Client({ name: "interop-v2-plain", version: "1.0.0" }, {
    versionNegotiation: { mode: "auto" },
    listChanged: { tools: { onChanged: (error, tools) => changes.push({ error, tools: tools?.map((t) => t.name) }) } },
  });
  await c.connect(new StreamableHTTPClientTransport(new URL(url + "/mcp"), {
    requestInit: { headers: { Authorization: `Bearer ${key}`, "X-Person-Id": "u1" } },
  }));
  try {
    assert.equal(c.getNegotiatedProtocolVersion(), "2026-07-28");
    const before = await fastServed(url, key);
    const listed = await c.listTools();
    assert.ok(listed.tools.some((t) => t.name === "t.guarded"), JSON.stringify(listed.tools.map((t) => t.name)));
    const ran = upstream;
    const res = await c.callTool({ name: "t.guarded", arguments: { n: "plain" } });
    assert.ok(!res.isError, JSON.stringify(res));
    assert.equal(upstream - ran, 1, "one upstream request");
    const served = (await fastServed(url, key)) - before;
    assert.equal(served, 2, "tools/list and tools/call on the fast path");

    // The policy change: t.guarded denied to the tenant.
    const put = await fetch(`${url}/v1/policy`, {
      method: "PUT",
      headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
      body: JSON.stringify({ rules: [{ name: "no-guarded", effect: "deny", tools: { ids: ["t.guarded"] } }] }),
    });
    assert.equal(put.status, 200, await put.text());
    for (let i = 0; i < 1200 && !changes.some((ch) => ch.tools && !ch.tools.includes("t.guarded")); i++) {
      await new Promise((r) => setTimeout(r, 100)); // waits for the event; gives up after 2 minutes
    }
    const seen = changes.find((ch) => ch.tools && !ch.tools.includes("t.guarded"));
    assert.ok(seen, `a list change without t.guarded: ${JSON.stringify(changes)}`);
    assert.equal(seen.error, null);
  } finally {
    await fetch(`${url}/v1/policy`, { method: "DELETE", headers: { Authorization: `Bearer ${key}` } });
    await c.close();
  }
});
