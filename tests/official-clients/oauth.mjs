// Sign in to packhost the way an MCP client does, with the official
// TypeScript SDK's OAuth flow (@modelcontextprotocol/sdk, pinned in `dev`):
// its transport meets packhost's 401, its `auth` helpers read the protected
// resource metadata, discover the authorization server from it and get a
// token there for packhost's resource; then one `run` call.
//
//   node oauth.mjs SPEC.json     (PACKHOST_TEST_MCP_SDK: the SDK's package dir)
//
// SPEC: {"url", "issuer", "client_id", "client_secret", "scope", "command"}
// Prints JSON lines: {"discovered": ...} (what the SDK discovered), then
// {"claims": ...} (the token's payload, not its signature), then
// {"result": ...} (of `run`).
//
// The client uses the client_credentials grant (the SDK's
// ClientCredentialsProvider, an OAuthClientProvider): the same discovery
// and resource indicator as the authorization code flow, without a browser
// to drive through a login page.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const sdk = process.env.PACKHOST_TEST_MCP_SDK;
if (!sdk) {
  console.error('PACKHOST_TEST_MCP_SDK is not set: `./dev test` installs the SDK and sets it');
  process.exit(2);
}
const load = (path) => import(pathToFileURL(join(sdk, 'dist/esm', path)).href);
const { Client } = await load('client/index.js');
const { StreamableHTTPClientTransport } = await load('client/streamableHttp.js');
const { ClientCredentialsProvider } = await load('client/auth-extensions.js');

const emit = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);
const spec = JSON.parse(readFileSync(process.argv[2], 'utf8'));

/** The SDK's provider, keeping what discovery found so the test can see it. */
class Recording extends ClientCredentialsProvider {
  saveDiscoveryState(state) {
    this.discovered = state;
  }
  discoveryState() {
    return this.discovered;
  }
}

const provider = new Recording({
  clientId: spec.client_id,
  clientSecret: spec.client_secret,
  expectedIssuer: spec.issuer,
  scope: spec.scope,
});
const transport = new StreamableHTTPClientTransport(new URL(spec.url), { authProvider: provider });
const client = new Client({ name: 'packhost-e2e-oauth', version: '0' });
await client.connect(transport);
const { authorizationServerUrl, resourceMetadata, authorizationServerMetadata } = provider.discovered;
emit({
  discovered: {
    authorizationServerUrl,
    resourceMetadata,
    issuer: authorizationServerMetadata?.issuer,
    tokenEndpoint: authorizationServerMetadata?.token_endpoint,
  },
});
const [, payload] = provider.tokens().access_token.split('.');
emit({ claims: JSON.parse(Buffer.from(payload, 'base64url').toString()) });
const result = await client.callTool({ name: 'run', arguments: { command: spec.command } });
emit({ result });
await client.close();
