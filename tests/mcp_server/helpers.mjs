// What the MCP server tests (stdio and streamable HTTP) share: the binaries,
// the SDK, polling, and the checks both transports must pass alike.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const TOOLEXECD = process.env.TOOLEXECD || path.join(REPO, 'build/toolexecd');
export const TOOLEXEC = process.env.TOOLEXEC || path.join(REPO, 'build/toolexec');

// The SDK's Client, McpError and the transport class `transport` exports from
// `module` (e.g. 'client/stdio.js'), or `missing` saying what to install.
export async function importSdk(module, transport) {
  try {
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { McpError } = await import('@modelcontextprotocol/sdk/types.js');
    const Transport = (await import(`@modelcontextprotocol/sdk/${module}`))[transport];
    return { Client, McpError, Transport, missing: null };
  } catch (err) {
    return { missing: `the MCP SDK is not installed (${err.message}); run \`cd tests/mcp_server && npm install\`` };
  }
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Polls `pred` until it holds (true) or `ms` pass (false).
export async function eventually(pred, ms = 10_000) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await pred()) return true;
    await sleep(25);
  }
  return false;
}

// Pids of the processes whose environment holds `needle`.
export function processesWith(needle) {
  const found = [];
  for (const pid of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (fs.readFileSync(`/proc/${pid}/environ`, 'latin1').includes(needle)) found.push(pid);
    } catch {}
  }
  return found;
}

// run_command's output arrives as notifications/progress, in order.
export async function checkProgress(client) {
  const seen = [];
  const r = await client.callTool(
    { name: 'run_command', arguments: { command_line: 'echo one; sleep 0.2; echo two' } },
    undefined, { onprogress: (p) => seen.push(p) });
  assert.ok(!r.isError, JSON.stringify(r));
  assert.ok(seen.length >= 1, 'progress notifications');
  assert.match(seen.map((p) => p.message).join(''), /one/);
  for (let i = 1; i < seen.length; i++) assert.ok(seen[i].progress > seen[i - 1].progress);
}

// Aborting a call cancels it in the daemon (its processes end), and the
// connection goes on serving.
export async function checkCancellation(client, name) {
  const marker = `${name}-cancel-${process.pid}-${Date.now()}`;
  const abort = new AbortController();
  const call = client.callTool(
    { name: 'run_command', arguments: { command_line: 'sleep 1000', env: { MCP_MARKER: marker } } },
    undefined, { signal: abort.signal });
  assert.ok(await eventually(() => processesWith(marker).length > 0), 'the command started');
  abort.abort('no longer needed');
  await assert.rejects(call);
  assert.ok(await eventually(() => processesWith(marker).length === 0),
            `left behind: ${processesWith(marker)}`);
  const r = await client.callTool({ name: 'view_file', arguments: { file_path: 'hello.txt' } });
  assert.ok(!r.isError);
}
