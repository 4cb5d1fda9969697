// hostile.mjs checks that whatever a module writes as its result, what
// reaches the official MCP TypeScript SDK client passes the SDK's own
// schemas: either the result as written, or a tool error saying why not.
//
//	node hostile.mjs CASES.json stdio BINARY [SERVE_ARGS...]
//	node hostile.mjs CASES.json http URL
//
// CASES.json is [{name, tool, arguments, want}] for the tool echo_result (or
// echo_structured, which declares an outputSchema), whose result is its
// arguments (see ../hostile/echoresult.c); want is "ok" (the
// result arrives unchanged) or "toolError" (an isError result with text).
// It prints a report like client.mjs.

import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [casesFile, mode, target, ...serveArgs] = process.argv.slice(2);
if (!casesFile || !['stdio', 'http'].includes(mode) || !target) {
  console.error('usage: node hostile.mjs CASES.json stdio BINARY [SERVE_ARGS...] | node hostile.mjs CASES.json http URL');
  process.exit(2);
}
const cases = JSON.parse(readFileSync(casesFile, 'utf8'));

const checks = [];
function check(name, ok, detail) {
  checks.push({ name, ok: !!ok, ...(detail === undefined ? {} : { detail }) });
  return !!ok;
}
const show = (v) => JSON.stringify(v)?.slice(0, 400);

// normal is a content block with its members in one order and an absent
// text as empty, for comparing what was written with what arrived.
const normal = (b) =>
  b.type === 'text' ? { type: b.type, text: b.text ?? '' } : { type: b.type, data: b.data, mimeType: b.mimeType };

const sdkErrors = [];
const client = new Client({ name: 'wasmtask-hostile', version: '1.0.0' });
client.onerror = (e) => sdkErrors.push(String(e?.stack ?? e));

let transport;
let stderrText = '';
if (mode === 'stdio') {
  transport = new StdioClientTransport({ command: target, args: ['serve', ...serveArgs], stderr: 'pipe' });
  transport.stderr?.on('data', (d) => {
    stderrText = (stderrText + d).slice(-8192);
  });
} else {
  transport = new StreamableHTTPClientTransport(new URL(target));
}

async function main() {
  await client.connect(transport);
  const { tools } = await client.listTools();
  check('tools/list passes the SDK schemas, without the refused module', tools.some((t) => t.name === 'echo_result') && !tools.some((t) => t.name === 'bad_list'), show(tools.map((t) => t.name)));
  for (const c of cases) {
    let r;
    try {
      r = await client.callTool({ name: c.tool ?? 'echo_result', arguments: c.arguments });
    } catch (e) {
      check(`${c.name}: the SDK accepts what the server sent`, false, `threw: ${String(e?.message ?? e).slice(0, 300)}`);
      continue;
    }
    if (c.want === 'ok') {
      const got = show(r.content.map(normal));
      const want = show((c.arguments.content ?? []).map(normal));
      check(`${c.name}: arrives as written`, !r.isError && got === want, `got ${got}, want ${want}`);
    } else {
      const text = r.content?.[0]?.text ?? '';
      check(`${c.name}: a tool error with text`, r.isError === true && text.length > 0, show(r));
    }
  }
  check('no SDK errors (schema rejections, unknown ids)', sdkErrors.length === 0, sdkErrors);
}

try {
  await main();
} catch (e) {
  check('run', false, `threw: ${e?.stack ?? e}`);
} finally {
  try {
    await client.close();
  } catch (e) {
    check('close', false, String(e));
  }
}
const ok = checks.every((c) => c.ok);
const report = { transport: mode, ok, checks };
if (!ok && stderrText) report.serverStderr = stderrText;
process.stdout.write(JSON.stringify(report, null, 1) + '\n');
process.exit(ok ? 0 : 1);
