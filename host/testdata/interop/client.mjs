// client.mjs drives a running `wasmtask serve` with the official MCP
// TypeScript SDK client and checks the 2025-11-25 task protocol on the
// embedded default tools. Every result and notification goes through the
// SDK's own schemas, so a shape the SDK rejects fails a check.
//
//	node client.mjs stdio BINARY [SERVE_ARGS...]   spawns BINARY serve SERVE_ARGS
//	node client.mjs http URL                       connects to a Streamable HTTP endpoint
//
// It prints one JSON report on stdout ({transport, ok, checks:[{name, ok,
// detail}]}) and exits 1 when any check failed.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  GetTaskResultSchema,
  McpError,
  RELATED_TASK_META_KEY,
  TaskStatusNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';

const [mode, target, ...serveArgs] = process.argv.slice(2);
if (!['stdio', 'http'].includes(mode) || !target) {
  console.error('usage: node client.mjs stdio BINARY [SERVE_ARGS...] | node client.mjs http URL');
  process.exit(2);
}

const checks = [];
function check(name, ok, detail) {
  checks.push({ name, ok: !!ok, ...(detail === undefined ? {} : { detail }) });
  return !!ok;
}
const show = (v) => JSON.stringify(v);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const TERMINAL = ['completed', 'failed', 'cancelled'];

// expectError runs fn and checks that it fails with JSON-RPC error code.
async function expectError(name, code, fn) {
  try {
    const got = await fn();
    return check(name, false, `got result ${show(got)}, want JSON-RPC error ${code}`);
  } catch (e) {
    if (e instanceof McpError) {
      return check(name, e.code === code, `got error ${e.code} ${show(e.message)}, want ${code}`);
    }
    return check(name, false, `got ${e}, want JSON-RPC error ${code}`);
  }
}

// step runs one scenario; an exception fails it instead of the whole run.
async function step(name, fn) {
  try {
    await fn();
  } catch (e) {
    check(name, false, `threw: ${e?.stack ?? e}`);
  }
}

function relatedTaskId(result) {
  return result?._meta?.[RELATED_TASK_META_KEY]?.taskId;
}

const elicitations = [];
const statusNotes = [];
const sdkErrors = [];

const client = new Client(
  { name: 'wasmtask-interop', version: '1.0.0' },
  { capabilities: { elicitation: { form: {} } } },
);
client.onerror = (e) => sdkErrors.push(String(e?.stack ?? e));
const ACCEPT = { action: 'accept', content: { confirm: true } };
let answer = ACCEPT; // what the user answers to elicitation/create
client.setRequestHandler(ElicitRequestSchema, async (req) => {
  elicitations.push(req.params);
  return answer;
});
client.setNotificationHandler(TaskStatusNotificationSchema, (n) => {
  statusNotes.push(n.params);
});

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

  // --- initialize ---------------------------------------------------------
  const caps = client.getServerCapabilities();
  check('initialize: capabilities.tasks.list', caps?.tasks?.list !== undefined, show(caps?.tasks));
  check('initialize: capabilities.tasks.cancel', caps?.tasks?.cancel !== undefined, show(caps?.tasks));
  check('initialize: capabilities.tasks.requests.tools.call', caps?.tasks?.requests?.tools?.call !== undefined, show(caps?.tasks));
  check('initialize: capabilities.tools', caps?.tools !== undefined, show(caps));

  // --- tools/list ---------------------------------------------------------
  const want = { add: 'forbidden', sha256: 'forbidden', word_count: 'forbidden', slow_count: 'optional', long_job: 'required' };
  await step('tools/list', async () => {
    const { tools } = await client.listTools();
    for (const t of tools) {
      const ts = t.execution?.taskSupport;
      check(`tools/list: ${t.name} has execution.taskSupport`, ['forbidden', 'optional', 'required'].includes(ts), show(t.execution));
    }
    for (const [name, ts] of Object.entries(want)) {
      const t = tools.find((x) => x.name === name);
      check(`tools/list: ${name} taskSupport`, t?.execution?.taskSupport === ts, `got ${show(t?.execution)}, want ${ts}`);
    }
  });

  // --- plain calls ----------------------------------------------------------
  await step('plain call add', async () => {
    const r = await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } });
    check('plain call add: {a:2,b:3} → sum 5', !r.isError && r.structuredContent?.sum === 5, show(r));
  });
  await step('plain call sha256', async () => {
    const r = await client.callTool({ name: 'sha256', arguments: { text: 'abc' } });
    const want = 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad';
    check('plain call sha256: "abc"', !r.isError && show(r).includes(want), show(r));
  });
  await step('plain call word_count', async () => {
    const r = await client.callTool({ name: 'word_count', arguments: { text: 'one two  three' } });
    check('plain call word_count (forbidden tool)', !r.isError && r.structuredContent?.words === 3, show(r));
  });
  await step('plain call slow_count', async () => {
    const r = await client.callTool({ name: 'slow_count', arguments: { steps: 1, delay_ms: 1 } });
    check('plain call slow_count (optional tool)', !r.isError && relatedTaskId(r) === undefined, show(r));
  });

  // --- task call with progress, polled to completion ------------------------
  let doneTaskId;
  await step('task slow_count', async () => {
    const progress = [];
    const seen = [];
    let created, result, error;
    const stream = client.experimental.tasks.callToolStream(
      { name: 'slow_count', arguments: { steps: 4, delay_ms: 100 } },
      CallToolResultSchema,
      { task: { ttl: 600000 }, onprogress: (p) => progress.push(p) },
    );
    for await (const m of stream) {
      seen.push(m.type === 'taskStatus' ? `${m.type}:${m.task.status}` : m.type);
      if (m.type === 'taskCreated') created = m.task;
      if (m.type === 'result') result = m.result;
      if (m.type === 'error') error = m.error;
    }
    check('task slow_count: created working', created?.status === 'working' && typeof created?.taskId === 'string', show(created));
    check('task slow_count: created ttl, pollInterval', typeof created?.ttl === 'number' && created.ttl > 0 && typeof created?.pollInterval === 'number', show(created));
    check('task slow_count: createdAt RFC 3339', !Number.isNaN(Date.parse(created?.createdAt)) && /T.*(Z|[+-]\d\d:\d\d)$/.test(created?.createdAt ?? ''), show(created));
    check('task slow_count: result', !error && result && !result.isError && show(result.structuredContent).includes('4'), show({ seen, result, error: String(error) }));
    check('task slow_count: result carries related-task _meta', relatedTaskId(result) === created?.taskId, show(result?._meta));
    check('task slow_count: progress kept the request token', progress.length >= 1 && progress.every((p) => p.total === 4), show(progress));
    doneTaskId = created?.taskId;
    if (doneTaskId) {
      const t = await client.experimental.tasks.getTask(doneTaskId);
      check('task slow_count: tasks/get completed', t.status === 'completed' && t.taskId === doneTaskId, show(t));
      const again = await client.experimental.tasks.getTaskResult(doneTaskId, CallToolResultSchema);
      check('task slow_count: tasks/result again, same result', show(again.structuredContent) === show(result?.structuredContent) && relatedTaskId(again) === doneTaskId, show(again));
    }
  });

  // --- tasks/result blocks until the task ends ------------------------------
  await step('tasks/result waits', async () => {
    const cr = await client.request(
      { method: 'tools/call', params: { name: 'slow_count', arguments: { steps: 3, delay_ms: 100 } } },
      CreateTaskResultSchema,
      { task: { ttl: 1e12 } },
    );
    check('task ttl: a huge request is clamped to the maximum', cr.task.ttl > 0 && cr.task.ttl <= 24 * 3600 * 1000, show(cr.task));
    const r = await client.experimental.tasks.getTaskResult(cr.task.taskId, CallToolResultSchema);
    check('tasks/result on a working task waits for the result', !r.isError && r.structuredContent?.count === 3 && relatedTaskId(r) === cr.task.taskId, show(r));
    const t = await client.experimental.tasks.getTask(cr.task.taskId);
    check('tasks/result on a working task: then completed', t.status === 'completed', show(t));
  });

  // --- a tool error makes the task failed, its result is still served --------
  await step('task failed', async () => {
    const cr = await client.request(
      { method: 'tools/call', params: { name: 'slow_count', arguments: { steps: 0 } } },
      CreateTaskResultSchema,
      { task: {} },
    );
    const r = await client.experimental.tasks.getTaskResult(cr.task.taskId, CallToolResultSchema);
    check('task failed: tasks/result returns the isError result', r.isError === true && relatedTaskId(r) === cr.task.taskId, show(r));
    const t = await client.experimental.tasks.getTask(cr.task.taskId);
    check('task failed: status failed', t.status === 'failed', show(t));
  });

  // --- tasks/list ---------------------------------------------------------
  await step('tasks/list', async () => {
    const all = [];
    let cursor;
    for (let page = 0; page < 100; page++) {
      const r = await client.experimental.tasks.listTasks(cursor);
      all.push(...r.tasks);
      cursor = r.nextCursor;
      if (!cursor) break;
    }
    check('tasks/list: shows the completed task', doneTaskId && all.some((t) => t.taskId === doneTaskId && t.status === 'completed'), show(all));
  });

  // --- tasks/list pages: more tasks than one page ---------------------------
  await step('tasks/list pages', async () => {
    // Tasks whose arguments fail the input schema fail at once, without
    // running a guest: a cheap way to fill more than one page.
    const made = new Set();
    for (let i = 0; i < 60; i++) {
      const cr = await client.request(
        { method: 'tools/call', params: { name: 'slow_count', arguments: { steps: 0 } } },
        CreateTaskResultSchema,
        { task: { ttl: 600000 } },
      );
      made.add(cr.task.taskId);
    }
    const seen = new Map();
    let cursor, pages = 0;
    do {
      const r = await client.experimental.tasks.listTasks(cursor);
      pages++;
      for (const t of r.tasks) seen.set(t.taskId, (seen.get(t.taskId) ?? 0) + 1);
      cursor = r.nextCursor;
    } while (cursor && pages < 100);
    const missing = [...made].filter((id) => !seen.has(id));
    const twice = [...seen].filter(([, n]) => n > 1);
    check('tasks/list pages: more than one page via nextCursor', pages >= 2, `pages ${pages}, tasks ${seen.size}`);
    check('tasks/list pages: every task once', missing.length === 0 && twice.length === 0, show({ missing, twice }));
  });

  // --- cancel a running task ------------------------------------------------
  await step('tasks/cancel', async () => {
    const cr = await client.request(
      { method: 'tools/call', params: { name: 'slow_count', arguments: { steps: 1000, delay_ms: 100 } } },
      CreateTaskResultSchema,
      { task: { ttl: 600000 } },
    );
    const id = cr.task.taskId;
    check('tasks/cancel: task created working', cr.task.status === 'working', show(cr));
    const c = await client.experimental.tasks.cancelTask(id);
    check('tasks/cancel: answers cancelled', c.status === 'cancelled' && c.taskId === id, show(c));
    const t1 = await client.experimental.tasks.getTask(id);
    check('tasks/cancel: tasks/get cancelled', t1.status === 'cancelled', show(t1));
    await sleep(300); // the guest has had time to notice and return
    const t2 = await client.experimental.tasks.getTask(id);
    check('tasks/cancel: stays cancelled', t2.status === 'cancelled', show(t2));
    await expectError('tasks/cancel: tasks/result of a cancelled task is an error', -32603, () =>
      client.experimental.tasks.getTaskResult(id, CallToolResultSchema),
    );
    await expectError('tasks/cancel: cancel of a terminal task → -32602', -32602, () => client.experimental.tasks.cancelTask(id));
    if (doneTaskId) {
      await expectError('tasks/cancel: cancel of a completed task → -32602', -32602, () => client.experimental.tasks.cancelTask(doneTaskId));
    }
  });

  // --- long_job: elicitation while waiting in tasks/result ------------------
  await step('long_job', async () => {
    const before = elicitations.length;
    const seen = [];
    let created, result, error;
    // long_job is required: callToolStream makes it a task by itself.
    for await (const m of client.experimental.tasks.callToolStream({ name: 'long_job', arguments: { steps: 4, delay_ms: 50 } })) {
      seen.push(m.type === 'taskStatus' ? `${m.type}:${m.task.status}` : m.type);
      if (m.type === 'taskCreated') created = m.task;
      if (m.type === 'result') result = m.result;
      if (m.type === 'error') error = m.error;
    }
    const asked = elicitations.slice(before);
    check('long_job: task created', created?.status === 'working', show(created));
    check('long_job: went input_required', seen.includes('taskStatus:input_required'), show(seen));
    check('long_job: one elicitation with related-task _meta', asked.length === 1 && asked[0]?._meta?.[RELATED_TASK_META_KEY]?.taskId === created?.taskId, show(asked));
    check('long_job: completed after accept', !error && result && !result.isError && result.structuredContent?.confirmed === true && result.structuredContent?.done === 4,
      show({ seen, result, error: String(error) }));
    check('long_job: result carries related-task _meta', relatedTaskId(result) === created?.taskId, show(result?._meta));
    if (created) {
      const t = await client.experimental.tasks.getTask(created.taskId);
      check('long_job: tasks/get completed', t.status === 'completed', show(t));
    }
  });

  // --- long_job declined: the tool stops and still completes ----------------
  await step('long_job declined', async () => {
    answer = { action: 'decline' };
    let result, error;
    try {
      for await (const m of client.experimental.tasks.callToolStream({ name: 'long_job', arguments: { steps: 4, delay_ms: 50 } })) {
        if (m.type === 'result') result = m.result;
        if (m.type === 'error') error = m.error;
      }
    } finally {
      answer = ACCEPT;
    }
    check('long_job declined: completes with confirmed false after 2 steps', !error && result?.structuredContent?.confirmed === false && result?.structuredContent?.done === 2,
      show({ result, error: String(error) }));
  });

  // --- cancel while input_required: no elicitation is delivered afterwards --
  await step('cancel input_required', async () => {
    const before = elicitations.length;
    const cr = await client.request(
      { method: 'tools/call', params: { name: 'long_job', arguments: { steps: 2, delay_ms: 10 } } },
      CreateTaskResultSchema,
      { task: { ttl: 600000 } },
    );
    const id = cr.task.taskId;
    let t = cr.task;
    for (let i = 0; i < 600 && t.status === 'working'; i++) {
      await sleep(50);
      t = await client.experimental.tasks.getTask(id);
    }
    check('cancel input_required: task waits for input', t.status === 'input_required', show(t));
    const c = await client.experimental.tasks.cancelTask(id);
    check('cancel input_required: answers cancelled', c.status === 'cancelled', show(c));
    await expectError('cancel input_required: tasks/result is an error, no elicitation', -32603, () =>
      client.experimental.tasks.getTaskResult(id, CallToolResultSchema),
    );
    const t2 = await client.experimental.tasks.getTask(id);
    check('cancel input_required: stays cancelled, nothing elicited', t2.status === 'cancelled' && elicitations.length === before, show({ t2, asked: elicitations.slice(before) }));
  });

  // --- raw checks the high-level API refuses --------------------------------
  await expectError('plain call of an unknown tool → -32602', -32602, () =>
    client.request({ method: 'tools/call', params: { name: 'no_such_tool', arguments: {} } }, CallToolResultSchema),
  );
  await expectError('task call of an unknown tool → -32602', -32602, () =>
    client.request({ method: 'tools/call', params: { name: 'no_such_tool', arguments: {} } }, CreateTaskResultSchema, { task: {} }),
  );
  await expectError('plain call of a required tool (long_job) → -32601', -32601, () =>
    client.request({ method: 'tools/call', params: { name: 'long_job', arguments: { steps: 2 } } }, CallToolResultSchema),
  );
  await expectError('task call of a forbidden tool (word_count) → -32601', -32601, () =>
    client.request({ method: 'tools/call', params: { name: 'word_count', arguments: { text: 'a b' }, task: { ttl: 60000 } } }, CreateTaskResultSchema),
  );
  await expectError('task call of a forbidden tool (sha256) → -32601', -32601, () =>
    client.request({ method: 'tools/call', params: { name: 'sha256', arguments: { text: 'a' } } }, CreateTaskResultSchema, { task: {} }),
  );
  await expectError('tasks/get of an unknown task → -32602', -32602, () => client.experimental.tasks.getTask('no-such-task'));
  await expectError('tasks/result of an unknown task → -32602', -32602, () =>
    client.experimental.tasks.getTaskResult('no-such-task', CallToolResultSchema),
  );
  await expectError('tasks/cancel of an unknown task → -32602', -32602, () => client.experimental.tasks.cancelTask('no-such-task'));
  await expectError('tasks/list with a bad cursor → -32602', -32602, () => client.experimental.tasks.listTasks('not-a-cursor'));
  await step('tasks/get raw', async () => {
    if (!doneTaskId) return;
    const t = await client.request({ method: 'tasks/get', params: { taskId: doneTaskId } }, GetTaskResultSchema);
    check('tasks/get raw: TTL and timestamps', typeof t.ttl === 'number' && !Number.isNaN(Date.parse(t.lastUpdatedAt)), show(t));
  });

  // --- another session cannot see or touch this session's tasks -------------
  if (mode === 'http' && doneTaskId) {
    await step('isolation', async () => {
      const other = new Client({ name: 'wasmtask-interop-other', version: '1.0.0' }, { capabilities: {} });
      other.onerror = (e) => sdkErrors.push(`other session: ${e?.stack ?? e}`);
      await other.connect(new StreamableHTTPClientTransport(new URL(target)));
      try {
        await expectError('isolation: tasks/get of another session\'s task → -32602', -32602, () => other.experimental.tasks.getTask(doneTaskId));
        await expectError('isolation: tasks/result of another session\'s task → -32602', -32602, () =>
          other.experimental.tasks.getTaskResult(doneTaskId, CallToolResultSchema),
        );
        await expectError('isolation: tasks/cancel of another session\'s task → -32602', -32602, () => other.experimental.tasks.cancelTask(doneTaskId));
        const r = await other.experimental.tasks.listTasks();
        check('isolation: tasks/list of another session is empty', r.tasks.length === 0, show(r));
      } finally {
        await other.close();
      }
    });
  }

  // --- notifications --------------------------------------------------------
  if (mode === 'stdio') {
    // notifications/tasks/status is optional; on stdio the server sends it.
    check('stdio: notifications/tasks/status received and valid', statusNotes.some((n) => n.status === 'completed') && statusNotes.some((n) => n.status === 'cancelled'),
      show(statusNotes.map((n) => `${n.taskId.slice(0, 6)}:${n.status}`)));
  }
  check('no SDK errors (schema rejections, unknown ids)', sdkErrors.length === 0, sdkErrors);
}

let exitCode = 0;
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
if (!ok) exitCode = 1;
const report = { transport: mode, ok, checks };
if (!ok && stderrText) report.serverStderr = stderrText;
process.stdout.write(JSON.stringify(report, null, 1) + '\n');
process.exit(exitCode);
