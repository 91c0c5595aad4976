// An independent MCP client (the TypeScript SDK, as the Inspector, mcp-remote and IDEs use it) driving gitmem.
// Usage: node ts_client.mjs NODE_MODULES (stdio CMD ARGS... | http URL TOKEN) -- STEPS (JSON)
// Prints one JSON document: what each step answered. The Python test judges it.
import { pathToFileURL } from "node:url";
import path from "node:path";

const [modules, kind, ...rest] = process.argv.slice(2);
const sep = rest.indexOf("--");
const target = rest.slice(0, sep);
const steps = JSON.parse(rest[sep + 1]);
const load = (sub) => import(pathToFileURL(path.join(modules, "@modelcontextprotocol/client/dist", sub)).href);
const { Client, StreamableHTTPClientTransport } = await load("index.mjs");
const { StdioClientTransport } = await load("stdio.mjs");

function transport() {
  if (kind === "stdio") {
    return new StdioClientTransport({ command: target[0], args: target.slice(1), env: process.env, stderr: "inherit" });
  }
  const [url, token] = target;
  return new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
}

async function connect() {
  const client = new Client({ name: "gitmem-interop", version: "1.0.0" });
  await client.connect(transport());
  return client;
}

function failure(error) {
  return { failed: true, code: error?.code ?? null, message: String(error?.message ?? error) };
}

const out = {};
const client = await connect();
out.serverVersion = client.getServerVersion?.() ?? null;
out.capabilities = client.getServerCapabilities?.() ?? null;
for (const step of steps) {
  const [name, method, params] = step;
  try {
    if (method === "reconnect") {
      // A client that never ends its session (no DELETE), as health checks and bridges do: connect, list, drop.
      let ok = 0;
      for (let i = 0; i < params.times; i++) {
        const again = await connect();
        const listed = await again.listTools();
        if (listed.tools.length > 0) ok += 1;
        await again.transport?.close?.();
      }
      out[name] = { ok };
    } else if (method === "tools/list") out[name] = await client.listTools();
    else if (method === "tools/call") out[name] = await client.callTool(params);
    else if (method === "resources/list") out[name] = await client.listResources();
    else if (method === "resources/read") out[name] = await client.readResource(params);
    else if (method === "prompts/list") out[name] = await client.listPrompts();
    else if (method === "prompts/get") out[name] = await client.getPrompt(params);
    else if (method === "raw") out[name] = await client.request({ method: params.method, params: params.params });
    else throw new Error(`unknown step ${method}`);
  } catch (error) {
    out[name] = failure(error);
  }
}
await client.close();
process.stdout.write(JSON.stringify(out));
process.exit(0);
