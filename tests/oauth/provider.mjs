// A real OpenID provider for the OAuth tests: oidc-provider (pinned in
// `dev`), on a free loopback port, issuing JWT access tokens bound by
// resource indicators (RFC 8707) to the resource a client asks for: to
// configured clients by the client_credentials grant (`sub`: the client
// id), and by the authorization code flow to clients that register
// themselves (RFC 7591) for users who sign in at its development login and
// consent pages (`sub`: the login). Tokens carry the organisation (`org`) of
// the client or user beside `sub` and `scope`.
//
//   node provider.mjs SPEC.json   (PACKHOST_TEST_OIDC_PROVIDER: its package dir)
//
// SPEC: {"clients": [{"client_id", "client_secret", "org", "scope"}],
//        "users": {"login": "org"}, "scopes": ["..."],
//        "access_ttl": seconds (300), "refresh_ttl": seconds (86400)}
// Clients that may refresh get a refresh token with every code, which
// stays the same when used (no rotation), until refresh_ttl.
// Prints one line, {"issuer": "http://127.0.0.1:PORT"}, once it listens.
//
// Beside the provider's own endpoints, two for the tests, under /test/:
//   POST /test/rotate {"keep_old": bool}: a new signing key, published first
//     and used from now on; the old one stays published when keep_old.
//   POST /test/forge {"header", "claims", "sign"}: a token the provider did
//     not issue, for the attacks: "sign" is "provider" (its current key:
//     claims the provider would never put there), "foreign" (a key it does
//     not publish), "public-as-hmac" (HS256 keyed with its public key's
//     PEM) or "none" (unsigned).

import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const dir = process.env.PACKHOST_TEST_OIDC_PROVIDER;
if (!dir) {
  console.error('PACKHOST_TEST_OIDC_PROVIDER is not set: `./dev test` installs oidc-provider and sets it');
  process.exit(2);
}
const { default: Provider } = await import(pathToFileURL(join(dir, 'lib/index.js')).href);
const jose = await import(
  pathToFileURL(createRequire(join(dir, 'package.json')).resolve('jose')).href
);

const spec = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const orgs = Object.fromEntries(spec.clients.map((c) => [c.client_id, c.org]));
const users = spec.users ?? {};

async function newKey() {
  const { privateKey } = await jose.generateKeyPair('RS256', { extractable: true });
  const jwk = await jose.exportJWK(privateKey);
  return { ...jwk, kid: `k${Date.now()}-${Math.random().toString(36).slice(2, 8)}`, alg: 'RS256', use: 'sig' };
}

const publicOf = ({ kty, n, e, kid, alg, use }) => ({ kty, n, e, kid, alg, use });

let keys = [await newKey()];
let provider;

function build(issuer) {
  const built = new Provider(issuer, {
    clients: spec.clients.map(({ client_id, client_secret, scope }) => ({
      client_id,
      client_secret,
      scope,
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      token_endpoint_auth_method: 'client_secret_basic',
    })),
    jwks: { keys },
    scopes: ['openid', ...spec.scopes],
    ttl: { RefreshToken: spec.refresh_ttl ?? 86400 },
    issueRefreshToken: async (ctx, client) => client.grantTypeAllowed('refresh_token'),
    rotateRefreshToken: false,
    features: {
      devInteractions: { enabled: true },
      registration: { enabled: true },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => undefined,
        useGrantedResource: () => true,
        getResourceServerInfo: () => ({
          scope: spec.scopes.join(' '),
          accessTokenTTL: spec.access_ttl ?? 300,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        }),
      },
    },
    extraTokenClaims: (ctx, token) => ({
      org: token.accountId ? users[token.accountId] : orgs[token.clientId],
    }),
  });
  built.on('server_error', (ctx, err) => console.error('provider error:', err));
  return built;
}

async function body(req) {
  let text = '';
  for await (const chunk of req) text += chunk;
  return text ? JSON.parse(text) : {};
}

function answer(res, status, value) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(value));
}

async function forge({ header = {}, claims, sign }) {
  const [current] = keys;
  if (sign === 'none') {
    const encode = (v) => Buffer.from(JSON.stringify(v)).toString('base64url');
    return `${encode({ alg: 'none', typ: 'at+jwt', ...header })}.${encode(claims)}.`;
  }
  let key;
  let protectedHeader = { typ: 'at+jwt', ...header };
  if (sign === 'provider') {
    key = await jose.importJWK(current, 'RS256');
    protectedHeader = { alg: 'RS256', kid: current.kid, ...protectedHeader };
  } else if (sign === 'foreign') {
    const foreign = await newKey();
    key = await jose.importJWK(foreign, 'RS256');
    // The kid of a key the provider publishes: only the signature is wrong.
    protectedHeader = { alg: 'RS256', kid: current.kid, ...protectedHeader };
  } else if (sign === 'public-as-hmac') {
    const pem = await jose.exportSPKI(await jose.importJWK(publicOf(current), 'RS256'));
    key = new TextEncoder().encode(pem);
    protectedHeader = { alg: 'HS256', kid: current.kid, ...protectedHeader };
  } else {
    throw new Error(`unknown sign ${sign}`);
  }
  return new jose.SignJWT(claims).setProtectedHeader(protectedHeader).sign(key);
}

const server = createServer(async (req, res) => {
  try {
    if (req.method === 'POST' && req.url === '/test/rotate') {
      const { keep_old: keepOld } = await body(req);
      keys = [await newKey(), ...(keepOld ? keys : [])];
      provider = build(provider.issuer);
      return answer(res, 200, { kid: keys[0].kid });
    }
    if (req.method === 'POST' && req.url === '/test/forge') {
      return answer(res, 200, { token: await forge(await body(req)) });
    }
    return provider.callback()(req, res);
  } catch (e) {
    console.error(e);
    return answer(res, 500, { error: String(e) });
  }
});

server.listen(0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  provider = build(issuer);
  process.stdout.write(`${JSON.stringify({ issuer })}\n`);
});
