// A user's browser at the test provider (provider.mjs): from an
// authorization URL through its sign-in and consent pages (signing in as
// `login`, any password) to the redirect back to the client, which it does
// not follow.

/** The URL the provider sends the browser back to: the first redirect
 * under `back`. */
export async function browse(start, login, back) {
  const cookies = new Map();
  let url = new URL(start);
  let form;
  for (let step = 0; step < 20; step += 1) {
    const headers = { cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; ') };
    const response = form
      ? await fetch(url, { method: 'POST', redirect: 'manual', headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(form) })
      : await fetch(url, { redirect: 'manual', headers });
    form = undefined;
    for (const cookie of response.headers.getSetCookie()) {
      const [pair] = cookie.split(';');
      const at = pair.indexOf('=');
      cookies.set(pair.slice(0, at), pair.slice(at + 1));
    }
    const location = response.headers.get('location');
    if (location) {
      url = new URL(location, url);
      if (url.href.startsWith(back)) return url.href;
      continue;
    }
    const page = await response.text();
    const action = page.match(/<form[^>]*action="([^"]+)"/)?.[1];
    const prompt = page.match(/name="prompt" value="(\w+)"/)?.[1];
    if (!action || !prompt) throw new Error(`unexpected page ${url} (${response.status}): ${page.slice(0, 500)}`);
    url = new URL(action, url);
    form = prompt === 'login' ? { prompt, login, password: 'any' } : { prompt };
  }
  throw new Error('too many steps to the redirect');
}

// As a script: `node browser.mjs URL LOGIN BACK` prints the redirect URL.
if (import.meta.url === `file://${process.argv[1]}`) {
  const [start, login, back] = process.argv.slice(2);
  process.stdout.write(`${await browse(start, login, back)}\n`);
}
