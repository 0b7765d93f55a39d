// Drive packhost with the official TypeScript MCP SDK
// (@modelcontextprotocol/sdk, pinned in `dev`) and report what the SDK made
// of each result. Same spec and output lines as client.py beside it:
//
//   node client.mjs SPEC.json     (PACKHOST_TEST_MCP_SDK: the SDK's package dir)
//
// The SDK validates structuredContent against the tool's outputSchema
// whenever it is present, on error results too.

import { openSync, readFileSync } from 'node:fs';

import { load } from './sdk.mjs';

const { Client } = await load('client/index.js');
const { StdioClientTransport } = await load('client/stdio.js');
const { StreamableHTTPClientTransport } = await load('client/streamableHttp.js');

/** Replace "{{id.field...}}" strings with fields of earlier results. */
function resolve(value, results) {
  if (typeof value === 'string' && value.startsWith('{{') && value.endsWith('}}')) {
    const path = value.slice(2, -2).split('.');
    return path.reduce((found, key) => {
      if (found?.[key] === undefined) throw new Error(`no ${value}`);
      return found[key];
    }, results);
  }
  if (Array.isArray(value)) return value.map((v) => resolve(v, results));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolve(v, results)]));
  }
  return value;
}

/** Long strings (base64 images) cut to keep the lines readable. */
function shorten(value) {
  if (typeof value === 'string' && value.length > 4000) {
    return `${value.slice(0, 200)}... (${value.length} chars)`;
  }
  if (Array.isArray(value)) return value.map(shorten);
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, shorten(v)]));
  }
  return value;
}

const emit = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);

const spec = JSON.parse(readFileSync(process.argv[2], 'utf8'));
let transport;
if (spec.transport.stdio) {
  const { command, args, cwd, env, stderr } = spec.transport.stdio;
  transport = new StdioClientTransport({ command, args, cwd, env, stderr: openSync(stderr, 'w') });
} else {
  const { url, token } = spec.transport.http;
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
}
const client = new Client({ name: 'packhost-e2e', version: '0' });
await client.connect(transport);
const { tools } = await client.listTools();
emit({ tools: tools.map((t) => ({ name: t.name, hasOutputSchema: t.outputSchema !== undefined })) });
const results = {};
for (const call of spec.calls) {
  const line = { id: call.id, tool: call.tool };
  let args;
  try {
    args = resolve(call.arguments ?? {}, results);
  } catch (e) {
    line.skipped = `an earlier result it needs is missing: ${e}`;
    emit(line);
    continue;
  }
  let result;
  try {
    result = await client.callTool({ name: call.tool, arguments: args }, undefined, {
      timeout: 600000,
    });
  } catch (e) {
    line.exception = `${e?.name ?? 'Error'}: ${e?.message ?? e}`;
    emit(line);
    continue;
  }
  results[call.id] = result.structuredContent;
  const text = result.content.find((c) => c.type === 'text');
  Object.assign(line, {
    isError: result.isError === true,
    structuredContent: shorten(result.structuredContent ?? null),
    contentTypes: result.content.map((c) => c.type),
    text: text ? text.text : null,
  });
  emit(line);
}
await client.close();
