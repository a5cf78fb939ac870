// toolexecd's MCP streamable HTTP endpoint (--mcp_listen) driven by the
// official MCP TypeScript SDK client (@modelcontextprotocol/sdk,
// StreamableHTTPClientTransport) and by plain fetch for what the SDK hides
// (status codes, headers). A real toolexecd on 127.0.0.1:0 with a token file;
// the endpoint's address is read from its log line.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

import { TOOLEXEC, TOOLEXECD, checkCancellation, checkProgress, eventually, importSdk, sleep } from './helpers.mjs';

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
  const d = { log: '', url: null, grpc: null };
  d.proc = spawn(TOOLEXECD, ['--listen=127.0.0.1:0', '--mcp_listen=127.0.0.1:0',
                             `--workspace=${workspace}`, `--token_file=${tokens}`,
                             '--example_tools', ...extraArgs],
                 { stdio: ['ignore', 'pipe', 'pipe'] });
  d.proc.stdout.on('data', (s) => (d.log += s));
  d.proc.stderr.on('data', (s) => (d.log += s));
  d.exited = new Promise((resolve) => d.proc.once('exit', (code) => resolve(code)));
  const up = await eventually(() => {
    const m = /MCP over streamable HTTP on (http:\/\/\S+\/mcp)/.exec(d.log);
    const g = /toolexecd serving on (\S+)/.exec(d.log);
    if (m && g) [d.url, d.grpc] = [m[1], g[1]];
    return Boolean(d.url);
  });
  assert.ok(up, `toolexecd did not start:\n${d.log}`);
  return d;
}

const INITIALIZE = { jsonrpc: '2.0', id: 1, method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } };
const PING = { jsonrpc: '2.0', id: 2, method: 'ping' };

// One POST through node:http, which (unlike fetch) sends the Host header it is
// given: the status, headers and parsed JSON body.
function rawPost(url, message, headers = {}, token = ALICE, timeoutMs = 60_000) {
  const body = JSON.stringify(message);
  return new Promise((resolve, reject) => {
    const request = http.request(url, { method: 'POST', headers: {
      'Content-Type': 'application/json', Accept: JSON_AND_SSE,
      ...(token ? { Authorization: `Bearer ${token}` } : {}),
      'Content-Length': Buffer.byteLength(body), ...headers } }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (s) => (text += s));
      response.on('end', () => {
        let json = null;
        try { json = JSON.parse(text); } catch {}
        resolve({ status: response.statusCode, headers: response.headers, body: json, text });
      });
    });
    request.on('error', reject);
    request.setTimeout(timeoutMs, () => request.destroy(new Error(`no answer in ${timeoutMs} ms`)));
    request.end(body);
  });
}

// A session of `token`'s caller on the daemon at `url`: its id.
async function openSession(url, token) {
  const r = await rawPost(url, INITIALIZE, {}, token);
  assert.equal(r.status, 200, r.text);
  return r.headers['mcp-session-id'];
}

// A daemon for one test, stopped (and its workspace removed) after it.
async function daemonFor(t, name, args = []) {
  const workspace = fs.mkdtempSync(path.join(os.tmpdir(), `toolexec-mcp-http-${name}-`));
  fs.writeFileSync(path.join(workspace, 'hello.txt'), 'first line\n');
  const daemon = await startDaemon(workspace, args);
  t.after(async () => {
    daemon.proc.kill('SIGKILL');
    await daemon.exited;
    fs.rmSync(workspace, { recursive: true, force: true });
  });
  return daemon;
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
    // The build's version, as `toolexecd --version` prints it.
    const version = await new Promise((resolve, reject) => execFile(TOOLEXECD, ['--version'],
      (err, stdout) => (err ? reject(err) : resolve(stdout.split(' ')[1]))));
    assert.equal(client.getServerVersion().version, version);
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
    assert.equal(tools[0].name, 'view_file', 'registration order [Names and order]');
    assert.deepEqual(byName.view_file.inputSchema.required, ['file_path']);
    assert.equal(byName.view_file.annotations.readOnlyHint, true);
    assert.equal(byName.run_command.annotations.destructiveHint, true);
    assert.ok(byName.get_weather, 'the example tools');
    assert.ok(!tools.some((t) => t.name === 'ask_question'), 'harness tools are not offered');
  });

  // One request to `toolexec mcp` (stdio) against the same daemon, as
  // alice: the line it answers with.
  function stdioRequest(message) {
    return new Promise((resolve, reject) => {
      const proc = spawn(TOOLEXEC, [`--target=${daemon.grpc}`, 'mcp'], {
        env: { ...process.env, TOOLEXEC_TOKEN: ALICE }, stdio: ['pipe', 'pipe', 'inherit'] });
      let out = '';
      proc.stdout.setEncoding('utf8');
      proc.stdout.on('data', (s) => {
        out += s;
        const line = out.split('\n').find((l) => l.startsWith(`{"jsonrpc":"2.0","id":${message.id},`));
        if (line !== undefined) {
          proc.stdin.end();
          resolve(line);
        }
      });
      proc.on('error', reject);
      proc.on('exit', (code) => reject(new Error(`toolexec mcp exited ${code}: ${out}`)));
      proc.stdin.write(`${JSON.stringify(message)}\n`);
    });
  }

  test('tools/list declares every tool as `toolexec mcp` does from the same daemon, byte for byte', async () => {
    const session = (await post(initialize())).headers.get('mcp-session-id');
    const list = { jsonrpc: '2.0', id: 5, method: 'tools/list' };
    const http = await post(list, { 'Mcp-Session-Id': session });
    assert.equal(http.status, 200, http.text);
    assert.ok(http.body.result.tools.length > 10, http.text);
    assert.equal(http.text, await stdioRequest(list));
  });

  test('tools/call: text and structuredContent; a failure is isError', async () => {
    const { client } = await connect();
    const r = await client.callTool({ name: 'view_file', arguments: { file_path: 'hello.txt' } });
    assert.ok(!r.isError);
    assert.match(r.content[0].text, /second line/);
    assert.equal(r.structuredContent.total_lines, 2);
    const sum = await client.callTool({ name: 'calculate_sum', arguments: { numbers: [1, 2, '3'] } });
    // [Arguments] coercion ("3" -> 3), and a non-object result as {"result": v} [Failures are results].
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

describe('toolexecd MCP over streamable HTTP: sessions', () => {
  test('another caller\'s initializes never end a session; a caller\'s own oldest goes', async (t) => {
    if (missing) assert.fail(missing);
    const daemon = await daemonFor(t, 'per-caller', ['--mcp_max_sessions_per_caller=4']);
    const alice = await openSession(daemon.url, ALICE);
    const bob = [];
    for (let i = 0; i < 10; i++) bob.push(await openSession(daemon.url, BOB));
    const ping = (session, token) => rawPost(daemon.url, PING, { 'Mcp-Session-Id': session }, token);
    assert.equal((await ping(alice, ALICE)).status, 200, 'alice\'s session outlives bob\'s initializes');
    assert.equal((await ping(bob[0], BOB)).status, 404, 'bob\'s least recently used session ended');
    for (const session of bob.slice(-4)) assert.equal((await ping(session, BOB)).status, 200);
    assert.ok(await eventually(() => /ended: least recently used of its caller's 4/.test(daemon.log)),
              daemon.log);
  });

  test('past the daemon\'s cap an initialize is refused, never another caller\'s session ended', async (t) => {
    if (missing) assert.fail(missing);
    const daemon = await daemonFor(t, 'global-cap', ['--mcp_max_sessions_per_caller=1024']);
    const alice = await openSession(daemon.url, ALICE);
    const statuses = [];
    let refusal = null;
    for (let i = 0; i < 1030; i += 50) {
      const batch = [];
      for (let j = i; j < Math.min(i + 50, 1030); j++) batch.push(rawPost(daemon.url, INITIALIZE, {}, BOB));
      for (const r of await Promise.all(batch)) {
        statuses.push(r.status);
        if (r.status === 503) refusal = r;
      }
    }
    assert.equal(statuses.filter((s) => s === 200).length, 1023, 'the cap is 1024 sessions in all');
    assert.equal(statuses.filter((s) => s === 503).length, 7);
    assert.match(refusal.body.error.message, /maximum of 1024 MCP sessions/);
    const ping = await rawPost(daemon.url, PING, { 'Mcp-Session-Id': alice });
    assert.equal(ping.status, 200, 'alice\'s session outlives bob\'s initializes');
  });

  test('a session with no request for the idle TTL ends', async (t) => {
    if (missing) assert.fail(missing);
    const daemon = await daemonFor(t, 'idle', ['--mcp_session_idle_ttl_ms=2000']);
    const idle = await openSession(daemon.url, ALICE);
    const busy = await openSession(daemon.url, ALICE);
    // Time passing is what is tested: `busy` is used well within the TTL,
    // `idle` not at all for longer than it.
    for (let i = 0; i < 6; i++) {
      await sleep(400);
      assert.equal((await rawPost(daemon.url, PING, { 'Mcp-Session-Id': busy })).status, 200);
    }
    assert.equal((await rawPost(daemon.url, PING, { 'Mcp-Session-Id': idle })).status, 404);
    assert.ok(await eventually(() => /ended: no request for 2s/.test(daemon.log)), daemon.log);
  });
});

describe('toolexecd MCP over streamable HTTP: Host header', () => {
  test('only loopback hosts and the configured ones; others are 403 before the token', async (t) => {
    if (missing) assert.fail(missing);
    const daemon = await daemonFor(t, 'host', ['--mcp_allowed_hosts=mcp.example,[fd00::5]']);
    const port = new URL(daemon.url).port;
    for (const host of ['evil.example', `evil.example:${port}`, `localhost.evil.example:${port}`,
                        '127.0.0.2.evil.example', `[fd00::6]:${port}`]) {
      const r = await rawPost(daemon.url, INITIALIZE, { Host: host });
      assert.equal(r.status, 403, host);
      assert.match(r.body.error.message, /DNS rebinding/);
      assert.equal((await rawPost(daemon.url, INITIALIZE, { Host: host }, null)).status, 403,
                   `${host}: refused before the token is looked at`);
    }
    for (const host of [`localhost:${port}`, 'localhost', `127.0.0.1:${port}`, `[::1]:${port}`,
                        `mcp.example:${port}`, 'MCP.Example', `[fd00::5]:${port}`]) {
      assert.equal((await rawPost(daemon.url, INITIALIZE, { Host: host })).status, 200, host);
    }
    assert.ok(await eventually(() => /status=403 msg="Host [^ ]*evil\.example[^ ]* is not served/.test(daemon.log)),
              daemon.log);
  });
});

describe('toolexecd MCP over streamable HTTP: slow clients', () => {
  test('half-sent requests hold no worker for long; MCP and gRPC callers are served', async (t) => {
    if (missing) assert.fail(missing);
    const daemon = await daemonFor(t, 'slow');
    const { hostname, port } = new URL(daemon.url);
    // More half-sent requests than the endpoint has workers, each trickling
    // header lines and never ending its headers.
    const sockets = [];
    t.after(() => sockets.forEach((s) => s.destroy()));
    for (let i = 0; i < 70; i++) {
      const socket = net.connect(Number(port), hostname);
      socket.on('error', () => {});
      socket.write(`POST /mcp HTTP/1.1\r\nHost: ${hostname}:${port}\r\n`);
      socket.timer = setInterval(() => socket.write('X-Slow: 1\r\n'), 1000);
      socket.on('close', () => clearInterval(socket.timer));
      sockets.push(socket);
    }
    t.after(() => sockets.forEach((s) => clearInterval(s.timer)));
    await sleep(500);  // let the endpoint take them up
    const started = Date.now();
    // A generous bound, well below what a worker waited for headers before.
    const bound = 30_000;
    const grpc = new Promise((resolve) => execFile(
      TOOLEXEC, [`--target=${daemon.grpc}`, 'call', 'view_file', '{"file_path":"hello.txt"}'],
      { env: { ...process.env, TOOLEXEC_TOKEN: ALICE }, timeout: bound },
      (err, stdout) => resolve({ err, stdout, ms: Date.now() - started })));
    const init = await rawPost(daemon.url, INITIALIZE, {}, ALICE, bound);
    assert.equal(init.status, 200, init.text);
    assert.ok(Date.now() - started < bound, `the MCP request took ${Date.now() - started} ms`);
    const call = await grpc;
    assert.equal(call.err, null, `gRPC call: ${call.err}`);
    assert.match(call.stdout, /first line/);
  });
});

// HTTP/1.1 over one TCP socket, one request at a time, so a test sees which
// connection answered and when the server closes it.
class RawConnection {
  constructor(url) {
    const { hostname, port } = new URL(url);
    this.host = `${hostname}:${port}`;
    this.socket = net.connect(Number(port), hostname);
    this.socket.setNoDelay(true);
    this.buffer = Buffer.alloc(0);
    this.waiting = null;
    this.closed = new Promise((resolve) => this.socket.once('close', () => resolve(Date.now())));
    this.socket.on('error', () => {});
    this.socket.on('data', (d) => {
      this.buffer = Buffer.concat([this.buffer, d]);
      this.waiting?.();
    });
    this.socket.on('close', () => this.waiting?.());
  }

  // POSTs `message`; resolves with {status, headers (lower-case names), body (text)}
  // once the whole response is in: by Content-Length, or chunked.
  async post(message, headers = {}) {
    const body = JSON.stringify(message);
    const lines = [`POST /mcp HTTP/1.1`, `Host: ${this.host}`, 'Content-Type: application/json',
      `Accept: ${JSON_AND_SSE}`, `Authorization: Bearer ${ALICE}`,
      `Content-Length: ${Buffer.byteLength(body)}`,
      ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
    this.socket.write(`${lines.join('\r\n')}\r\n\r\n${body}`);
    for (;;) {
      const response = this.take();
      if (response) return response;
      if (this.socket.destroyed || this.socket.readableEnded) throw new Error('the server closed the connection');
      await new Promise((resolve) => { this.waiting = resolve; });
    }
  }

  // One whole response off the buffer, or null.
  take() {
    const end = this.buffer.indexOf('\r\n\r\n');
    if (end < 0) return null;
    const [statusLine, ...headerLines] = this.buffer.subarray(0, end).toString('latin1').split('\r\n');
    const headers = {};
    for (const line of headerLines) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    let rest = this.buffer.subarray(end + 4);
    let body = '';
    if (headers['transfer-encoding'] === 'chunked') {
      for (;;) {
        const eol = rest.indexOf('\r\n');
        if (eol < 0) return null;
        const size = parseInt(rest.subarray(0, eol).toString('latin1'), 16);
        if (rest.length < eol + 2 + size + 2) return null;
        body += rest.subarray(eol + 2, eol + 2 + size).toString('utf8');
        rest = rest.subarray(eol + 2 + size + 2);
        if (size === 0) break;
      }
    } else {
      const length = Number(headers['content-length'] || 0);
      if (rest.length < length) return null;
      body = rest.subarray(0, length).toString('utf8');
      rest = rest.subarray(length);
    }
    this.buffer = rest;
    return { status: Number(statusLine.split(' ')[1]), headers, body };
  }

  destroy() { this.socket.destroy(); }
}

// A daemon for one test and one raw connection to it, both ended after the test.
async function rawConnectionFor(t, name) {
  const daemon = await daemonFor(t, name);
  const conn = new RawConnection(daemon.url);
  t.after(() => conn.destroy());
  return { daemon, conn };
}

describe('toolexecd MCP over streamable HTTP: connections', () => {
  test('one connection carries requests one after another, SSE answers too; idle, it is closed', async (t) => {
    if (missing) assert.fail(missing);
    const { daemon, conn } = await rawConnectionFor(t, 'keepalive');
    const init = await conn.post(INITIALIZE);
    assert.equal(init.status, 200, init.body);
    assert.equal(init.headers.connection, 'keep-alive');
    assert.equal(init.headers['keep-alive'], 'timeout=5');
    const session = { 'Mcp-Session-Id': init.headers['mcp-session-id'], 'MCP-Protocol-Version': '2025-06-18' };
    assert.equal((await conn.post(PING, session)).status, 200);
    const call = await conn.post({ jsonrpc: '2.0', id: 3, method: 'tools/call',
                                   params: { name: 'view_file', arguments: { file_path: 'hello.txt' } } },
                                 session);
    assert.equal(call.status, 200);
    assert.equal(call.headers['content-type'], 'text/event-stream');
    assert.match(call.body, /^event: message\ndata: .*first line/s);
    const last = await conn.post(PING, session);
    assert.equal(last.status, 200);
    const idleSince = Date.now();
    // Four requests, one connection: the daemon logged one peer for them all.
    const peers = new Set([...daemon.log.matchAll(/MCP POST peer=(\S+)/g)].map((m) => m[1]));
    assert.equal(peers.size, 1, daemon.log);
    // Closed by the daemon after its idle timeout (5 s).
    const closedAt = await Promise.race([conn.closed, sleep(15_000).then(() => null)]);
    assert.ok(closedAt !== null, 'the idle connection was not closed');
    assert.ok(closedAt - idleSince >= 4_000, `closed after ${closedAt - idleSince} ms`);
  });

  test('at most 16 connections are kept at once; the others close after their answer', async (t) => {
    if (missing) assert.fail(missing);
    const daemon = await daemonFor(t, 'keptcap');
    const conns = [];
    t.after(() => conns.forEach((c) => c.destroy()));
    for (let i = 0; i < 20; i++) conns.push(new RawConnection(daemon.url));
    const answers = await Promise.all(conns.map((c) => c.post(INITIALIZE)));
    for (const a of answers) assert.equal(a.status, 200, a.body);
    const kept = answers.filter((a) => a.headers.connection === 'keep-alive').length;
    assert.equal(kept, 16);
    const told = conns.filter((c, i) => answers[i].headers.connection === 'close');
    assert.equal(told.length, 4);
    for (const c of told) assert.ok(await Promise.race([c.closed, sleep(5_000).then(() => null)]), 'closed');
    // A kept one that ends makes room for a new one.
    const keptConn = conns.find((c, i) => answers[i].headers.connection === 'keep-alive');
    keptConn.destroy();
    assert.ok(await eventually(async () => {
      const c = new RawConnection(daemon.url);
      conns.push(c);
      return (await c.post(INITIALIZE)).headers.connection === 'keep-alive';
    }, 5_000), 'no room after a kept connection closed');
  });

  test('a connection is closed after 1000 requests', async (t) => {
    if (missing) assert.fail(missing);
    const { conn } = await rawConnectionFor(t, 'keptmax');
    const init = await conn.post(INITIALIZE);
    const session = { 'Mcp-Session-Id': init.headers['mcp-session-id'] };
    for (let i = 2; i < 1000; i++) {
      const r = await conn.post(PING, session);
      assert.equal(r.headers.connection, 'keep-alive', `request ${i}`);
    }
    const thousandth = await conn.post(PING, session);
    assert.equal(thousandth.status, 200);
    assert.equal(thousandth.headers.connection, 'close');
    assert.ok(await Promise.race([conn.closed, sleep(5_000).then(() => null)]), 'closed');
  });

  test('SIGTERM with an idle kept connection still exits promptly', async (t) => {
    if (missing) assert.fail(missing);
    const { daemon, conn } = await rawConnectionFor(t, 'keptstop');
    assert.equal((await conn.post(INITIALIZE)).headers.connection, 'keep-alive');
    const started = Date.now();
    daemon.proc.kill('SIGTERM');
    assert.equal(await daemon.exited, 0, daemon.log);
    // civetweb's poll slice is 2 s; the idle timeout (5 s) is not waited out.
    assert.ok(Date.now() - started < 4_500, `exited after ${Date.now() - started} ms`);
  });
});
