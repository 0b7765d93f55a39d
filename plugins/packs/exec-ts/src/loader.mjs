// Written by packhost exec_ts: cells are stripped to JavaScript before node runs them.
const RELATIVE = /^\.{0,2}\//;
export async function resolve(specifier, context, next) {
  try {
    return await next(specifier, context);
  } catch (error) {
    if (error?.code !== 'ERR_MODULE_NOT_FOUND' || !RELATIVE.test(specifier)) throw error;
    const candidates = /\.js$/.test(specifier) ? [specifier.replace(/\.js$/, '.ts')]
      : /\.mjs$/.test(specifier) ? [specifier.replace(/\.mjs$/, '.mts')]
      : ['.ts', '.mts', '.js', '.mjs'].map((ext) => specifier + ext);
    for (const candidate of candidates) {
      try { return await next(candidate, context); } catch {}
    }
    throw error;
  }
}
export async function load(url, context, next) {
  if (url.startsWith('file:') && /\.m?ts$/.test(new URL(url).pathname)) {
    return next(url, { ...context, format: 'module' });
  }
  return next(url, context);
}
