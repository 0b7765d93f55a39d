// An MCP server that acts as each user, for the per-user integration
// tests: the official TypeScript SDK's server (stateless streamable HTTP)
// behind the SDK's bearer-auth middleware, accepting only JWT access tokens
// of ISSUER (checked against its JWKS with jose) whose audience is this
// server. It publishes its protected resource metadata (RFC 9728) naming
// ISSUER, and has one tool, `whoami`, answering the token's `sub`. Each
// call is recorded as a JSON line on stdout, {"call": "whoami", "sub",
// "token"}, so a test sees who called with what.
//
//   node upstream.mjs ISSUER   (PACKHOST_TEST_MCP_SDK: the SDK's package dir)
// Prints {"url": "http://127.0.0.1:PORT/mcp"} once it listens.

import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

import { load } from '../official-clients/sdk.mjs';

const [issuer] = process.argv.slice(2);
const required = createRequire(join(process.env.PACKHOST_TEST_MCP_SDK, 'package.json'));
const importOf = (name) => import(pathToFileURL(required.resolve(name)).href);
const { default: express } = await importOf('express');
const jose = await importOf('jose');
const { McpServer } = await load('server/mcp.js');
const { StreamableHTTPServerTransport } = await load('server/streamableHttp.js');
const { requireBearerAuth } = await load('server/auth/middleware/bearerAuth.js');
const { InvalidTokenError } = await load('server/auth/errors.js');

const discovery = await (await fetch(`${issuer}/.well-known/openid-configuration`)).json();
const keys = jose.createRemoteJWKSet(new URL(discovery.jwks_uri));

const app = express();
const http = createServer(app);
await new Promise((done) => http.listen(0, '127.0.0.1', done));
const base = `http://127.0.0.1:${http.address().port}`;
const resource = `${base}/mcp`;
const metadataUrl = `${base}/.well-known/oauth-protected-resource/mcp`;

app.get(['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource'], (req, res) => {
  res.json({ resource, authorization_servers: [issuer], scopes_supported: ['tracker'], bearer_methods_supported: ['header'] });
});

const verifier = {
  async verifyAccessToken(token) {
    try {
      const { payload } = await jose.jwtVerify(token, keys, { issuer, audience: resource });
      return {
        token,
        clientId: payload.client_id,
        scopes: (payload.scope ?? '').split(' ').filter(Boolean),
        expiresAt: payload.exp,
        extra: { sub: payload.sub },
      };
    } catch (e) {
      throw new InvalidTokenError(`not a token for ${resource}: ${e.code ?? e.message}`);
    }
  },
};

app.post('/mcp', express.json(), requireBearerAuth({ verifier, resourceMetadataUrl: metadataUrl }), async (req, res) => {
  const server = new McpServer({ name: 'per-user-upstream', version: '1' });
  server.registerTool('whoami', { description: 'Who the token is for.' }, async (extra) => {
    const { sub } = extra.authInfo.extra;
    process.stdout.write(`${JSON.stringify({ call: 'whoami', sub, token: extra.authInfo.token })}\n`);
    return { content: [{ type: 'text', text: sub }] };
  });
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  res.on('close', () => { transport.close(); server.close(); });
  await server.connect(transport);
  await transport.handleRequest(req, res, req.body);
});
app.all('/mcp', (req, res) => res.status(405).set('allow', 'POST').end());

process.stdout.write(`${JSON.stringify({ url: resource })}\n`);
