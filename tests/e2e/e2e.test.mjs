// End-to-end test: the real toolexecd binary driven from Node.js by @grpc/grpc-js.
//
// The client is given no .proto file: like grpcurl, it discovers
// toolexec.v1.ToolExecutor through server reflection (grpc-reflection-js), turns
// the reflected protobufjs Root into a grpc-js package definition
// (@grpc/proto-loader's fromJSON) and calls it. Arguments, schemas, payloads and
// state travel as google.protobuf.Struct / Value and are compared as plain JSON.
//
// Run: TOOLEXECD=build/toolexecd node --test tests/e2e/e2e.test.mjs
// (ctest sets TOOLEXECD; scripts/test.sh installs node_modules first.)
//
// Each daemon listens on 127.0.0.1:0 in a fresh temporary workspace, reports its
// address through --address_file, and is killed in an after() hook whatever
// happens. Behaviours: [Names and order] (order), [Batches] (batches), [Failures are results] (failures on the wire),
// [Arguments] (argument validation), [Context] (context), [Deciding what runs] (asking), [Display] (display), plus
// the RPC status codes of API.md and the SIGTERM drain.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import {
  connect,
  missing,
  reflect,
  serviceClient,
  sleep,
  startDaemon as startAnyDaemon,
  stopDaemon,
} from './helpers.mjs';

// A daemon with the example tools, in a fresh temporary workspace.
function startDaemon(extraArgs = []) {
  return startAnyDaemon({ args: ['--example_tools', ...extraArgs] });
}

// Resolves when `pattern` appears in the daemon's log (polled up to timeoutMs).
async function waitForLog(d, pattern, timeoutMs = 5000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const m = d.log.match(pattern);
    if (m) return m;
    if (Date.now() >= deadline) {
      assert.fail(`daemon log never matched ${pattern}; log:\n${d.log}`);
    }
    await sleep(10);
  }
}

// ---------------------------------------------------------------------------
// RPC helpers.

function unary(client, method, request) {
  return new Promise((resolve, reject) => {
    client[method](request, { deadline: Date.now() + 10_000 }, (err, response) => {
      if (err) reject(err);
      else resolve(response);
    });
  });
}

async function unaryError(client, method, request) {
  try {
    const response = await unary(client, method, request);
    assert.fail(`${method} succeeded, expected a failure: ${JSON.stringify(response)}`);
  } catch (err) {
    if (err instanceof assert.AssertionError) throw err;
    return err;
  }
}

// A ToolCall from plain JSON args (or args_json text).
function call(codec, { id, name, args, args_json, step_id }) {
  const c = { id, name };
  if (args !== undefined) c.args = codec.toStruct(args);
  if (args_json !== undefined) c.args_json = args_json;
  if (step_id !== undefined) c.step_id = step_id;
  return c;
}

// Runs one ExecuteBatch. Resolves with every event in arrival order, each with
// its arrival time (ms since the call started), the ToolResults decoded to
// plain JSON, and the final status: {events, results, error, elapsedMs}.
// `onEvent(event, stream)` may cancel the call.
function executeBatch(env, request, { onEvent, deadlineMs = 15_000 } = {}) {
  const { client, codec } = env;
  return new Promise((resolve) => {
    const start = performance.now();
    const events = [];
    const results = [];
    let error = null;
    const stream = client.ExecuteBatch(request, { deadline: Date.now() + deadlineMs });
    stream.on('data', (msg) => {
      const at = performance.now() - start;
      const event = { at, kind: msg.event, msg };
      events.push(event);
      if (msg.event === 'result') {
        results.push({ at, ...decodeResult(codec, msg.result) });
      }
      onEvent?.(event, stream);
    });
    stream.on('error', (err) => {
      error = err;
    });
    // grpc-js always emits 'status' last, after any 'error'.
    stream.on('status', () => {
      resolve({ events, results, error, elapsedMs: performance.now() - start });
    });
  });
}

function decodeResult(codec, r) {
  return {
    ...r,
    payload: codec.fromValue(r.payload),
    actions: r.actions && {
      ...r.actions,
      state_delta: codec.fromStruct(r.actions.state_delta),
    },
  };
}

function assertNoRpcError(outcome) {
  if (outcome.error) {
    assert.fail(`ExecuteBatch failed: code ${outcome.error.code}: ${outcome.error.details}`);
  }
}

// The fields every successful result carries [Failures are results].
function assertSuccess(r, { index, id, name, payload }) {
  assert.equal(r.index, index, `index of ${id}`);
  assert.equal(r.id, id);
  assert.equal(r.name, name);
  assert.equal(r.status, 'RESULT_STATUS_SUCCESS', `${id}: ${r.error_message}`);
  assert.deepEqual(r.payload, payload, `payload of ${id}`);
  assert.equal(r.error_message, '', `error_message of ${id}`);
  assert.equal(r.exception, null, `exception of ${id}`);
}

// The fields every failed result carries [Failures are results].
function assertFailure(r, { index, id, name, code, step_id = '' }) {
  assert.equal(r.index, index, `index of ${id}`);
  assert.equal(r.id, id);
  assert.equal(r.name, name);
  assert.equal(r.step_id, step_id);
  assert.equal(r.status, 'RESULT_STATUS_ERROR', `status of ${id}`);
  assert.notEqual(r.error_message, '', `error_message of ${id}`);
  assert.deepEqual(r.payload, { error: r.error_message }, `payload of ${id}`);
  assert.ok(r.exception, `exception of ${id} is set`);
  assert.deepEqual(
    { ...r.exception },
    {
      message: r.error_message,
      tool_name: name,
      server_name: '',
      code,
      call_id: id,
      step_id,
    },
    `exception of ${id}`,
  );
}

// The example tools' schemas, exactly as examples/tools/*.cc declare them.
const EXAMPLE_SCHEMAS = {
  get_weather: {
    type: 'object',
    properties: {
      city: { type: 'string', description: 'The city to get the weather for, e.g. "Paris".' },
    },
  },
  counter: { type: 'object', properties: {} },
  check_inventory: {
    type: 'object',
    properties: {
      item: { type: 'string', description: 'The item to look up, e.g. "apples".' },
    },
    required: ['item'],
  },
  calculate_sum: {
    type: 'object',
    properties: {
      numbers: {
        type: 'array',
        items: { type: 'number' },
        description: 'The numbers to add up.',
      },
    },
    required: ['numbers'],
  },
  wait: {
    type: 'object',
    properties: {
      ms: {
        type: 'integer',
        minimum: 0,
        maximum: 3600000,
        description: 'How long to wait, in milliseconds (at most one hour).',
      },
      value: { description: 'Any JSON value, returned unchanged after the wait.' },
    },
    required: ['ms'],
  },
};

const GRPC_CANCELLED = 1;
const GRPC_INVALID_ARGUMENT = 3;
const GRPC_NOT_FOUND = 5;

// ---------------------------------------------------------------------------
// One daemon with default limits: reflection, ListTools, batches, sessions.

describe('toolexecd (defaults)', { skip: Boolean(missing) }, () => {
  let d;
  let env;

  before(async () => {
    d = await startDaemon();
    env = await connect(d);
  });

  after(async () => {
    await stopDaemon(d);
  });

  test('reflection lists the services; ListTools is in registration order [Names and order]', async () => {
    for (const s of ['toolexec.v1.ToolExecutor', 'grpc.health.v1.Health',
      'grpc.reflection.v1alpha.ServerReflection']) {
      assert.ok(env.services.includes(s), `${s} in ${JSON.stringify(env.services)}`);
    }

    const response = await unary(env.client, 'ListTools', {});
    const names = response.tools.map((t) => t.name);
    // The built-ins first, then the example tools (--example_tools).
    assert.deepEqual(names, ['view_file', 'create_file', 'edit_file',
      'str_replace_based_edit_tool', 'apply_patch', 'list_directory',
      'find_file', 'search_directory', 'grep_search', 'run_command', 'command_status',
      'kill_command', 'bash', 'shell', 'finish', 'exit_loop', 'load_artifacts',
      'get_weather', 'counter', 'check_inventory', 'calculate_sum', 'wait']);
    for (const t of response.tools.filter((x) => x.name in EXAMPLE_SCHEMAS)) {
      const schema = env.codec.fromStruct(t.parameters);
      assert.deepEqual(schema, EXAMPLE_SCHEMAS[t.name], `parameters of ${t.name}`);
      assert.notEqual(t.description, '', `description of ${t.name}`);
      assert.equal(t.server_name, '', `server_name of ${t.name}`);
      assert.equal(t.executor, 'EXECUTOR_DAEMON', `executor of ${t.name}`);
      assert.equal(t.needs_context, t.name === 'counter', `needs_context of ${t.name}`);
    }
  });

  // Reflection-only clients (grpcurl) must be able to describe and call health.
  test('grpc.health.v1.Health is described by reflection and SERVING', async () => {
    const { loaded } = await reflect(d, 'grpc.health.v1.Health');
    const health = serviceClient(d, loaded.grpc.health.v1.Health);
    for (const service of ['', 'toolexec.v1.ToolExecutor']) {
      const response = await unary(health, 'Check', { service });
      assert.equal(response.status, 'SERVING', `health of "${service}"`);
    }
  });

  test('ExecuteBatch: concurrent, streamed in call order, failures as results [Batches] [Failures are results]', async () => {
    const { codec } = env;
    const request = {
      calls: [
        call(codec, { id: 'c0', name: 'wait', args: { ms: 300, value: 'slow' }, step_id: 's0' }),
        call(codec, { id: 'c1', name: 'get_weather', args: { city: 'Paris' } }),
        call(codec, { id: 'c2', name: 'calculate_sum', args: { numbers: [1, 2, 3] } }),
        call(codec, { id: 'c3', name: 'nosuch', args: {}, step_id: 's3' }),
        call(codec, { id: 'c4', name: 'get_weather', args_json: '{"city": "Rome"}' }),
      ],
    };
    const outcome = await executeBatch(env, request);
    assertNoRpcError(outcome);
    const r = outcome.results;
    assert.deepEqual(r.map((x) => x.index), [0, 1, 2, 3, 4], 'results in call order');
    assert.equal(
      outcome.events.filter((e) => e.kind !== 'result').length, 0,
      `no other events: ${JSON.stringify(outcome.events.map((e) => e.kind))}`);

    // The first result waits for the 300 ms call; none of the rest comes before it.
    assert.ok(r[0].at >= 295, `first result after ~300 ms, got ${r[0].at.toFixed(1)} ms`);
    for (let i = 1; i < r.length; i++) {
      assert.ok(r[i].at >= r[i - 1].at, `result ${i} not before result ${i - 1}`);
    }
    // Concurrency: the batch takes about as long as its slowest call. Generous.
    assert.ok(outcome.elapsedMs < 2000, `batch took ${outcome.elapsedMs.toFixed(1)} ms`);

    assertSuccess(r[0], { index: 0, id: 'c0', name: 'wait',
      payload: { waited_ms: 300, value: 'slow' } });
    assert.equal(r[0].step_id, 's0', 'step_id copied back');
    assertSuccess(r[1], { index: 1, id: 'c1', name: 'get_weather',
      payload: { temperature: 22, condition: 'sunny', city: 'Paris' } });
    assertSuccess(r[2], { index: 2, id: 'c2', name: 'calculate_sum',
      payload: { result: 'Sum: 6' } });
    assertFailure(r[3], { index: 3, id: 'c3', name: 'nosuch',
      code: 'ERROR_CODE_UNKNOWN_TOOL', step_id: 's3' });
    assertSuccess(r[4], { index: 4, id: 'c4', name: 'get_weather',
      payload: { temperature: 22, condition: 'sunny', city: 'Rome' } });

    // [Display]: every result carries display and compact_summary.
    for (const x of r) {
      assert.ok(x.display, `display of ${x.id}`);
      assert.notEqual(x.compact_summary, '', `compact_summary of ${x.id}`);
    }
    assert.equal(r[1].display.title, 'Weather in Paris');
  });

  test('invalid arguments and a missing session are error results [Arguments] [Context]', async (t) => {
    const { codec } = env;
    const request = {
      calls: [
        call(codec, { id: 'bad-type', name: 'calculate_sum', args: { numbers: 'not a list' } }),
        call(codec, { id: 'bad-json', name: 'get_weather', args_json: '{bad' }),
        call(codec, { id: 'no-session', name: 'counter', args: {} }),
      ],
    };
    const outcome = await executeBatch(env, request);
    assertNoRpcError(outcome);
    const r = outcome.results;
    assert.equal(r.length, 3);

    assertFailure(r[0], { index: 0, id: 'bad-type', name: 'calculate_sum',
      code: 'ERROR_CODE_INVALID_ARGUMENTS' });
    assert.match(r[0].error_message, /numbers/, 'the message names the JSON path');
    assertFailure(r[1], { index: 1, id: 'bad-json', name: 'get_weather',
      code: 'ERROR_CODE_INVALID_ARGUMENTS' });
    assertFailure(r[2], { index: 2, id: 'no-session', name: 'counter',
      code: 'ERROR_CODE_NO_CONTEXT' });
    for (const x of r) t.diagnostic(`${x.id}: ${x.error_message}`);
  });

  // A harness on OpenAI's strict mode: declarations from ListTools{format},
  // then calls as such a model makes them, every optional argument null.
  test('OpenAI strict declarations; null optional arguments are absent [Arguments]', async () => {
    const { codec } = env;
    const listed = await unary(env.client, 'ListTools', { format: 'DECLARATION_FORMAT_OPENAI_STRICT' });
    const tools = JSON.parse(listed.provider_tools_json);
    const byName = Object.fromEntries(tools.map((t) => [t.function.name, t.function]));
    assert.deepEqual(tools.map((t) => t.function.name), listed.tools.map((t) => t.name));
    const view = byName.view_file;
    assert.equal(view.strict, true);
    assert.deepEqual(view.parameters.required, ['file_path', 'start_line', 'end_line']);
    assert.deepEqual(view.parameters.properties.start_line.type, ['integer', 'null']);
    assert.equal(view.parameters.additionalProperties, false);

    const request = {
      calls: [
        call(codec, { id: 'create', name: 'create_file', args_json: JSON.stringify(
          { file_path: 'strict.txt', TargetFile: null, contents: 'one\ntwo\n', overwrite: null }) }),
        call(codec, { id: 'list', name: 'list_directory', args_json: JSON.stringify(
          { directory_path: null, depth: null, include_hidden: null }) }),
        call(codec, { id: 'required-null', name: 'view_file', args_json: JSON.stringify(
          { file_path: null, start_line: null, end_line: null }) }),
        call(codec, { id: 'typo', name: 'veiw_file', args: {} }),
      ],
    };
    const outcome = await executeBatch(env, request);
    assertNoRpcError(outcome);
    const r = outcome.results;
    assert.equal(r[0].status, 'RESULT_STATUS_SUCCESS', r[0].error_message);
    assert.equal(r[1].status, 'RESULT_STATUS_SUCCESS', r[1].error_message);
    assertFailure(r[2], { index: 2, id: 'required-null', name: 'view_file',
      code: 'ERROR_CODE_INVALID_ARGUMENTS' });
    assert.match(r[2].error_message, /args\.file_path: expected type string, got null/);
    assert.match(r[3].error_message, /did you mean view_file\b/);

    const viewed = await executeBatch(env, { calls: [call(codec, { id: 'view', name: 'view_file',
      args_json: JSON.stringify({ file_path: 'strict.txt', start_line: null, end_line: null }) })] });
    assert.equal(viewed.results[0].status, 'RESULT_STATUS_SUCCESS', viewed.results[0].error_message);
    assert.match(JSON.stringify(viewed.results[0].payload), /two/);
  });

  test('sessions: state across batches, GetState, CloseSession, then NOT_FOUND [Context]', async () => {
    const { client, codec } = env;
    const session = await unary(client, 'OpenSession', { conversation_id: 'c1' });
    assert.notEqual(session.session_id, '');
    assert.equal(session.conversation_id, 'c1');
    const session_id = session.session_id;

    for (const n of [1, 2]) {
      const outcome = await executeBatch(env, {
        session_id,
        calls: [call(codec, { id: `count-${n}`, name: 'counter', args: {} })],
      });
      assertNoRpcError(outcome);
      assert.equal(outcome.results.length, 1);
      const r = outcome.results[0];
      assertSuccess(r, { index: 0, id: `count-${n}`, name: 'counter', payload: { count: n } });
      assert.deepEqual(r.actions?.state_delta, { count: n }, `state_delta of call ${n}`);
    }

    const state = await unary(client, 'GetState', { session_id });
    assert.deepEqual(codec.fromStruct(state.state), { count: 2 });

    await unary(client, 'CloseSession', { session_id });

    const outcome = await executeBatch(env, {
      session_id,
      calls: [call(codec, { id: 'after-close', name: 'counter', args: {} })],
    });
    assert.ok(outcome.error, 'ExecuteBatch on a closed session fails the RPC');
    assert.equal(outcome.error.code, GRPC_NOT_FOUND, outcome.error.details);
    assert.equal(outcome.results.length, 0);
  });
});

// ---------------------------------------------------------------------------
// Artifacts [Artifacts] and a delegated child session's merge [Delegation], from a client
// that found both services by reflection only.

describe('toolexecd artifacts and child sessions', { skip: Boolean(missing) }, () => {
  let d;
  let env;
  let artifacts;

  before(async () => {
    d = await startDaemon();
    env = await connect(d);
    const { loaded } = await reflect(d, 'toolexec.v1.ArtifactStore');
    artifacts = serviceClient(d, loaded.toolexec.v1.ArtifactStore);
  });

  after(async () => {
    await stopDaemon(d);
  });

  test('save, list, version, load by a tool in the [Artifacts] shapes', async () => {
    const { client, codec } = env;
    const { session_id } = await unary(client, 'OpenSession', { conversation_id: 'art', user_id: 'u1' });
    const v1 = await unary(artifacts, 'SaveArtifact',
      { session_id, name: 'notes.md', artifact: { text: 'draft', mime_type: 'text/markdown' } });
    const v2 = await unary(artifacts, 'SaveArtifact',
      { session_id, name: 'notes.md', artifact: { text: '# Final', mime_type: 'text/markdown' } });
    assert.deepEqual([v1.version, v2.version], [1, 2]);
    await unary(artifacts, 'SaveArtifact',
      { session_id, name: 'user:logo.bin', artifact: { data: Buffer.from([0, 1, 2, 255]) } });
    const versions = await unary(artifacts, 'ListVersions', { session_id, name: 'notes.md' });
    assert.deepEqual(versions.versions, [2, 1]);
    const names = await unary(artifacts, 'ListArtifacts', { session_id });
    assert.deepEqual(names.names, ['notes.md', 'user:logo.bin']);
    const bad = await unaryError(artifacts, 'SaveArtifact',
      { session_id, name: '../x', artifact: { text: 'x' } });
    assert.equal(bad.code, GRPC_INVALID_ARGUMENT);
    const missing = await unaryError(artifacts, 'LoadArtifact', { session_id, name: 'nope' });
    assert.equal(missing.code, GRPC_NOT_FOUND);

    const outcome = await executeBatch(env, {
      session_id,
      calls: [call(codec, { id: 'la', name: 'load_artifacts',
        args: { artifact_names: ['notes.md', 'user:logo.bin', 'gone.txt'] } })],
    });
    assertNoRpcError(outcome);
    assert.deepEqual(outcome.results[0].payload, { artifacts: [
      { name: 'notes.md', content: '# Final' },
      { name: 'user:logo.bin', content: { mime_type: '', data: 'AAEC/w==', size_bytes: 4 } },
      { name: 'gone.txt', error: 'Artifact not found' },
    ] });
  });

  test('a child session merges authorized writes into its parent', async () => {
    const { client, codec } = env;
    const parent = await unary(client, 'OpenSession', { conversation_id: 'p' });
    const first = await executeBatch(env, { session_id: parent.session_id,
      calls: [call(codec, { id: 'p1', name: 'counter', args: {} })] });
    assertNoRpcError(first);
    const child = await unary(client, 'OpenSession',
      { parent_session_id: parent.session_id, state_keys: ['count'] });
    const inChild = await executeBatch(env, { session_id: child.session_id,
      calls: [call(codec, { id: 'c1', name: 'counter', args: {} })] });
    assertNoRpcError(inChild);
    assert.deepEqual(inChild.results[0].payload, { count: 2 });

    const refused = await unaryError(client, 'CloseSession', { session_id: child.session_id });
    assert.equal(refused.code, 9 /* FAILED_PRECONDITION */);
    assert.match(refused.details, /attempted unauthorized state write to 'count'/);

    const merged = await unary(client, 'CloseSession',
      { session_id: child.session_id, output_state_keys: ['count'] });
    assert.deepEqual(codec.fromStruct(merged.merged.state_delta), { count: 2 });
    const state = await unary(client, 'GetState', { session_id: parent.session_id });
    assert.deepEqual(codec.fromStruct(state.state), { count: 2 });
  });
});

// ---------------------------------------------------------------------------
// A daemon whose policy asks before get_weather [Deciding what runs]: the batch streams a
// PermissionRequest and waits; RespondPermission decides what happens.

describe('toolexecd with a policy that asks', { skip: Boolean(missing) }, () => {
  let d;
  let env;
  let configDir;

  before(async () => {
    configDir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolexec-e2e-policy-'));
    const config = path.join(configDir, 'toolexecd.textproto');
    fs.writeFileSync(config, `policy {
  rules { name: "weather needs a yes" tool: "get_weather" decision: DECISION_ASK }
  ask_timeout_ms: 20000
}
`);
    d = await startDaemon([`--config=${config}`]);
    env = await connect(d);
  });

  after(async () => {
    await stopDaemon(d);
    fs.rmSync(configDir, { recursive: true, force: true });
  });

  // Runs the batch, answering each permission request with `decision`.
  async function answered(request, decision) {
    const responses = [];
    const outcome = await executeBatch(env, request, {
      onEvent: (event) => {
        if (event.kind !== 'permission_request') return;
        const { request_id } = event.msg.permission_request;
        responses.push(unary(env.client, 'RespondPermission', { request_id, decision }));
      },
    });
    await Promise.all(responses);
    assertNoRpcError(outcome);
    return outcome;
  }

  const weather = (codec, id) => call(codec, { id, name: 'get_weather', args: { city: 'Paris' } });
  const sum = (codec, id) => call(codec, { id, name: 'calculate_sum', args: { numbers: [2, 3] } });

  test('ask -> RespondPermission(allow once) -> results; the next batch asks again', async () => {
    const { codec } = env;
    for (const round of [1, 2]) {
      const outcome = await answered({ calls: [weather(codec, `w${round}`), sum(codec, `s${round}`)] },
        'PERMISSION_DECISION_ALLOW_ONCE');
      assert.deepEqual(outcome.events.map((e) => e.kind), ['permission_request', 'result', 'result']);
      const asked = outcome.events[0].msg.permission_request;
      assert.match(asked.request_id, /\S/);
      assert.equal(asked.index, 0);
      assert.equal(asked.tool_name, 'get_weather');
      assert.deepEqual({ ...asked.target }, { kind: 'KIND_TOOL', value: 'get_weather', recursive: false });
      assert.match(asked.reason, /weather needs a yes/);
      assertSuccess(outcome.results[0], { index: 0, id: `w${round}`, name: 'get_weather',
        payload: outcome.results[0].payload });
      assert.equal(outcome.results[0].payload.city, 'Paris');
      assertSuccess(outcome.results[1], { index: 1, id: `s${round}`, name: 'calculate_sum',
        payload: { result: 'Sum: 5' } });
    }
  });

  test('allow for the session: the session is not asked again', async () => {
    const { client, codec } = env;
    const { session_id } = await unary(client, 'OpenSession', { conversation_id: 'asked' });
    const first = await answered({ session_id, calls: [weather(codec, 'a')] },
      'PERMISSION_DECISION_ALLOW_SESSION');
    assert.deepEqual(first.events.map((e) => e.kind), ['permission_request', 'result']);
    const second = await executeBatch(env, { session_id, calls: [weather(codec, 'b')] });
    assertNoRpcError(second);
    assert.deepEqual(second.events.map((e) => e.kind), ['result']);
    assert.equal(second.results[0].status, 'RESULT_STATUS_SUCCESS');
  });

  test('deny: every call of the batch is DENIED, and the request is answered', async () => {
    const { client, codec } = env;
    const outcome = await answered({ calls: [sum(codec, 's'), weather(codec, 'w')] },
      'PERMISSION_DECISION_DENY');
    const requestId = outcome.events[0].msg.permission_request.request_id;
    assert.equal(outcome.results.length, 2);
    for (const r of outcome.results) {
      assert.equal(r.status, 'RESULT_STATUS_DENIED');
      assert.equal(r.error_message, 'Permission denied by user');
      assert.equal(r.exception.code, 'ERROR_CODE_DENIED');
    }
    const again = await unaryError(client, 'RespondPermission',
      { request_id: requestId, decision: 'PERMISSION_DECISION_ALLOW_ONCE' });
    assert.equal(again.code, GRPC_NOT_FOUND);
  });
});

// ---------------------------------------------------------------------------
// A daemon with tight limits: the batch limit and cancellation. With one
// executor slot, a cancelled call that kept running would stall the next batch.

describe('toolexecd --max_calls_per_batch=2 --max_concurrent_calls=1', { skip: Boolean(missing) }, () => {
  let d;
  let env;

  before(async () => {
    d = await startDaemon(['--max_calls_per_batch=2', '--max_concurrent_calls=1']);
    env = await connect(d);
  });

  after(async () => {
    await stopDaemon(d);
  });

  test('a batch over the limit fails the RPC with INVALID_ARGUMENT', async () => {
    const { codec } = env;
    const weather = (id) => call(codec, { id, name: 'get_weather', args: { city: 'Oslo' } });

    const over = await executeBatch(env, { calls: [weather('a'), weather('b'), weather('c')] });
    assert.ok(over.error, 'three calls over a limit of two fail the RPC');
    assert.equal(over.error.code, GRPC_INVALID_ARGUMENT, over.error.details);
    assert.equal(over.results.length, 0);

    const within = await executeBatch(env, { calls: [weather('a'), weather('b')] });
    assertNoRpcError(within);
    assert.deepEqual(within.results.map((r) => r.status),
      ['RESULT_STATUS_SUCCESS', 'RESULT_STATUS_SUCCESS']);
  });

  test('a client cancel stops the running tool; the daemon stays healthy', async () => {
    const { codec, client } = env;
    const start = performance.now();
    const stream = client.ExecuteBatch(
      { calls: [call(codec, { id: 'long', name: 'wait', args: { ms: 10000 } })] },
      { deadline: Date.now() + 15_000 });
    const events = [];
    const status = new Promise((resolve) => {
      let error = null;
      stream.on('data', (m) => events.push(m));
      stream.on('error', (err) => (error = err));
      stream.on('status', () => resolve(error));
    });
    setTimeout(() => stream.cancel(), 200);
    const error = await status;
    assert.ok(error, 'the cancelled call ends with an error');
    assert.equal(error.code, GRPC_CANCELLED);
    assert.equal(events.length, 0, 'no result for the cancelled wait');
    assert.ok(performance.now() - start < 2000, 'cancel is prompt');

    // The daemon logs the batch's end once its tools have stopped.
    const m = await waitForLog(
      d, /ExecuteBatch peer=\S+ calls=1 results=\d+ failed=\d+ status=CANCELLED[^\n]*ms=([\d.]+)/);
    assert.ok(Number(m[1]) < 5000, `the cancelled batch ended after ${m[1]} ms, not 10 s`);

    // Still serving, and the single executor slot is free again.
    const tools = await unary(client, 'ListTools', {});
    assert.ok(tools.tools.some((t) => t.name === 'wait'), 'ListTools still answers');
    const next = await executeBatch(env, {
      calls: [call(codec, { id: 'next', name: 'wait', args: { ms: 0, value: 1 } })],
    });
    assertNoRpcError(next);
    assertSuccess(next.results[0], { index: 0, id: 'next', name: 'wait',
      payload: { waited_ms: 0, value: 1 } });
    assert.ok(next.elapsedMs < 2000, `the next batch took ${next.elapsedMs.toFixed(1)} ms`);
  });
});

// ---------------------------------------------------------------------------
// SIGTERM drains: a batch in flight completes, then the process exits 0.

describe('toolexecd SIGTERM', { skip: Boolean(missing) }, () => {
  let d;
  let env;

  before(async () => {
    d = await startDaemon();
    env = await connect(d);
  });

  after(async () => {
    await stopDaemon(d);
  });

  test('an in-flight batch completes and the daemon exits 0', async () => {
    const { codec } = env;
    // Result 0 arrives at once (the ordered prefix), which proves the batch is
    // running in the daemon; SIGTERM then lands while the wait is in flight.
    let signalled = false;
    const outcome = await executeBatch(env, {
      calls: [
        call(codec, { id: 'quick', name: 'get_weather', args: { city: 'Lima' } }),
        call(codec, { id: 'slow', name: 'wait', args: { ms: 500, value: 'drained' } }),
      ],
    }, {
      onEvent: (event) => {
        if (event.kind === 'result' && event.msg.result.index === 0 && !signalled) {
          signalled = true;
          d.proc.kill('SIGTERM');
        }
      },
    });
    assert.ok(signalled, 'SIGTERM was sent while the batch ran');
    assertNoRpcError(outcome);
    assert.equal(outcome.results.length, 2);
    assertSuccess(outcome.results[0], { index: 0, id: 'quick', name: 'get_weather',
      payload: { temperature: 22, condition: 'sunny', city: 'Lima' } });
    assertSuccess(outcome.results[1], { index: 1, id: 'slow', name: 'wait',
      payload: { waited_ms: 500, value: 'drained' } });

    let timer;
    const exit = await Promise.race([
      d.exited,
      new Promise((resolve) => {
        timer = setTimeout(() => resolve({ timeout: 'no exit within 10 s of SIGTERM' }), 10_000);
      }),
    ]);
    clearTimeout(timer);
    assert.deepEqual(exit, { code: 0, signal: null }, `exit status; log:\n${d.log}`);
  });
});
