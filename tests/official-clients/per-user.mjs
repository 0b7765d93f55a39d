// A user of an integration that acts per user, with the official TypeScript
// SDK client (@modelcontextprotocol/sdk, pinned in `dev`): it declares URL
// elicitation, and when packhost sends it to sign in, it plays the user's
// browser through the provider's pages and back to packhost's callback,
// then accepts; its call then completes as that user.
//
//   node per-user.mjs SPEC.json   (PACKHOST_TEST_MCP_SDK: the SDK's package dir)
//
// SPEC: {"url", "token", "integration", "login", "callback"}
// Prints JSON lines: {"asked": the elicitation's params}, {"page": the
// callback's status}, {"result": ...} of `remote_mcp.execute_tool`
// (`whoami`), which the SDK checked against the tool's output schema, and
// {"completed": elicitationId} once packhost said the sign-in is done
// (`notifications/elicitation/complete`, on the session's GET stream;
// waited for 5 s at most).

import { readFileSync } from 'node:fs';

import { browse } from '../oauth/browser.mjs';
import { load } from './sdk.mjs';

const { Client } = await load('client/index.js');
const { StreamableHTTPClientTransport } = await load('client/streamableHttp.js');
const { ElicitRequestSchema, ElicitationCompleteNotificationSchema } = await load('types.js');

const emit = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);
const spec = JSON.parse(readFileSync(process.argv[2], 'utf8'));

const client = new Client(
  { name: 'packhost-e2e-per-user', version: '0' },
  { capabilities: { elicitation: { url: {} } } },
);
const completed = new Promise((done) => {
  client.setNotificationHandler(ElicitationCompleteNotificationSchema, ({ params }) => done(params.elicitationId));
});
client.setRequestHandler(ElicitRequestSchema, async ({ params }) => {
  emit({ asked: params });
  if (params.mode !== 'url') return { action: 'decline' };
  const back = await browse(params.url, spec.login, spec.callback);
  emit({ page: (await fetch(back)).status });
  return { action: 'accept' };
});
const transport = new StreamableHTTPClientTransport(new URL(spec.url), {
  requestInit: { headers: { Authorization: `Bearer ${spec.token}` } },
});
await client.connect(transport);
const result = await client.callTool({
  name: 'remote_mcp.execute_tool',
  arguments: { integrationId: spec.integration, toolName: 'whoami' },
});
emit({ result });
const waited = new Promise((done) => { setTimeout(() => done(null), 5000); });
emit({ completed: await Promise.race([completed, waited]) });
await client.close();
