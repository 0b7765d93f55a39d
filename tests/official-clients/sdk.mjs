// The official TypeScript SDK, where `./dev test` installed it.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const sdk = process.env.PACKHOST_TEST_MCP_SDK;
if (!sdk) {
  console.error('PACKHOST_TEST_MCP_SDK is not set: `./dev test` installs the SDK and sets it');
  process.exit(2);
}

/** One of the SDK's modules, by its path under dist/esm. */
export const load = (path) => import(pathToFileURL(join(sdk, 'dist/esm', path)).href);
