// `toolexec mcp` driven by the official MCP TypeScript SDK client
// (@modelcontextprotocol/sdk, pinned in package.json): the SDK spawns the CLI
// over stdio (StdioClientTransport), and the CLI proxies to a real toolexecd
// on 127.0.0.1:0 whose config declares the example command tools.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { REPO, TOOLEXEC, TOOLEXECD, checkCancellation, checkProgress, eventually, importSdk } from './helpers.mjs';

const { Client, Transport: StdioClientTransport, McpError, missing: sdkMissing } =
  await importSdk('client/stdio.js', 'StdioClientTransport');
let missing = sdkMissing;
for (const [what, file] of [['toolexecd', TOOLEXECD], ['toolexec', TOOLEXEC]]) {
  if (!missing && !fs.existsSync(file)) missing = `${what} not found at ${file}: build it`;
}

// A toolexecd on 127.0.0.1:0 for `workspace`, with `args`; resolves to it
// once it serves, with its address and log.
async function startDaemon(workspace, args) {
  const addressFile = path.join(workspace, '.address');
  const d = { log: '', address: null };
  d.proc = spawn(TOOLEXECD, ['--listen=127.0.0.1:0', `--workspace=${workspace}`,
                             `--address_file=${addressFile}`, ...args],
                 { stdio: ['ignore', 'pipe', 'pipe'] });
  d.proc.stdout.on('data', (s) => (d.log += s));
  d.proc.stderr.on('data', (s) => (d.log += s));
  d.exited = new Promise((resolve) => d.proc.once('exit', resolve));
  const up = await eventually(() => {
    try {
      d.address = fs.readFileSync(addressFile, 'utf8').trim();
    } catch {}
    return Boolean(d.address);
  });
  assert.ok(up, `toolexecd did not start:\n${d.log}`);
  return d;
}

describe('toolexec mcp', { skip: false }, () => {
  let daemon, workspace, address;
  const clients = [];

  async function connect(extraArgs = []) {
    const client = new Client({ name: 'toolexec-mcp-test', version: '1.0.0' });
    const transport = new StdioClientTransport({
      command: TOOLEXEC,
      args: [`--target=${address}`, 'mcp', ...extraArgs],
      stderr: 'pipe',
    });
    await client.connect(transport);
    clients.push(client);
    return client;
  }

  before(async () => {
    if (missing) return;
    workspace = fs.mkdtempSync(path.join(os.tmpdir(), 'toolexec-mcp-server-'));
    fs.writeFileSync(path.join(workspace, 'hello.txt'), 'first line\nsecond line\n');
    const config = path.join(workspace, 'toolexecd.textproto');
    // The example config, with the scripts at their absolute paths.
    fs.writeFileSync(config, fs.readFileSync(path.join(REPO, 'examples/command_tools/toolexecd.textproto'), 'utf8')
      .replaceAll('"examples/command_tools/', `"${REPO}/examples/command_tools/`));
    daemon = await startDaemon(workspace, [`--config=${config}`]);
    address = daemon.address;
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

  test('initialize negotiates the newest protocol version and names the server', async () => {
    const client = await connect();
    assert.equal(client.getServerVersion().name, 'toolexec');
    assert.ok(client.getServerCapabilities().tools, 'tools capability');
    await client.ping();
  });

  // The same server spoken to line by line, for what the SDK client hides:
  // the negotiated version, unknown methods and unreadable lines.
  test('raw JSON-RPC: version negotiation, unknown methods, parse errors', async () => {
    const proc = spawn(TOOLEXEC, [`--target=${address}`, 'mcp'], { stdio: ['pipe', 'pipe', 'inherit'] });
    let buffer = '';
    const lines = [];
    proc.stdout.setEncoding('utf8');
    proc.stdout.on('data', (s) => {
      buffer += s;
      let nl;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        lines.push(JSON.parse(buffer.slice(0, nl)));
        buffer = buffer.slice(nl + 1);
      }
    });
    const send = (m) => proc.stdin.write(JSON.stringify(m) + '\n');
    const answer = async (id) => {
      assert.ok(await eventually(() => lines.some((l) => l.id === id)), `no answer to ${id}`);
      return lines.find((l) => l.id === id);
    };
    const init = (id, protocolVersion) => send({ jsonrpc: '2.0', id, method: 'initialize',
      params: { protocolVersion, capabilities: {}, clientInfo: { name: 'raw', version: '0' } } });
    init(1, '2024-11-05');
    assert.equal((await answer(1)).result.protocolVersion, '2024-11-05');
    init('two', '1999-01-01');
    assert.equal((await answer('two')).result.protocolVersion, '2025-11-25');
    send({ jsonrpc: '2.0', id: 3, method: 'resources/list' });
    assert.equal((await answer(3)).error.code, -32601);
    proc.stdin.write('{not json\n');
    assert.ok(await eventually(() => lines.some((l) => l.error?.code === -32700)));
    send({ jsonrpc: '2.0', id: 4, method: 'ping' });
    assert.deepEqual((await answer(4)).result, {});
    proc.stdin.end();
    const code = await new Promise((resolve) => proc.once('exit', resolve));
    assert.equal(code, 0, 'exits 0 at the end of stdin');
  });

  test('tools/list: declarations, schemas and annotations', async () => {
    const client = await connect();
    const { tools } = await client.listTools();
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    assert.equal(tools[0].name, 'view_file', 'registration order [Names and order]');
    assert.deepEqual(byName.view_file.inputSchema.required, ['file_path']);
    assert.equal(byName.view_file.annotations.readOnlyHint, true);
    assert.equal(byName.run_command.annotations.readOnlyHint, false);
    assert.equal(byName.run_command.annotations.destructiveHint, true);
    assert.equal(byName.word_count.annotations.readOnlyHint, true);
    assert.deepEqual(Object.keys(byName.word_count.inputSchema.properties), ['text', 'ignore_blank_lines']);
    // Tools the harness runs are not offered: an MCP client has nobody to run them.
    assert.ok(!tools.some((t) => t.name === 'ask_question'));
  });

  test('--set serves one tool set and refuses the others', async () => {
    const client = await connect(['--set', 'read_only']);
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(names.includes('view_file') && names.includes('word_count'), names.join(','));
    assert.ok(!names.includes('run_command'), names.join(','));
    await assert.rejects(client.callTool({ name: 'run_command', arguments: { command_line: 'true' } }),
                         (err) => err instanceof McpError && err.code === -32602 &&
                           /read_only/.test(err.message));
  });

  test('tools/call: success, with model_content and structuredContent', async () => {
    const client = await connect();
    const r = await client.callTool({ name: 'view_file', arguments: { file_path: 'hello.txt' } });
    assert.ok(!r.isError);
    assert.equal(r.content[0].type, 'text');
    assert.match(r.content[0].text, /second line/);
    assert.equal(r.structuredContent.total_lines, 2);
  });

  test('tools/call: a failure is isError with the message', async () => {
    const client = await connect();
    const r = await client.callTool({ name: 'view_file', arguments: { file_path: 'missing.txt' } });
    assert.equal(r.isError, true);
    assert.match(r.content[0].text, /missing\.txt/);
    assert.equal(r.structuredContent, undefined);
    await assert.rejects(client.callTool({ name: 'no_such_tool', arguments: {} }),
                         (err) => err instanceof McpError && err.code === -32602);
  });

  test('command tools in Python and shell', async () => {
    const client = await connect();
    const words = await client.callTool({ name: 'word_count', arguments: { text: 'one two\n\nthree' } });
    assert.ok(!words.isError, JSON.stringify(words));
    assert.deepEqual(words.structuredContent, { words: 3, lines: 3, characters: 14 });
    // [Arguments] for a command tool: "true" is coerced to the schema's boolean before
    // the program sees it; a wrong type never reaches it.
    const coerced = await client.callTool({ name: 'word_count',
      arguments: { text: 'one two\n\nthree', ignore_blank_lines: 'true' } });
    assert.deepEqual(coerced.structuredContent, { words: 3, lines: 2, characters: 14 });
    const invalid = await client.callTool({ name: 'word_count', arguments: { text: 7, nope: 1 } });
    assert.equal(invalid.isError, true);
    assert.match(invalid.content[0].text, /INVALID_ARGUMENTS/);
    const lines = await client.callTool({ name: 'line_count', arguments: { path: 'hello.txt' } });
    assert.deepEqual(lines.structuredContent, { result: 2 });
    const bad = await client.callTool({ name: 'line_count', arguments: { path: 'nope.txt' } });
    assert.equal(bad.isError, true);
    assert.match(bad.content[0].text, /no such file: nope\.txt/);
  });

  test('progress notifications carry run_command output', async () => {
    await checkProgress(await connect());
  });

  test('cancellation ends the call and its processes', async () => {
    await checkCancellation(await connect(), 'toolexec-mcp');
  });
});

describe('toolexec mcp: policy', () => {
  test('a policy ask is denied at once, saying an MCP client cannot answer it', async (t) => {
    if (missing) assert.fail(missing);
    const workspace = fs.mkdtempSync(path.join(os.tmpdir(), 'toolexec-mcp-server-ask-'));
    fs.writeFileSync(path.join(workspace, 'hello.txt'), 'first line\n');
    const config = path.join(workspace, 'toolexecd.textproto');
    fs.writeFileSync(config, 'policy { rules { name: "reading needs a yes" tool: "view_file" ' +
                             'decision: DECISION_ASK } ask_timeout_ms: 60000 }\n');
    const daemon = await startDaemon(workspace, [`--config=${config}`]);
    const client = new Client({ name: 'ask', version: '1.0.0' });
    t.after(async () => {
      await client.close().catch(() => {});
      daemon.proc.kill('SIGKILL');
      await daemon.exited;
      fs.rmSync(workspace, { recursive: true, force: true });
    });
    await client.connect(new StdioClientTransport({
      command: TOOLEXEC, args: [`--target=${daemon.address}`, 'mcp'], stderr: 'pipe' }));
    // Well within the ask timeout: nobody waits for an answer that cannot come.
    const r = await client.callTool({ name: 'view_file', arguments: { file_path: 'hello.txt' } },
                                    undefined, { timeout: 30_000 });
    assert.equal(r.isError, true);
    assert.match(r.content[0].text, /MCP clients cannot answer permission requests/);
    assert.doesNotMatch(r.content[0].text, /denied by user/);
  });
});
