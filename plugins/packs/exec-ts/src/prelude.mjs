// packhost's code mode for node, loaded before the code (`node --import`).
// It reads what the caller may reach from the private channel (fd 3, apart
// from the stdout and stderr the code prints on), then makes every pack a
// global namespace of async functions (`await proj.list()`), every alias a
// function, every pack's prompts `pack.prompts.<name>`, `packhost.call("pack.function", {...})`
// for any name, and `packhost.read_resource(uri)`. Calls
// go over the channel to the pack, which hands them to the host with the
// caller's identity; the host binds and checks the arguments.
import net from 'node:net';
import { inspect } from 'node:util';

const channel = new net.Socket({ fd: 3, readable: true, writable: true });
channel.setEncoding('utf8');

// Stacks show the code's own frames only: not the prelude's (named
// `packhost:prelude` by the `sourceURL` at the end of this file, else its
// whole data: URL would show) nor node's internals.
const PRELUDE = 'packhost:prelude';
const ownFrame = (frame) => {
  const file = frame.getScriptNameOrSourceURL() ?? '';
  return file !== PRELUDE && !file.startsWith('node:');
};
// The line of the code each error was thrown at: its first own frame.
const thrownAt = new WeakMap();
// Where the pack wrapped the last expression in the answer function (line,
// column, width): later columns of that line are shown as the code has them.
let answered;
function shown(frame) {
  const text = `${frame}`;
  if (!answered || frame.getLineNumber() !== answered.line || frame.getColumnNumber() <= answered.column) return text;
  return text.replace(/:(\d+):(\d+)(\)?)$/, (_, line, column, close = '') => `:${line}:${column - answered.width}${close}`);
}
Error.prepareStackTrace = (error, frames) => {
  const own = frames.filter(ownFrame);
  if (own.length && error !== null && typeof error === 'object') thrownAt.set(error, own[0].getLineNumber());
  return [Error.prototype.toString.call(error), ...own.map((frame) => `    at ${shown(frame)}`)].join('\n');
};

// `error`, thrown for the code's call of `fn`: its stack, and the line node
// shows when nothing catches it, start where the code called `fn`.
function calledAt(fn, error) {
  Error.captureStackTrace(error, fn);
  return error;
}

const waiting = new Map(); // call id -> { resolve, reject, error }
let nextId = 0;
let buffered = '';
let onLine;
channel.on('data', (chunk) => {
  buffered += chunk;
  for (let end = buffered.indexOf('\n'); end >= 0; end = buffered.indexOf('\n')) {
    const line = buffered.slice(0, end);
    buffered = buffered.slice(end + 1);
    onLine(line);
  }
});
channel.on('error', () => {}); // the pack went away: the process is killed with it
const { bindings, max_result_bytes: maxResultBytes, answered: wrapped } = await new Promise((resolve) => {
  onLine = (line) => resolve(JSON.parse(line));
});
answered = wrapped;
// The channel keeps node alive only while a call waits for its reply.
channel.unref();

/** A pack function failed: `code` is its stable error code, `help` what would be right. */
class PackError extends Error {
  constructor(failure = {}) {
    super('');
    this.name = 'PackError';
    failed(this, failure);
  }
}

// What the pack said, on `error`.
function failed(error, { code, message = '', help, data }) {
  error.message = message;
  error.code = code;
  if (help !== undefined) error.help = help;
  if (data !== undefined) error.data = data;
  return error;
}

onLine = (line) => {
  const reply = JSON.parse(line);
  const call = waiting.get(reply.id);
  if (!call) return;
  waiting.delete(reply.id);
  if (waiting.size === 0) channel.unref();
  if ('error' in reply) call.reject(failed(call.error, reply.error));
  else call.resolve(reply.ok);
};

// Tool `tool` called by the code through `caller`.
function request(tool, args, caller) {
  if (args !== undefined && (args === null || typeof args !== 'object' || Array.isArray(args))) {
    throw calledAt(caller, new TypeError(`${tool} takes one object of named arguments, as in ${tool}({ name: value }); got ${args === null ? 'null' : Array.isArray(args) ? 'an array' : typeof args}`));
  }
  // Made now, filled in if the call fails: where the code made the call,
  // not where the reply arrived.
  const error = calledAt(caller, new PackError());
  return new Promise((resolve, reject) => {
    const id = ++nextId;
    waiting.set(id, { resolve, reject, error });
    if (waiting.size === 1) channel.ref();
    channel.write(`${JSON.stringify({ type: 'call', id, tool, args: [], kwargs: args ?? {} })}\n`);
  });
}

const packs = {};
for (const tool of bindings.tools) {
  const name = `${tool.pack}.${tool.function}`;
  const bound = (args) => request(name, args, bound);
  Object.defineProperty(bound, 'name', { value: tool.function });
  bound.signature = tool.signature;
  bound.description = tool.description;
  bound[inspect.custom] = () => `[packhost tool ${tool.signature}]`;
  (packs[tool.pack] ??= {})[tool.function] = bound;
}

// Prompt `listed` rendered with `args` (MCP's GetPromptResult), for `caller`.
function render(listed, args, caller) {
  if (args !== undefined && (args === null || typeof args !== 'object' || Array.isArray(args))) {
    throw calledAt(caller, new TypeError(`prompt ${listed} takes one object of named arguments, as in ({ name: "value" })`));
  }
  return request('prompts/get', { name: listed, arguments: args ?? {} }, caller);
}

// Every pack's prompts: pack -> name -> render function.
const prompts = {};
for (const prompt of bindings.prompts ?? []) {
  const bound = (args) => render(prompt.listed, args, bound);
  Object.defineProperty(bound, 'name', { value: prompt.name });
  bound.description = prompt.description;
  bound[inspect.custom] = () => `[packhost prompt ${prompt.listed}]`;
  (prompts[prompt.pack] ??= {})[prompt.name] = bound;
  packs[prompt.pack] ??= {};
}

// What `what` names, or a TypeError saying what there is.
function members(what, kind, named) {
  const listed = Object.keys(named).join(', ');
  const traps = {
    get(target, key) {
      // `await pack` and serialisers probe these: absent, not an error.
      if (typeof key === 'symbol' || key in target || key === 'then' || key === 'toJSON') return target[key];
      throw calledAt(traps.get, new TypeError(`${what} has no ${kind} \`${key}\`; ${kind}s: ${listed || '(none)'}`));
    },
  };
  return new Proxy(named, traps);
}

// A pack's functions, and its prompts as `prompts` (unless a function has that name).
function namespace(pack, functions) {
  const own = 'prompts' in functions ? {} : { prompts: members(`pack \`${pack}\``, 'prompt', prompts[pack] ?? {}) };
  return members(`pack \`${pack}\``, 'function', { ...functions, ...own });
}

const taken = [];
function expose(name, value) {
  if (name in globalThis) taken.push(name);
  else globalThis[name] = value;
}
// The host's own pack (discovery) is part of the `packhost` global below.
const { packhost: own = {}, ...others } = packs;
for (const [pack, functions] of Object.entries(others)) expose(pack, namespace(pack, functions));
const aliases = [];
for (const [alias, target] of Object.entries(bindings.aliases ?? {})) {
  const [pack, fn] = target.split('.');
  if (packs[pack]?.[fn]) {
    expose(alias, packs[pack][fn]);
    aliases.push(alias);
  }
}
globalThis.PackError = PackError;
globalThis.packhost = Object.freeze({
  ...own,
  /** Any tool by its full name: `packhost.call("proj.list", {})`. */
  call: function call(tool, args) {
    return request(tool, args, call);
  },
  /** Every prompt you may render: [{ name, description, arguments }]. */
  prompts: () => (bindings.prompts ?? []).map(({ listed, description, arguments: args }) => ({ name: listed, description, arguments: args })),
  /** Prompt `name` as `packhost.prompts()` lists it, rendered: MCP's GetPromptResult. */
  get_prompt: function get_prompt(name, args) {
    return render(name, args, get_prompt);
  },
  /** Resource `uri` (a pack's, or a kept result): MCP's ReadResourceResult. */
  read_resource: function read_resource(uri) {
    return request('resources/read', { uri }, read_resource);
  },
  /** The resources you may read: { resources, resourceTemplates }. */
  resources: function resources() {
    return request('resources/list', {}, resources);
  },
  /** Every pack's functions, including packs whose names a global already had. */
  packs: Object.fromEntries(Object.entries(others).map(([pack, functions]) => [pack, namespace(pack, functions)])),
  projects: bindings.projects ?? {},
});
if (taken.length) {
  process.emitWarning(`packs or aliases named like a global are only reachable as packhost.packs.<name>: ${taken.join(', ')}`);
}

// An unknown name says what exists, whether nothing catches it or a `catch`
// clause of the code does (the pack starts each with a call of this).
const known = `packs: ${Object.keys(packs).join(', ') || '(none)'}${aliases.length ? `; aliases: ${aliases.join(', ')}` : ''}`;
function named(error) {
  if (error instanceof ReferenceError && / is not defined$/.test(error.message)) {
    // Read first: formatted later, the stack would already have the new message.
    const { stack } = error;
    const first = `${error.name}: ${error.message}`;
    error.message += `; ${known}`;
    error.stack = stack.replace(first, `${error.name}: ${error.message}`);
  }
}
process.on('uncaughtExceptionMonitor', named);
globalThis[Symbol.for('packhost.caught')] = named;

// What nothing caught ends the run. Its first line, with the code's line, is
// the failure's message and its stack goes to stderr: node's own report
// would show the pack's wrapper code instead.
process.on('uncaughtException', (error) => {
  const stack = error instanceof Error ? String(error.stack) : `Uncaught ${inspect(error)}`;
  const line = error !== null && typeof error === 'object' ? thrownAt.get(error) : undefined;
  process.stderr.write(`${stack}\n`);
  channel.write(`${JSON.stringify({ type: 'error', error: stack.split('\n')[0], line })}\n`, () => process.exit(1));
});

// Whether a value comes back as JSON unchanged: no Map, class instance,
// function or cycle that JSON.stringify would quietly turn into `{}`.
function isJson(value, depth = 0) {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isFinite(value);
  if (typeof value !== 'object' || depth > 64) return false;
  if (Array.isArray(value)) return value.every((item) => isJson(item, depth + 1));
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return false;
  return Object.values(value).every((item) => item === undefined || isJson(item, depth + 1));
}

// The value of the code's last expression (the pack wraps it in this call).
globalThis[Symbol.for('packhost.answer')] = async (value) => {
  value = await value;
  const answer = { type: 'value' };
  // `undefined` is no value; `null` is one.
  if (value !== undefined) {
    const text = isJson(value) ? JSON.stringify(value) : undefined;
    if (text !== undefined && Buffer.byteLength(text) <= maxResultBytes) answer.result = value;
    else {
      const shown = inspect(value, { depth: 4 });
      answer.resultRepr = shown.length > maxResultBytes ? `${shown.slice(0, maxResultBytes)}\n[Output truncated]` : shown;
    }
  }
  channel.write(`${JSON.stringify(answer)}\n`);
};
//# sourceURL=packhost:prelude
