// toolexecd's MCP streamable HTTP endpoint (--mcp_listen) driven by the
// official MCP TypeScript SDK client (@modelcontextprotocol/sdk,
// StreamableHTTPClientTransport) and by plain fetch for what the SDK hides
// (status codes, headers). A real toolexecd on 127.0.0.1:0 with a token file;
// the endpoint's address is read from its log line.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { TOOLEXECD, checkCancellation, checkProgress, eventually, importSdk, sleep } from './helpers.mjs';

const { Client, Transport: StreamableHTTPClientTransport, McpError, missing: sdkMissing } =
  await importSdk('client/streamableHttp.js', 'StreamableHTTPClientTransport');
let missing = sdkMissing;
if (!missing && !fs.existsSync(TOOLEXECD)) missing = `toolexecd not found at ${TOOLEXECD}: build it`;

const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-9876543210';
const JSON_AND_SSE = 'application/json, text/event-stream';

// A toolexecd serving MCP over HTTP; resolves once both listeners are up.
async function startDaemon(workspace, extraArgs = []) {
  const tokens = path.join(workspace, '.tokens');
  fs.writeFileSync(tokens, `${ALICE} alice\n${BOB} bob\n`, { mode: 0o600 });
  const d = { log: '', url: null };
  d.proc = spawn(TOOLEXECD, ['--listen=127.0.0.1:0', '--mcp_listen=127.0.0.1:0',
                             `--workspace=${workspace}`, `--token_file=${tokens}`,
                             '--example_tools', ...extraArgs],
                 { stdio: ['ignore', 'pipe', 'pipe'] });
  d.proc.stdout.on('data', (s) => (d.log += s));
  d.proc.stderr.on('data', (s) => (d.log += s));
  d.exited = new Promise((resolve) => d.proc.once('exit', (code) => resolve(code)));
  const up = await eventually(() => {
    const m = /MCP over streamable HTTP on (http:\/\/\S+\/mcp)/.exec(d.log);
    if (m && /toolexecd serving on/.test(d.log)) d.url = m[1];
    return Boolean(d.url);
  });
  assert.ok(up, `toolexecd did not start:\n${d.log}`);
  return d;
}

describe('toolexecd MCP over streamable HTTP', () => {
  let daemon, workspace;
  const clients = [];

  async function connect(token = ALICE) {
    const client = new Client({ name: 'toolexec-mcp-http-test', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(daemon.url), {
      requestInit: { headers: token ? { Authorization: `Bearer ${token}` } : {} },
    });
    await client.connect(transport);
    clients.push(client);
    return { client, transport };
  }

  // One raw POST: the status, headers and parsed JSON body (if any).
  async function post(message, headers = {}) {
    const response = await fetch(daemon.url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: JSON_AND_SSE,
                 Authorization: `Bearer ${ALICE}`, ...headers },
      body: typeof message === 'string' ? message : JSON.stringify(message),
    });
    const text = await response.text();
    let body = null;
    try { body = JSON.parse(text); } catch {}
    return { status: response.status, headers: response.headers, body, text };
  }

  const initialize = (id = 1) => ({ jsonrpc: '2.0', id, method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } });

  before(async () => {
    if (missing) return;
    workspace = fs.mkdtempSync(path.join(os.tmpdir(), 'toolexec-mcp-http-'));
    fs.writeFileSync(path.join(workspace, 'hello.txt'), 'first line\nsecond line\n');
    daemon = await startDaemon(workspace);
  });

  after(async () => {
    for (const c of clients) await c.close().catch(() => {});
    if (daemon) {
      daemon.proc.kill('SIGKILL');
      await daemon.exited;
    }
    if (workspace) fs.rmSync(workspace, { recursive: true, force: true });
  });

  test('prerequisites', () => {
    if (missing) assert.fail(missing);
  });

  test('initialize opens a session; ping; the caller is in the log', async () => {
    const { client, transport } = await connect();
    assert.equal(client.getServerVersion().name, 'toolexec');
    assert.ok(client.getServerCapabilities().tools, 'tools capability');
    assert.match(transport.sessionId, /^[0-9a-f]{32}$/);
    await client.ping();
    // The log line is written once the response is out.
    assert.ok(await eventually(() => /MCP POST peer=127\.0\.0\.1:\d+ caller=alice method=ping status=200/.test(daemon.log)),
              daemon.log);
  });

  test('tools/list: the daemon\'s declarations as MCP tools', async () => {
    const { client } = await connect();
    const { tools } = await client.listTools();
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    assert.equal(tools[0].name, 'view_file', 'registration order (S1)');
    assert.deepEqual(byName.view_file.inputSchema.required, ['file_path']);
    assert.equal(byName.view_file.annotations.readOnlyHint, true);
    assert.equal(byName.run_command.annotations.destructiveHint, true);
    assert.ok(byName.get_weather, 'the example tools');
    assert.ok(!tools.some((t) => t.name === 'ask_question'), 'harness tools are not offered');
  });

  test('tools/call: text and structuredContent; a failure is isError', async () => {
    const { client } = await connect();
    const r = await client.callTool({ name: 'view_file', arguments: { file_path: 'hello.txt' } });
    assert.ok(!r.isError);
    assert.match(r.content[0].text, /second line/);
    assert.equal(r.structuredContent.total_lines, 2);
    const sum = await client.callTool({ name: 'calculate_sum', arguments: { numbers: [1, 2, '3'] } });
    // S4 coercion ("3" -> 3), and a non-object result as {"result": v} (S3).
    assert.deepEqual(sum.structuredContent, { result: 'Sum: 6' });

    const bad = await client.callTool({ name: 'view_file', arguments: { file_path: 'missing.txt' } });
    assert.equal(bad.isError, true);
    assert.match(bad.content[0].text, /missing\.txt/);
    assert.equal(bad.structuredContent, undefined);
    await assert.rejects(client.callTool({ name: 'no_such_tool', arguments: {} }),
                         (err) => err instanceof McpError && err.code === -32602);
  });

  test('auth: no token or a wrong one is 401; the right one works', async () => {
    const none = await post(initialize(), { Authorization: '' });
    assert.equal(none.status, 401);
    assert.match(none.headers.get('www-authenticate'), /^Bearer/);
    assert.match(none.body.error.message, /Authorization: Bearer/);
    const wrong = await post(initialize(), { Authorization: 'Bearer nope' });
    assert.equal(wrong.status, 401);
    assert.doesNotMatch(wrong.text, new RegExp(ALICE));
    await assert.rejects(connect(null), /needs a bearer token/);
    const { client } = await connect(BOB);
    await client.ping();
  });

  test('the session id is required after initialize, and is the caller\'s own', async () => {
    const init = await post(initialize());
    assert.equal(init.status, 200);
    assert.equal(init.headers.get('content-type'), 'application/json');
    const session = init.headers.get('mcp-session-id');
    assert.match(session, /^[0-9a-f]{32}$/);
    const ping = { jsonrpc: '2.0', id: 2, method: 'ping' };
    assert.equal((await post(ping)).status, 400, 'no session id');
    assert.equal((await post(ping, { 'Mcp-Session-Id': 'f'.repeat(32) })).status, 404, 'unknown');
    assert.equal((await post(ping, { 'Mcp-Session-Id': session, Authorization: `Bearer ${BOB}` })).status,
                 404, 'another caller\'s session');
    const ok = await post(ping, { 'Mcp-Session-Id': session, 'MCP-Protocol-Version': '2025-06-18' });
    assert.equal(ok.status, 200);
    assert.deepEqual(ok.body, { jsonrpc: '2.0', id: 2, result: {} });
    const version = await post(ping, { 'Mcp-Session-Id': session, 'MCP-Protocol-Version': '1999-01-01' });
    assert.equal(version.status, 400);
    const note = await post({ jsonrpc: '2.0', method: 'notifications/initialized' },
                            { 'Mcp-Session-Id': session });
    assert.equal(note.status, 202);
    assert.equal((await post('{not json', { 'Mcp-Session-Id': session })).status, 400);
    const get = await fetch(daemon.url, { headers: { Accept: 'text/event-stream', Authorization: `Bearer ${ALICE}` } });
    assert.equal(get.status, 405);
  });

  test('Origin: pages from other hosts are refused (DNS rebinding)', async () => {
    const evil = await post(initialize(), { Origin: 'http://evil.example' });
    assert.equal(evil.status, 403);
    const local = await post(initialize(), { Origin: 'http://localhost:3000' });
    assert.equal(local.status, 200);
  });

  test('DELETE ends the session', async () => {
    const { client, transport } = await connect();
    const session = transport.sessionId;
    await client.ping();
    await transport.terminateSession();
    const after = await post({ jsonrpc: '2.0', id: 9, method: 'ping' }, { 'Mcp-Session-Id': session });
    assert.equal(after.status, 404);
  });

  // Each request in progress holds one of the server's worker threads: calls
  // past its cap are refused at once, so a cancel always finds a thread.
  test('calls past the cap are refused at once; cancels still get through', async () => {
    const session = (await post(initialize())).headers.get('mcp-session-id');
    const H = { 'Mcp-Session-Id': session };
    const N = 70;
    let settled = 0;
    const calls = [];
    for (let i = 0; i < N; i++) {
      calls.push(post({ jsonrpc: '2.0', id: 1000 + i, method: 'tools/call',
                        params: { name: 'wait', arguments: { ms: 5000, value: i } } }, H)
        .then((r) => { settled++; return r; }));
    }
    // The refusals come back at once; the rest are running.
    assert.ok(await eventually(() => settled >= 1), 'no call was refused');
    await sleep(200);
    const notes = [];
    for (let i = 0; i < N; i++) {
      notes.push(post({ jsonrpc: '2.0', method: 'notifications/cancelled',
                        params: { requestId: 1000 + i, reason: 'test' } }, H));
    }
    for (const note of await Promise.all(notes)) assert.equal(note.status, 202);
    const results = await Promise.all(calls);
    const refused = results.filter((r) => /too many tool calls in flight/.test(r.text));
    assert.ok(refused.length >= 1 && refused.length < N, `${refused.length} refused`);
    for (const r of results) {
      assert.equal(r.status, 200);
      assert.doesNotMatch(r.text, /"result"/, 'a cancelled call gets no result');
    }
  });

  test('progress notifications over SSE carry run_command output', async () => {
    await checkProgress((await connect()).client);
  });

  test('cancellation ends the call and its processes, with no response', async () => {
    await checkCancellation((await connect()).client, 'toolexec-mcp-http');
    assert.ok(await eventually(() => /method=tools\/call tool=run_command status=200 msg="cancelled"/.test(daemon.log)),
              daemon.log);
  });
});

describe('toolexecd MCP over streamable HTTP: policy', () => {
  test('a policy ask is denied at once, saying an MCP client cannot answer it', async (t) => {
    if (missing) assert.fail(missing);
    const workspace = fs.mkdtempSync(path.join(os.tmpdir(), 'toolexec-mcp-http-ask-'));
    const config = path.join(workspace, '.toolexecd.textproto');
    fs.writeFileSync(config, 'policy { rules { name: "weather needs a yes" tool: "get_weather" ' +
                             'decision: DECISION_ASK } ask_timeout_ms: 60000 }\n');
    const daemon = await startDaemon(workspace, [`--config=${config}`]);
    t.after(() => {
      daemon.proc.kill('SIGKILL');
      fs.rmSync(workspace, { recursive: true, force: true });
    });
    const client = new Client({ name: 'ask', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(daemon.url), {
      requestInit: { headers: { Authorization: `Bearer ${ALICE}` } } }));
    // Well within the ask timeout: nobody waits for an answer that cannot come.
    const r = await client.callTool({ name: 'get_weather', arguments: { city: 'Paris' } },
                                    undefined, { timeout: 30_000 });
    assert.equal(r.isError, true);
    assert.match(r.content[0].text, /MCP clients cannot answer permission requests/);
    assert.doesNotMatch(r.content[0].text, /denied by user/);
    await client.close();
  });
});

describe('toolexecd MCP over streamable HTTP: shutdown', () => {
  test('a session ends when its caller\'s profile changes (token file reloaded)', async (t) => {
    if (missing) assert.fail(missing);
    const workspace = fs.mkdtempSync(path.join(os.tmpdir(), 'toolexec-mcp-http-reload-'));
    const daemon = await startDaemon(workspace);
    t.after(() => {
      daemon.proc.kill('SIGKILL');
      fs.rmSync(workspace, { recursive: true, force: true });
    });
    const send = (message, headers = {}) => fetch(daemon.url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: JSON_AND_SSE,
                 Authorization: `Bearer ${ALICE}`, ...headers },
      body: JSON.stringify(message),
    });
    const open = (id) => send({ jsonrpc: '2.0', id, method: 'initialize', params: {
      protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } });
    const init = await open(1);
    assert.equal(init.status, 200);
    const session = init.headers.get('mcp-session-id');
    const ping = { jsonrpc: '2.0', id: 2, method: 'ping' };
    assert.equal((await send(ping, { 'Mcp-Session-Id': session })).status, 200);
    // The same token and name, now narrowed to read_only.
    fs.writeFileSync(path.join(workspace, '.tokens'), `${ALICE} alice read_only\n${BOB} bob\n`);
    daemon.proc.kill('SIGHUP');
    assert.ok(await eventually(() => /reloaded token file/.test(daemon.log)), daemon.log);
    assert.equal((await send(ping, { 'Mcp-Session-Id': session })).status, 404,
                 'a session opened under the old profile must not run calls under it');
    const again = await open(3);
    assert.equal(again.status, 200);
    assert.equal((await send(ping, { 'Mcp-Session-Id': again.headers.get('mcp-session-id') })).status,
                 200);
  });

  test('SIGTERM lets a call in flight finish, refuses new requests, and exits 0', async (t) => {
    if (missing) assert.fail(missing);
    const workspace = fs.mkdtempSync(path.join(os.tmpdir(), 'toolexec-mcp-http-drain-'));
    const daemon = await startDaemon(workspace, ['--drain_grace_ms=10000']);
    t.after(() => {
      daemon.proc.kill('SIGKILL');
      fs.rmSync(workspace, { recursive: true, force: true });
    });
    const client = new Client({ name: 'drain', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(daemon.url), {
      requestInit: { headers: { Authorization: `Bearer ${ALICE}` } } }));
    const errors = [];
    client.onerror = (e) => errors.push(String(e));
    const call = client.callTool({ name: 'wait', arguments: { ms: 1500, value: 'finished' } },
                                 undefined, { timeout: 20_000 });
    await sleep(300);
    daemon.proc.kill('SIGTERM');
    assert.ok(await eventually(() => /shutting down gracefully/.test(daemon.log)), daemon.log);
    await assert.rejects(client.ping({ timeout: 20_000 }), /503|shutting down/);
    const r = await call.catch((err) => assert.fail(`${err}\n${errors.join('\n')}\n${daemon.log}`));
    assert.ok(!r.isError, JSON.stringify(r));
    assert.equal(r.structuredContent.value, 'finished');
    assert.equal(await daemon.exited, 0, daemon.log);
  });
});
