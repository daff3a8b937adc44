// What a model is handed, as the official TypeScript SDK's clients see it
// (v1 @modelcontextprotocol/sdk and v2 @modelcontextprotocol/client): an
// answer over the call's result budget comes cut, with a notice, a
// resource_link to the whole and _meta["httptools/truncated"]; the client
// reads the whole back, page by page, with resources/read. The Go test
// TestNodeInterop passes:
//   HTTPTOOLS_URL, HTTPTOOLS_KEY   a serve whose tools include t.issues,
//                                  an upstream answer of about 330 KB,
//                                  and t.image, a PNG's bytes
//   HTTPTOOLS_PNG                  their base64
import { test } from "node:test";
import assert from "node:assert/strict";
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from "@modelcontextprotocol/client";

const env = process.env;
const skip = !env.HTTPTOOLS_URL;
const headers = () => ({ Authorization: `Bearer ${env.HTTPTOOLS_KEY}` });

async function v1() {
  const c = new ClientV1({ name: "budget-v1", version: "1.0.0" });
  await c.connect(new TransportV1(new URL(env.HTTPTOOLS_URL + "/mcp"), { requestInit: { headers: headers() } }));
  return c;
}

async function v2() {
  const c = new ClientV2({ name: "budget-v2", version: "1.0.0" }, { versionNegotiation: { mode: "auto" } });
  await c.connect(new TransportV2(new URL(env.HTTPTOOLS_URL + "/mcp"), { requestInit: { headers: headers() } }));
  return c;
}

// whole is the answer as REST gives it (no budget asked).
async function whole() {
  const res = await fetch(`${env.HTTPTOOLS_URL}/v1/tools/t.issues/invoke`, {
    method: "POST", headers: { ...headers(), "Content-Type": "application/json" }, body: "{}",
  });
  assert.equal(res.status, 200);
  return JSON.stringify((await res.json()).output);
}

for (const [name, connect] of [["v1", v1], ["v2", v2]]) {
  test(`${name}: an answer over the budget comes cut, with a notice and a link the client reads back whole`, { skip }, async () => {
    const c = await connect();
    try {
      const res = await c.callTool({ name: "t.issues", arguments: {} });
      assert.ok(!res.isError, JSON.stringify(res).slice(0, 500));
      const texts = res.content.filter((b) => b.type === "text").map((b) => b.text);
      const links = res.content.filter((b) => b.type === "resource_link");
      const chars = texts.reduce((n, t) => n + [...t].length, 0);
      const note = res._meta?.["httptools/truncated"];
      assert.ok(note, "_meta says the answer was cut");
      assert.ok(chars <= note.budget, `${chars} characters of text, budget ${note.budget}`);
      assert.equal(links.length, 1);
      assert.equal(links[0].uri, note.uri);
      assert.match(texts[texts.length - 1], /cut to fit this call's result budget/);
      // The cut part is valid JSON of the answer's shape, inside the boundary.
      const part = JSON.parse(texts[0].split("\n").slice(1, -1).join("\n"));
      assert.equal(part.total, 300);
      assert.ok(part.issues.length > 0 && part.issues.length < 300, `${part.issues.length} issues kept`);
      // The whole, page by page.
      let read = "";
      for (let p = 1; p <= note.pages; p++) {
        const r = await c.readResource({ uri: p === 1 ? note.uri : `${note.uri}?page=${p}` });
        read += r.contents[0].text;
      }
      const all = JSON.parse(read);
      assert.equal(all.issues.length, 300);
      assert.equal(JSON.stringify(all), await whole());
    } finally {
      await c.close();
    }
  });
}

for (const [name, connect] of [["v1", v1], ["v2", v2]]) {
  test(`${name}: an upstream's image is an image block with its bytes, inside the outside-data boundary`, { skip }, async () => {
    const c = await connect();
    try {
      const res = await c.callTool({ name: "t.image", arguments: {} });
      assert.ok(!res.isError, JSON.stringify(res).slice(0, 500));
      const images = res.content.filter((b) => b.type === "image");
      assert.equal(images.length, 1, JSON.stringify(res.content.map((b) => b.type)));
      assert.equal(images[0].mimeType, "image/png");
      assert.equal(images[0].data, env.HTTPTOOLS_PNG);
      assert.match(res.content[0].text, /^\[outside data [0-9a-f]+\]/);
      assert.match(res.content[2].text, /^\[end of outside data [0-9a-f]+\]$/);
    } finally {
      await c.close();
    }
  });
}
