// Threads of a daemon running many searches at once: starts toolexecd on
// 127.0.0.1 (port 0) over a scratch tree of FILES files, sends one batch of
// CALLS grep_search calls (a pattern that matches nothing, so every call
// walks the whole tree), samples the daemon's thread count every 5 ms until
// the batch ends, and prints the peak. Bounded: loopback only, one daemon,
// one batch with a 60 s timeout.
//
//   node bench/grep_threads.mjs [toolexecd]
// Needs tests/e2e's npm packages (see bench/toolexecd.mjs).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import {
  DEFAULT_TOOLEXECD, grpc, procStatus, sleep, startToolexecd, toolexecV1,
} from './toolexecd.mjs';

const TOOLEXECD = process.argv[2] || DEFAULT_TOOLEXECD;
const CALLS = Number(process.env.CALLS || 256);
const FILES = Number(process.env.FILES || 2000);

const ws = fs.mkdtempSync(path.join(os.tmpdir(), 'grep-threads-'));
for (let d = 0; d < FILES / 50; ++d) {
  fs.mkdirSync(path.join(ws, `d${d}`));
  for (let f = 0; f < 50; ++f) {
    fs.writeFileSync(path.join(ws, `d${d}`, `f${f}.txt`), `file ${d}/${f}\n`.repeat(200));
  }
}
const { daemon, address } = await startToolexecd(TOOLEXECD, ws);
try {
  const proto = toolexecV1();
  const client = new proto.ToolExecutor(address, grpc.credentials.createInsecure());
  const idle = procStatus(daemon.pid, 'Threads');
  const calls = [];
  for (let i = 0; i < CALLS; ++i) {
    calls.push({ id: String(i), name: 'grep_search', args_json: '{"pattern":"zzq[0-9]+y"}' });
  }
  let peak = 0, results = 0, failed = 0, done = false;
  const stream = client.ExecuteBatch({ calls, timeout: { seconds: 60 } });
  stream.on('data', (r) => { if (r.result) { ++results; if (r.result.error_message) ++failed; } });
  stream.on('end', () => { done = true; });
  stream.on('error', (e) => { console.error(e.message); done = true; });
  const start = Date.now();
  while (!done) {
    peak = Math.max(peak, procStatus(daemon.pid, 'Threads'));
    await sleep(5);
  }
  console.log(`calls=${CALLS} files=${FILES} results=${results} failed=${failed} ` +
              `threads_idle=${idle} threads_peak=${peak} ms=${Date.now() - start}`);
  client.close();
} finally {
  daemon.kill('SIGKILL');
  fs.rmSync(ws, { recursive: true, force: true });
}
