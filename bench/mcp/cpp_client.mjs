// What the Node drivers of bench/mcp share: running toolexec's C++ bench
// client (bench_view_file_client) for one round, waiting for a server's
// address file, a nearest-rank percentile, the flags and the scratch file.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// Runs `client` with `args` (its flags, without --calls/--warmup); resolves
// with the timed calls' latencies in µs, rejects if it fails.
export function runClient(client, args, calls, warmup) {
  return new Promise((resolve, reject) => {
    const child = spawn(client, [...args, `--calls=${calls}`, `--warmup=${warmup}`],
                        { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out).latencies_us)
                                           : reject(new Error(`${client} exited ${code}`))));
  });
}

// The address a server wrote to `file`, waiting up to 15 s for it.
export async function readAddress(file) {
  for (let i = 0; i < 300 && !fs.existsSync(file); ++i) await new Promise((r) => setTimeout(r, 50));
  if (!fs.existsSync(file)) throw new Error(`no address in ${file} after 15 s`);
  return fs.readFileSync(file, 'utf8').trim();
}

// Nearest-rank percentile (p in [0, 1]) of `values`.
export function pct(values, p) {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length, Math.max(1, Math.ceil(p * s.length))) - 1];
}

// `--key=value` flags over `defaults` (numbers stay numbers; a bare `--key`
// is true); --quick turns the plan into a smoke run. Exits 2 on an unknown flag.
export function parseOptions(defaults) {
  const opts = { rounds: 5, warmup: 100, quick: false, ...defaults };
  for (const arg of process.argv.slice(2)) {
    const m = arg.match(/^--(\w+)(?:=(.*))?$/);
    if (!m || !(m[1] in opts)) {
      console.error(`unknown argument ${arg}`);
      process.exit(2);
    }
    opts[m[1]] = m[2] === undefined ? true : (typeof opts[m[1]] === 'number' ? Number(m[2]) : m[2]);
  }
  if (opts.quick) Object.assign(opts, { rounds: 2, calls: 50, warmup: 10 });
  return opts;
}

// A scratch directory `dir` with a workspace `ws` holding small.txt, 60 lines;
// `expect` is text of its last line.
export function makeSmallFile(prefix) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  const ws = path.join(dir, 'ws');
  fs.mkdirSync(ws);
  const file = path.join(ws, 'small.txt');
  let text = '';
  for (let i = 1; i <= 60; ++i) text += `line ${i}: the quick brown fox jumps over the lazy dog\n`;
  fs.writeFileSync(file, text);
  return { dir, ws, file, expect: 'line 60: the quick brown fox' };
}
