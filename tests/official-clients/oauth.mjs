// Sign in to packhost the way an MCP client does, with the official
// TypeScript SDK's OAuth flow (@modelcontextprotocol/sdk, pinned in `dev`):
// its transport meets packhost's 401, its `auth` helpers read the protected
// resource metadata, discover the authorization server from it and get a
// token there for packhost's resource; then one `run` call.
//
//   node oauth.mjs SPEC.json     (PACKHOST_TEST_MCP_SDK: the SDK's package dir)
//
// SPEC: {"url", "issuer", "command", "flow", and for the flows:
//   "authorization_code": "login" (the user who signs in; the client
//     registers itself), as a desktop client does: this script plays the
//     browser, signing in and consenting at the provider's pages;
//   "client_credentials": "client_id", "client_secret", "scope" (the SDK's
//     ClientCredentialsProvider), as a script or CI job does}
// Prints JSON lines: {"discovered": ...} (what the SDK discovered), then
// {"claims": ...} (the token's payload, not its signature), then
// {"result": ...} (of `run`).

import { readFileSync } from 'node:fs';

import { browse } from '../oauth/browser.mjs';
import { load } from './sdk.mjs';

const { Client } = await load('client/index.js');
const { StreamableHTTPClientTransport } = await load('client/streamableHttp.js');
const { UnauthorizedError } = await load('client/auth.js');
const { ClientCredentialsProvider } = await load('client/auth-extensions.js');

const emit = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);
const spec = JSON.parse(readFileSync(process.argv[2], 'utf8'));

/** Where the provider sends the browser back with the code; never served. */
const REDIRECT = 'http://127.0.0.1:9/callback';

/** An OAuthClientProvider of a client that registers itself and sends its
 * user to the authorization page: everything kept in memory. */
class Interactive {
  redirectUrl = REDIRECT;
  clientMetadata = {
    client_name: 'packhost-e2e',
    redirect_uris: [REDIRECT],
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
  };
  clientInformation() { return this.client; }
  saveClientInformation(client) { this.client = client; }
  tokens() { return this.saved; }
  saveTokens(tokens) { this.saved = tokens; }
  saveCodeVerifier(verifier) { this.verifier = verifier; }
  codeVerifier() { return this.verifier; }
  redirectToAuthorization(url) { this.authorizationUrl = url; }
  saveDiscoveryState(state) { this.discovered = state; }
  discoveryState() { return this.discovered; }
}

/** The SDK's client_credentials provider, keeping what discovery found. */
class Recording extends ClientCredentialsProvider {
  saveDiscoveryState(state) { this.discovered = state; }
  discoveryState() { return this.discovered; }
}

const provider = spec.flow === 'authorization_code'
  ? new Interactive()
  : new Recording({
    clientId: spec.client_id,
    clientSecret: spec.client_secret,
    expectedIssuer: spec.issuer,
    scope: spec.scope,
  });
const connect = async () => {
  const transport = new StreamableHTTPClientTransport(new URL(spec.url), { authProvider: provider });
  const client = new Client({ name: 'packhost-e2e-oauth', version: '0' });
  await client.connect(transport);
  return { client, transport };
};
let client;
try {
  ({ client } = await connect());
} catch (e) {
  if (!(e instanceof UnauthorizedError) || !provider.authorizationUrl) throw e;
  // The SDK sent the user to the authorization page: sign in there, then
  // hand the code to the transport, which exchanges it, and connect again.
  const transport = new StreamableHTTPClientTransport(new URL(spec.url), { authProvider: provider });
  const back = new URL(await browse(provider.authorizationUrl, spec.login, REDIRECT));
  const code = back.searchParams.get('code');
  if (!code) throw new Error(`no code in ${back}`);
  await transport.finishAuth(code);
  ({ client } = await connect());
}
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
