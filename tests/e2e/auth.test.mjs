// End-to-end test of who may call: the real toolexecd driven from Node.js by
// @grpc/grpc-js, the services discovered by server reflection only, as in
// e2e.test.mjs.
//
// Run: TOOLEXECD=build/toolexecd node --test tests/e2e/auth.test.mjs
// (ctest's e2e_auth sets TOOLEXECD; scripts/test.sh installs node_modules.)
//
// The matrix, each against a real daemon:
//   - bearer tokens (--token_file): no credentials, a wrong token, a
//     malformed authorization header -> UNAUTHENTICATED with nothing about
//     which tokens exist; the right token -> ListTools, a batch and a session;
//     a token removed from the file and SIGHUP -> UNAUTHENTICATED while the
//     token still listed keeps working;
//   - TLS (--tls_cert_file/--tls_key_file) with a token: a plaintext client
//     cannot connect, a TLS client with the token can;
//   - mutual TLS (--tls_client_ca_file): no client certificate, or one another
//     CA signed -> refused; the CA's client certificate -> served;
//   - a unix socket (--unix_socket_allowed_uids, --unix_socket_mode): this
//     process's uid on the list -> served; not on it -> PERMISSION_DENIED
//     (root is not exempt);
//   - health and reflection answer without credentials throughout.
// Certificates are made by openssl at test time.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import {
  grpc,
  missing,
  reflect,
  serviceClient,
  sleep,
  startDaemon,
  stopDaemon,
  StructCodec,
} from './helpers.mjs';

const GATEWAY_TOKEN = 'gw-5d0c8e2b9a7f4136';
const OLD_TOKEN = 'old-0e4a9c1f7b2d8365';
const OK = grpc?.status.OK;
const UNAUTHENTICATED = grpc?.status.UNAUTHENTICATED;
const UNAVAILABLE = grpc?.status.UNAVAILABLE;

// ---------------------------------------------------------------------------
// Calls. Every one resolves with {code, details, response}; none rejects, so
// each case states the status it expects.

function bearer(token) {
  const md = new grpc.Metadata();
  if (token !== undefined) md.set('authorization', token === null ? 'Bearer' : `Bearer ${token}`);
  return md;
}

function unary(client, method, request, metadata = new grpc.Metadata()) {
  return new Promise((resolve) => {
    client[method](request, metadata, { deadline: Date.now() + 10_000 }, (err, response) => {
      resolve(err ? { code: err.code, details: err.details } : { code: OK, response });
    });
  });
}

// One get_weather call as a batch: the status, and the result if it succeeded.
function getWeather(env, metadata, city = 'Paris') {
  const request = {
    calls: [{ id: 'w1', name: 'get_weather', args: env.codec.toStruct({ city }) }],
  };
  return new Promise((resolve) => {
    const results = [];
    let error = null;
    const stream = env.client.ExecuteBatch(request, metadata, { deadline: Date.now() + 10_000 });
    stream.on('data', (msg) => {
      if (msg.event === 'result') results.push(msg.result);
    });
    stream.on('error', (err) => {
      error = err;
    });
    stream.on('status', () => {
      resolve(error ? { code: error.code, details: error.details } : { code: OK, results });
    });
  });
}

// The ToolExecutor and Health clients of `d`, found by reflection (which needs
// no token), and a StructCodec.
async function connect(d) {
  const { root, loaded } = await reflect(d, 'toolexec.v1.ToolExecutor');
  const health = await reflect(d, 'grpc.health.v1.Health');
  const structFields = root.lookupType('google.protobuf.Struct').fields.fields;
  return {
    client: serviceClient(d, loaded.toolexec.v1.ToolExecutor),
    ToolExecutor: loaded.toolexec.v1.ToolExecutor,
    health: serviceClient(d, health.loaded.grpc.health.v1.Health),
    codec: new StructCodec(Boolean(structFields.map)),
  };
}

async function assertServing(env) {
  const h = await unary(env.health, 'Check', { service: '' });
  assert.equal(h.code, OK, `health: ${h.details}`);
  assert.equal(h.response.status, 'SERVING');
}

function assertUnauthenticated(outcome, what) {
  assert.equal(outcome.code, UNAUTHENTICATED, `${what}: ${JSON.stringify(outcome)}`);
  for (const token of [GATEWAY_TOKEN, OLD_TOKEN]) {
    assert.ok(!String(outcome.details).includes(token), `${what} names a token`);
  }
}

async function assertAuthorized(env, metadata, what) {
  const listed = await unary(env.client, 'ListTools', {}, metadata);
  assert.equal(listed.code, OK, `${what}: ListTools: ${listed.details}`);
  assert.ok(listed.response.tools.some((t) => t.name === 'get_weather'));
  const batch = await getWeather(env, metadata);
  assert.equal(batch.code, OK, `${what}: ExecuteBatch: ${batch.details}`);
  assert.equal(batch.results.length, 1);
  assert.equal(batch.results[0].status, 'RESULT_STATUS_SUCCESS', batch.results[0].error_message);
  assert.equal(env.codec.fromValue(batch.results[0].payload).city, 'Paris');
}

// Polls until `predicate()` resolves true, up to timeoutMs.
async function eventually(predicate, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() >= deadline) assert.fail(`not within ${timeoutMs} ms: ${what}`);
    await sleep(20);
  }
}

function tempDir(prefix) {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

// ---------------------------------------------------------------------------
// Bearer tokens.

describe('bearer tokens', { skip: Boolean(missing) }, () => {
  let d, env, dir, tokens;

  before(async () => {
    dir = tempDir('toolexec-e2e-auth-');
    tokens = path.join(dir, 'tokens');
    fs.writeFileSync(tokens, `# TOKEN [NAME [PROFILE]]\n${GATEWAY_TOKEN} gateway\n${OLD_TOKEN} old\n`);
    d = await startDaemon({ args: ['--example_tools', `--token_file=${tokens}`] });
    env = await connect(d);
  });
  after(async () => {
    await stopDaemon(d);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('health and reflection answer without credentials', async () => {
    await assertServing(env);
  });

  test('no credentials, a wrong token or a malformed header: UNAUTHENTICATED', async () => {
    const cases = {
      'no authorization': bearer(undefined),
      'a wrong token': bearer('not-a-listed-token'),
      'a listed token plus one character': bearer(`${GATEWAY_TOKEN}x`),
      'an empty bearer': bearer(null),
    };
    const basic = new grpc.Metadata();
    basic.set('authorization', `Basic ${Buffer.from(`u:${GATEWAY_TOKEN}`).toString('base64')}`);
    cases['another scheme'] = basic;
    for (const [what, md] of Object.entries(cases)) {
      assertUnauthenticated(await unary(env.client, 'ListTools', {}, md), `${what}: ListTools`);
      assertUnauthenticated(await getWeather(env, md), `${what}: ExecuteBatch`);
      assertUnauthenticated(await unary(env.client, 'OpenSession', {}, md), `${what}: OpenSession`);
    }
    await assertServing(env);
  });

  test('the right token calls tools and owns its session', async () => {
    await assertAuthorized(env, bearer(GATEWAY_TOKEN), 'gateway token');
    const opened = await unary(env.client, 'OpenSession', { conversation_id: 'c' },
                               bearer(GATEWAY_TOKEN));
    assert.equal(opened.code, OK, opened.details);
    const state = await unary(env.client, 'GetState', { session_id: opened.response.session_id },
                              bearer(GATEWAY_TOKEN));
    assert.equal(state.code, OK, state.details);
    const closed = await unary(env.client, 'CloseSession',
                               { session_id: opened.response.session_id }, bearer(GATEWAY_TOKEN));
    assert.equal(closed.code, OK, closed.details);
  });

  test('a token removed from the file is refused after SIGHUP; the others still work', async () => {
    await assertAuthorized(env, bearer(OLD_TOKEN), 'old token before the reload');
    fs.writeFileSync(tokens, `${GATEWAY_TOKEN} gateway\n`);
    d.proc.kill('SIGHUP');
    await eventually(async () => (await unary(env.client, 'ListTools', {}, bearer(OLD_TOKEN))).code
                                   === UNAUTHENTICATED,
                     10_000, `the revoked token is refused; log:\n${d.log}`);
    assertUnauthenticated(await getWeather(env, bearer(OLD_TOKEN)), 'revoked token: ExecuteBatch');
    await assertAuthorized(env, bearer(GATEWAY_TOKEN), 'gateway token after the reload');
    assert.equal(d.exit, null, 'SIGHUP reloads; it does not stop the daemon');
    await assertServing(env);
  });
});

// ---------------------------------------------------------------------------
// TLS and mutual TLS.

// A CA; a server certificate (127.0.0.1, localhost) and a client certificate
// it signed; a client certificate signed by another CA. PEM text by name.
function makeCertificates(dir) {
  const run = (...args) => execFileSync('openssl', args, { stdio: 'pipe' });
  const file = (name) => path.join(dir, name);
  for (const ca of ['ca', 'other_ca']) {
    run('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1',
        '-subj', `/CN=toolexec e2e ${ca}`, '-keyout', file(`${ca}.key`), '-out', file(`${ca}.pem`));
  }
  for (const [name, ca, san] of [['server', 'ca', 'IP:127.0.0.1,DNS:localhost'],
                                 ['client', 'ca', 'DNS:gateway.test'],
                                 ['stranger', 'other_ca', 'DNS:stranger.test']]) {
    run('req', '-newkey', 'rsa:2048', '-nodes', '-subj', `/CN=${name}`,
        '-keyout', file(`${name}.key`), '-out', file(`${name}.csr`));
    fs.writeFileSync(file(`${name}.ext`), `subjectAltName=${san}\n`);
    run('x509', '-req', '-in', file(`${name}.csr`), '-CA', file(`${ca}.pem`),
        '-CAkey', file(`${ca}.key`), '-CAcreateserial', '-days', '1',
        '-extfile', file(`${name}.ext`), '-out', file(`${name}.pem`));
  }
  const pem = {};
  for (const name of ['ca', 'server', 'client', 'stranger']) {
    pem[name] = fs.readFileSync(file(`${name}.pem`));
    pem[`${name}_key`] = fs.readFileSync(file(`${name}.key`));
  }
  pem.file = file;
  return pem;
}

describe('TLS and mutual TLS', { skip: Boolean(missing) }, () => {
  let dir, pem;

  before(() => {
    dir = tempDir('toolexec-e2e-tls-');
    pem = makeCertificates(dir);
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  // TLS clients call localhost:<port>, a name the server certificate holds
  // (Node's TLS does not take an IP address as the server name).
  function useHostName(d) {
    d.address = d.address.replace(/^127\.0\.0\.1:/, 'localhost:');
  }

  // A ToolExecutor client of `d` with its own channel credentials.
  function clientWith(d, env, credentials) {
    const client = new env.ToolExecutor(d.address, credentials);
    d.clients.push(client);
    return { ...env, client };
  }

  test('TLS with a token: plaintext cannot connect, TLS with the token can', async () => {
    const tokens = path.join(dir, 'tokens');
    fs.writeFileSync(tokens, `${GATEWAY_TOKEN} gateway\n`);
    const d = await startDaemon({
      args: ['--example_tools', `--token_file=${tokens}`,
             `--tls_cert_file=${pem.file('server.pem')}`, `--tls_key_file=${pem.file('server.key')}`],
    });
    try {
      useHostName(d);
      d.credentials = grpc.credentials.createSsl(pem.ca);
      const env = await connect(d);
      await assertServing(env);
      await assertAuthorized(env, bearer(GATEWAY_TOKEN), 'TLS + token');
      assertUnauthenticated(await unary(env.client, 'ListTools', {}), 'TLS without a token');
      const plain = clientWith(d, env, grpc.credentials.createInsecure());
      const outcome = await unary(plain.client, 'ListTools', {}, bearer(GATEWAY_TOKEN));
      assert.equal(outcome.code, UNAVAILABLE, `plaintext to a TLS port: ${JSON.stringify(outcome)}`);
    } finally {
      await stopDaemon(d);
    }
  });

  test('mutual TLS: no client certificate or a stranger\'s is refused, the CA\'s is served',
       async () => {
    const d = await startDaemon({
      args: ['--example_tools',
             `--tls_cert_file=${pem.file('server.pem')}`, `--tls_key_file=${pem.file('server.key')}`,
             `--tls_client_ca_file=${pem.file('ca.pem')}`],
    });
    try {
      useHostName(d);
      d.credentials = grpc.credentials.createSsl(pem.ca, pem.client_key, pem.client);
      const env = await connect(d);
      await assertServing(env);
      await assertAuthorized(env, new grpc.Metadata(), 'client certificate');
      for (const [what, creds] of [
        ['no client certificate', grpc.credentials.createSsl(pem.ca)],
        ['a certificate from another CA',
         grpc.credentials.createSsl(pem.ca, pem.stranger_key, pem.stranger)],
      ]) {
        const other = clientWith(d, env, creds);
        const outcome = await unary(other.client, 'ListTools', {});
        assert.notEqual(outcome.code, OK, `${what} was served`);
        assert.ok([UNAVAILABLE, UNAUTHENTICATED].includes(outcome.code),
                  `${what}: ${JSON.stringify(outcome)}`);
      }
    } finally {
      await stopDaemon(d);
    }
  });
});

// ---------------------------------------------------------------------------
// Unix socket: the peer's uid (SO_PEERCRED) against --unix_socket_allowed_uids.

describe('unix socket peer uid', { skip: Boolean(missing) }, () => {
  let dir;

  before(() => {
    dir = tempDir('toolexec-e2e-unix-');
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  async function startOnSocket(name, allowedUid) {
    return startDaemon({
      args: ['--example_tools', `--listen=unix:${path.join(dir, name)}`,
             '--unix_socket_mode=0600', `--unix_socket_allowed_uids=${allowedUid}`],
    });
  }

  test('a uid on the allowed list is served', async () => {
    const d = await startOnSocket('allowed.sock', process.getuid());
    try {
      assert.match(d.address, /^unix:/);
      assert.equal(fs.statSync(d.address.slice('unix:'.length)).mode & 0o777, 0o600);
      const env = await connect(d);
      await assertServing(env);
      await assertAuthorized(env, new grpc.Metadata(), 'allowed uid');
    } finally {
      await stopDaemon(d);
    }
  });

  test('a uid not on the list is refused (root too); health still answers', async () => {
    const d = await startOnSocket('refused.sock', process.getuid() + 1);
    try {
      const env = await connect(d);
      await assertServing(env);
      const listed = await unary(env.client, 'ListTools', {});
      assert.equal(listed.code, grpc.status.PERMISSION_DENIED, JSON.stringify(listed));
      assert.match(listed.details, new RegExp(`uid ${process.getuid()}\\b`));
      assert.equal((await getWeather(env, new grpc.Metadata())).code, grpc.status.PERMISSION_DENIED);
    } finally {
      await stopDaemon(d);
    }
  });
});
