// Memory of a daemon whose clients never read: starts toolexecd on 127.0.0.1
// (port 0) over a scratch workspace holding one file of about 300 KB, opens
// CLIENTS ExecuteBatch streams of CALLS view_file calls of that file, reads
// nothing (the streams are paused), and samples the daemon's RSS every 100 ms
// for HOLD_MS. Then it cancels the streams, waits AFTER_MS and prints the
// peak RSS (VmHWM), the RSS while held and the RSS after the clients left.
// Bounded: loopback only, one daemon, at most HOLD_MS + AFTER_MS + start-up.
//
//   node bench/unread_results.mjs [toolexecd] [clients]
// Needs tests/e2e's npm packages (see bench/toolexecd.mjs).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import {
  DEFAULT_TOOLEXECD, grpc, procStatus, sleep, startToolexecd, toolexecV1,
} from './toolexecd.mjs';

const TOOLEXECD = process.argv[2] || DEFAULT_TOOLEXECD;
const CLIENTS = Number(process.argv[3] || 1);
const CALLS = Number(process.env.CALLS || 1000);
const HOLD_MS = Number(process.env.HOLD_MS || 8000);
const AFTER_MS = Number(process.env.AFTER_MS || 2000);

const mib = (kb) => (kb / 1024).toFixed(0);

const ws = fs.mkdtempSync(path.join(os.tmpdir(), 'unread-'));
let text = '';
for (let i = 0; text.length < 300 * 1024; ++i) text += `line ${i} ${'x'.repeat(60)}\n`;
fs.writeFileSync(path.join(ws, 'big.txt'), text);
const { daemon, address } = await startToolexecd(TOOLEXECD, ws);
try {
  const proto = toolexecV1();
  const calls = [];
  for (let i = 0; i < CALLS; ++i) {
    calls.push({ id: String(i), name: 'view_file', args_json: '{"file_path":"big.txt"}' });
  }
  const streams = [];
  for (let c = 0; c < CLIENTS; ++c) {
    // One channel per client, as separate harnesses would have.
    const client = new proto.ToolExecutor(address, grpc.credentials.createInsecure(),
                                          { 'grpc.max_receive_message_length': -1 });
    const stream = client.ExecuteBatch({ calls });
    stream.on('error', () => {});
    stream.pause();  // never read
    streams.push({ client, stream });
  }
  let peakRss = 0;
  for (let t = 0; t < HOLD_MS; t += 100) {
    await sleep(100);
    peakRss = Math.max(peakRss, procStatus(daemon.pid, 'VmRSS'));
  }
  const heldRss = procStatus(daemon.pid, 'VmRSS');
  for (const { client, stream } of streams) {
    stream.cancel();
    client.close();
  }
  await sleep(AFTER_MS);
  console.log(`clients=${CLIENTS} calls=${CALLS} file=${text.length}B ` +
              `peak_rss=${mib(Math.max(peakRss, procStatus(daemon.pid, 'VmHWM')))}MiB ` +
              `held_rss=${mib(heldRss)}MiB after_rss=${mib(procStatus(daemon.pid, 'VmRSS'))}MiB`);
} finally {
  daemon.kill('SIGKILL');
  fs.rmSync(ws, { recursive: true, force: true });
}
