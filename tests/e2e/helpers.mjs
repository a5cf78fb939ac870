// What the e2e tests share: the prerequisites check, starting and stopping the
// real toolexecd, and a client that discovers services by server reflection
// only (grpc-reflection-js), like grpcurl, with google.protobuf.Struct / Value
// converted to and from plain JSON.

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));

// ---------------------------------------------------------------------------
// Prerequisites: the npm packages and the daemon binary. Missing either is a
// clear failure, never a silent skip: `missing` says what to do, and a test
// file that imports this module gets a failing 'e2e prerequisites' test.

export let grpc, protoLoader, grpcReflection;
export let missing = null;
try {
  grpc = (await import('@grpc/grpc-js')).default;
  protoLoader = (await import('@grpc/proto-loader')).default;
  grpcReflection = (await import('grpc-reflection-js')).default;
} catch (err) {
  missing =
    `the e2e test's npm packages are not installed (${err.message}).\n` +
    `Run scripts/test.sh (it runs \`npm install\` in tests/e2e), or ` +
    `\`cd tests/e2e && npm install\` by hand.`;
}

export const TOOLEXECD = process.env.TOOLEXECD || path.resolve(HERE, '../../build/toolexecd');
if (!missing && !fs.existsSync(TOOLEXECD)) {
  missing =
    `toolexecd not found at ${TOOLEXECD}: build it (scripts/build.sh toolexecd) ` +
    `and/or set TOOLEXECD to its path.`;
}

if (missing) {
  test('e2e prerequisites', () => {
    assert.fail(missing);
  });
}

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// ---------------------------------------------------------------------------
// Daemon processes.

const ADDRESS_TIMEOUT_MS = 10_000;
const daemons = new Set();

// Starts toolexecd on 127.0.0.1:0 with `args` and resolves once it has written
// its address file (polled; no fixed sleep). Without `workspace`, it gets a
// fresh temporary one that stopDaemon removes.
export async function startDaemon({ args = [], workspace, addressFile } = {}) {
  const ownsWorkspace = !workspace;
  if (ownsWorkspace) workspace = fs.mkdtempSync(path.join(os.tmpdir(), 'toolexec-e2e-'));
  addressFile ??= path.join(workspace, '.address');
  const allArgs = [
    '--listen=127.0.0.1:0',
    `--workspace=${workspace}`,
    `--address_file=${addressFile}`,
    ...args,
  ];
  const proc = spawn(TOOLEXECD, allArgs, { stdio: ['ignore', 'pipe', 'pipe'] });
  const d = {
    proc,
    workspace,
    ownsWorkspace,
    addressFile,
    address: null,
    log: '',
    exit: null, // {code, signal} once exited
    clients: [],
  };
  d.exited = new Promise((resolve) => {
    proc.on('exit', (code, signal) => {
      d.exit = { code, signal };
      resolve(d.exit);
    });
  });
  proc.on('error', (err) => {
    d.log += `\n[spawn error] ${err.message}\n`;
  });
  proc.stdout.setEncoding('utf8');
  proc.stderr.setEncoding('utf8');
  proc.stdout.on('data', (s) => (d.log += s));
  proc.stderr.on('data', (s) => (d.log += s));
  daemons.add(d);

  const deadline = Date.now() + ADDRESS_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (d.exit) {
      throw new Error(
        `toolexecd ${allArgs.join(' ')} exited early (${JSON.stringify(d.exit)}):\n${d.log}`);
    }
    try {
      const text = fs.readFileSync(addressFile, 'utf8').trim();
      if (text) {
        d.address = text;
        return d;
      }
    } catch (err) {
      if (err.code !== 'ENOENT') throw err;
    }
    await sleep(10);
  }
  await stopDaemon(d);
  throw new Error(`toolexecd wrote no address file within ${ADDRESS_TIMEOUT_MS} ms:\n${d.log}`);
}

// Closes the daemon's clients, kills it if still running, and removes the
// workspace startDaemon made for it.
export async function stopDaemon(d) {
  if (!d || !daemons.has(d)) return;
  daemons.delete(d);
  for (const c of d.clients) {
    try {
      c.close();
    } catch {}
  }
  if (!d.exit) {
    d.proc.kill('SIGKILL');
    await d.exited;
  }
  if (d.ownsWorkspace) fs.rmSync(d.workspace, { recursive: true, force: true });
}

// Safety net: whatever a describe() forgot, kill it when the file is done.
after(async () => {
  for (const d of [...daemons]) await stopDaemon(d);
});

// ---------------------------------------------------------------------------
// Reflection: discover services like grpcurl does.

export const LOADER_OPTIONS = {
  keepCase: true, // field names as in the proto (snake_case)
  longs: Number,
  enums: String, // enum values by name, e.g. "RESULT_STATUS_SUCCESS"
  defaults: true, // unset scalars as their defaults, unset messages as null
  oneofs: true, // Value.kind names the member that is set
};

// The channel credentials for `d`: d.credentials if the test set them (TLS),
// else plaintext.
function channelCredentials(d) {
  return d.credentials ?? grpc.credentials.createInsecure();
}

// Fetches the file that defines `symbol` from the daemon's reflection service
// and loads it for grpc-js: {reflection, root, loaded}. The reflection client
// is closed with the daemon.
export async function reflect(d, symbol) {
  const reflection = new grpcReflection.Client(d.address, channelCredentials(d));
  d.clients.push(reflection.grpcClient);
  const root = await reflection.fileContainingSymbol(symbol);
  const loaded = grpc.loadPackageDefinition(protoLoader.fromJSON(root.toJSON(), LOADER_OPTIONS));
  return { reflection, root, loaded };
}

// A client of `Service` (from reflect's `loaded`), closed with the daemon.
export function serviceClient(d, Service) {
  const client = new Service(d.address, channelCredentials(d));
  d.clients.push(client);
  return client;
}

// The ToolExecutor client, the services reflection lists, and a StructCodec.
export async function connect(d) {
  const { reflection, root, loaded } = await reflect(d, 'toolexec.v1.ToolExecutor');
  const services = await reflection.listServices();
  const client = serviceClient(d, loaded.toolexec.v1.ToolExecutor);
  // protobufjs's descriptor import may see map<string, Value> (Struct.fields) as
  // the wire-identical `repeated FieldsEntry {key, value}`; build Structs in
  // whichever form the reflected type uses.
  const structFields = root.lookupType('google.protobuf.Struct').fields.fields;
  const codec = new StructCodec(Boolean(structFields.map));
  return { services, root, client, codec };
}

// Converts between plain JSON and google.protobuf.Struct / Value as grpc-js
// (via proto-loader, LOADER_OPTIONS) represents them.
export class StructCodec {
  constructor(fieldsIsMap) {
    this.fieldsIsMap = fieldsIsMap;
  }

  // Struct -> plain object. Accepts both the map and the repeated-entry form.
  fromStruct(s) {
    if (s == null) return null;
    const out = {};
    const fields = s.fields ?? {};
    if (Array.isArray(fields)) {
      for (const { key, value } of fields) out[key] = this.fromValue(value);
    } else {
      for (const [key, value] of Object.entries(fields)) out[key] = this.fromValue(value);
    }
    return out;
  }

  // Value -> plain JSON value.
  fromValue(v) {
    if (v == null) return undefined;
    switch (v.kind) {
      case 'null_value':
        return null;
      case 'number_value':
        return v.number_value;
      case 'string_value':
        return v.string_value;
      case 'bool_value':
        return v.bool_value;
      case 'struct_value':
        return this.fromStruct(v.struct_value);
      case 'list_value':
        return (v.list_value?.values ?? []).map((x) => this.fromValue(x));
      default:
        throw new Error(`google.protobuf.Value with no kind: ${JSON.stringify(v)}`);
    }
  }

  // Plain object -> Struct.
  toStruct(obj) {
    const entries = Object.entries(obj).map(([key, value]) => [key, this.toValue(value)]);
    if (this.fieldsIsMap) return { fields: Object.fromEntries(entries) };
    return { fields: entries.map(([key, value]) => ({ key, value })) };
  }

  // Plain JSON value -> Value.
  toValue(x) {
    if (x === null) return { null_value: 'NULL_VALUE' };
    if (typeof x === 'number') return { number_value: x };
    if (typeof x === 'string') return { string_value: x };
    if (typeof x === 'boolean') return { bool_value: x };
    if (Array.isArray(x)) return { list_value: { values: x.map((e) => this.toValue(e)) } };
    if (typeof x === 'object') return { struct_value: this.toStruct(x) };
    throw new Error(`not JSON: ${x}`);
  }
}
