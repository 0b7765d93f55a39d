// packhost's realm worker for exec_ts (`realm.rs`): a confined node that
// runs one block at a time, each in a fresh `vm` context of its own (a new
// realm: its own globals and prototypes, nothing of the previous block's).
//
// The rule that keeps the worker's own realm (node's `process`, `require`,
// the channel) out of reach: nothing of this realm ever reaches the block.
// The context's global comes from `Object.create(null)` (a `{}` would hand
// over this realm's `Object`); its code mode (`realmMain` below) is code
// evaluated inside the context; this realm hands it strings and numbers
// only, plus one function (`host`) the block never sees, which returns
// primitives and never throws. The context compiles no code from strings
// (`eval`, `new Function`: the way to a `import()`, whose errors node makes
// in this realm); blocks that name `eval`, `Function` or `import()` are run
// by node instead (the pack routes them, `route.rs`).
//
// The channel (fd 3, one JSON object a line) carries: from the pack,
// `{"type": "run", ...}` and the replies to the block's tool calls; to the
// pack, the block's tool calls, its output (`{"type": "out", "fd", "text"}`),
// its answer (as the prelude sends it) and `{"type": "done", "code"}` once
// nothing of the block is left to run (node's exit: 0, 1 after an uncaught
// error, 13 for a top-level await that never settles). After an uncaught
// error the worker exits, as node would: nothing of the block runs on.
import net from 'node:net';
import vm from 'node:vm';
import { formatWithOptions, inspect } from 'node:util';

const channel = new net.Socket({ fd: 3, readable: true, writable: true });
channel.setEncoding('utf8');
// The pack went away: so does the worker.
channel.on('error', () => process.exit(0));
channel.on('end', () => process.exit(0));
const send = (message) => channel.write(`${JSON.stringify(message)}\n`);

// Values are shown as node shows them, except that no `[inspect.custom]` of
// the block's runs: node would hand it this realm's `inspect`.
const SHOWN = { customInspect: false };
// What the context may not do: compile code from strings or WebAssembly.
const CONTEXT = { codeGeneration: { strings: false, wasm: false } };

let current;
let buffered = '';
channel.on('data', (chunk) => {
  buffered += chunk;
  for (let end = buffered.indexOf('\n'); end >= 0; end = buffered.indexOf('\n')) {
    const line = buffered.slice(0, end);
    buffered = buffered.slice(end + 1);
    if (current) current.reply(line);
    else if (line.startsWith('{"type":"run"')) run(JSON.parse(line));
    // else: a reply to a block that has ended.
  }
});

// The in-context code mode, compiled once, run inside each fresh context.
const realmScript = new vm.Script(`(${realmMain})`, { filename: 'packhost:realm' });

// A fresh context and its code mode, made while the worker waits: making
// one takes a few milliseconds, off the block's path.
function fresh() {
  const context = vm.createContext(Object.create(null), CONTEXT);
  // The block's `host` once it runs (none before: nothing is asked then).
  const link = {};
  const { bind } = realmScript.runInContext(context)((op, a, b, c) => link.host?.(op, a, b, c));
  return { context, link, bind };
}
let spare;
const prepare = () => setImmediate(() => {
  spare ??= fresh();
});
prepare();

function run({ code, setup }) {
  const { context, link, bind } = spare ?? fresh();
  spare = undefined;
  const timers = new Map(); // id -> node timer
  const calls = new Set(); // ids of tool calls waiting for their reply
  let settled = false;
  let ended = false;
  let api;
  const end = (exitCode) => {
    if (ended) return;
    ended = true;
    for (const timer of timers.values()) clearTimeout(timer);
    timers.clear();
    current = undefined;
    send({ type: 'done', code: exitCode });
    // Node ends at an uncaught error: nothing of the block may run on.
    if (exitCode !== 0) channel.end(() => process.exit(exitCode));
    else prepare();
  };
  // Once what is running now (and its microtasks) is done: is anything left?
  let checking = false;
  const check = () => {
    if (checking || ended) return;
    checking = true;
    setImmediate(() => {
      checking = false;
      if (ended || calls.size > 0 || [...timers.values()].some((t) => t.hasRef())) return;
      if (settled) end(0);
      else {
        host('write', 2, 'Warning: Detected unsettled top-level await: the code awaits a promise that nothing will settle\n');
        end(13);
      }
    });
  };
  // What the block's code mode asks of this realm: primitives in, primitives out.
  const host = (op, a, b, c) => {
    if (ended) return undefined;
    try {
      switch (op) {
        case 'write':
          send({ type: 'out', fd: a === 2 ? 2 : 1, text: typeof b === 'string' ? b : '' });
          return undefined;
        case 'format':
          // `a` is the context's array of values: shown as node's console does.
          return formatWithOptions(SHOWN, ...a);
        case 'inspect':
          return inspect(a, { ...SHOWN, depth: 4 });
        case 'bytes':
          return Buffer.byteLength(String(a));
        case 'call': {
          const line = String(a);
          calls.add(JSON.parse(line).id);
          channel.write(`${line}\n`);
          return undefined;
        }
        case 'timer': {
          const id = Number(a);
          const repeat = c === true;
          const fire = () => {
            if (!repeat) timers.delete(id);
            api.fire(id);
            check();
          };
          const delay = Number(b);
          timers.set(id, repeat ? setInterval(fire, delay) : setTimeout(fire, delay));
          return undefined;
        }
        case 'clear':
          clearTimeout(timers.get(Number(a)));
          timers.delete(Number(a));
          check();
          return undefined;
        case 'ref':
          timers.get(Number(a))?.[b === true ? 'ref' : 'unref']();
          check();
          return undefined;
        case 'hasRef':
          return timers.get(Number(a))?.hasRef() ?? false;
        case 'refresh':
          timers.get(Number(a))?.refresh();
          return undefined;
        case 'answer':
          send({ type: 'value', ...JSON.parse(String(a)) });
          return undefined;
        case 'settled':
          settled = true;
          check();
          return undefined;
        case 'uncaught':
          // `a`: the stack or node's `Uncaught …` text; `b`: the code's line.
          send({ type: 'out', fd: 2, text: `${a}\n` });
          send({ type: 'error', error: String(a).split('\n')[0], line: typeof b === 'number' ? b : undefined });
          end(1);
          return undefined;
        case 'pid':
          return process.pid;
        default:
          return undefined;
      }
    } catch {
      return undefined;
    }
  };
  const block = {
    rejected(reason) {
      api.uncaught(reason);
    },
    reply(line) {
      let id;
      try {
        ({ id } = JSON.parse(line));
      } catch {
        return;
      }
      if (!calls.delete(id)) return;
      api.reply(line);
      check();
    },
  };
  current = block;
  try {
    link.host = host;
    api = bind(JSON.stringify(setup));
    // The block as the body of a strict async function (a module's code is
    // strict); the wrapper has a line of its own, so lines and columns are
    // the code's.
    const main = new vm.Script(`(async function () {"use strict";\n${code}\n})`, {
      filename: '[eval1]',
      lineOffset: -1,
    }).runInContext(context);
    api.start(main);
  } catch (error) {
    // A syntax error of the code's (the pack parsed it first: rare).
    host('uncaught', String(error));
    return;
  }
  check();
}

// Runs inside the fresh context: the prelude's code mode (`prelude.mjs`),
// with this realm's services reached through `host` only. What depends on
// no caller is made while the worker waits; `bind` adds the caller's packs.
function realmMain(host) {
  'use strict';
  // Set by `bind`.
  let maxResultBytes;
  let answered;
  let known = '';
  // Captured before the block runs: it may replace them.
  const then = Promise.prototype.then;
  const own = new Set(['packhost:realm']);
  const ownFrame = (frame) => {
    const file = frame.getScriptNameOrSourceURL() ?? '';
    return !own.has(file) && file !== 'packhost:worker' && !file.startsWith('node:') && !file.startsWith('data:');
  };
  const thrownAt = new WeakMap();
  function shown(frame) {
    const text = `${frame}`;
    if (!answered || frame.getLineNumber() !== answered.line || frame.getColumnNumber() <= answered.column) return text;
    return text.replace(/:(\d+):(\d+)(\)?)$/, (_, line, column, close = '') => `:${line}:${column - answered.width}${close}`);
  }
  const errorToString = Error.prototype.toString;
  Error.prepareStackTrace = (error, frames) => {
    const kept = frames.filter(ownFrame);
    if (kept.length && error !== null && typeof error === 'object') thrownAt.set(error, kept[0].getLineNumber());
    return [errorToString.call(error), ...kept.map((frame) => `    at ${shown(frame)}`)].join('\n');
  };
  function calledAt(fn, error) {
    Error.captureStackTrace(error, fn);
    return error;
  }

  // console: what node's prints, on the block's stdout and stderr.
  const print = (fd) => (...values) => {
    host('write', fd, `${host('format', values.map(shownValue))}\n`);
  };
  const console = {
    log: print(1),
    info: print(1),
    debug: print(1),
    warn: print(2),
    error: print(2),
  };
  Object.defineProperty(globalThis, 'console', { value: console, writable: true, configurable: true, enumerable: false });

  // Timers: node's run them; the block's callbacks stay here.
  const callbacks = new Map();
  let nextTimer = 0;
  class Timeout {
    #id;
    constructor(id) {
      this.#id = id;
    }
    ref() {
      host('ref', this.#id, true);
      return this;
    }
    unref() {
      host('ref', this.#id, false);
      return this;
    }
    hasRef() {
      return host('hasRef', this.#id);
    }
    refresh() {
      host('refresh', this.#id);
      return this;
    }
    close() {
      clear(this);
      return this;
    }
    [Symbol.toPrimitive]() {
      return this.#id;
    }
    static id(timer) {
      return #id in timer ? timer.#id : Number(timer);
    }
  }
  const schedule = (repeat) => (callback, delay = 1, ...args) => {
    if (typeof callback !== 'function') {
      throw new TypeError(`The "callback" argument must be of type function. Received ${callback === null ? 'null' : typeof callback}`);
    }
    const id = ++nextTimer;
    callbacks.set(id, { callback, args, repeat });
    const ms = Number(delay);
    host('timer', id, ms >= 1 && ms <= 2147483647 ? ms : 1, repeat);
    return new Timeout(id);
  };
  function clear(timer) {
    if (timer === undefined || timer === null) return;
    const id = Timeout.id(timer);
    callbacks.delete(id);
    host('clear', id);
  }
  for (const [name, value] of [
    ['setTimeout', schedule(false)],
    ['setInterval', schedule(true)],
    ['clearTimeout', clear],
    ['clearInterval', clear],
    ['queueMicrotask', (callback) => void Promise.resolve().then(callback).catch(uncaught)],
  ]) {
    Object.defineProperty(globalThis, name, { value, writable: true, configurable: true, enumerable: true });
  }

  // Tool calls, as the prelude makes them.
  class PackError extends Error {
    constructor(failure = {}) {
      super('');
      this.name = 'PackError';
      failed(this, failure);
    }
  }
  function failed(error, { code, message = '', help, data }) {
    error.message = message;
    error.code = code;
    if (help !== undefined) error.help = help;
    if (data !== undefined) error.data = data;
    return error;
  }
  const waiting = new Map();
  let nextId = 0;
  function request(tool, args, caller) {
    if (args !== undefined && (args === null || typeof args !== 'object' || Array.isArray(args))) {
      throw calledAt(caller, new TypeError(`${tool} takes one object of named arguments, as in ${tool}({ name: value }); got ${args === null ? 'null' : Array.isArray(args) ? 'an array' : typeof args}`));
    }
    const error = calledAt(caller, new PackError());
    return new Promise((resolve, reject) => {
      const id = ++nextId;
      waiting.set(id, { resolve, reject, error });
      host('call', JSON.stringify({ type: 'call', id, tool, args: [], kwargs: args ?? {} }));
    });
  }

  // Pack functions and prompts shown as the prelude's `[inspect.custom]` shows them.
  const labels = new WeakMap();
  const shownValue = (value) => (typeof value === 'function' && labels.has(value) ? labels.get(value) : value);

  function named(error) {
    if (error instanceof ReferenceError && / is not defined$/.test(error.message)) {
      const { stack } = error;
      const first = `${error.name}: ${error.message}`;
      error.message += `; ${known}`;
      error.stack = stack.replace(first, `${error.name}: ${error.message}`);
    }
  }
  globalThis[Symbol.for('packhost.caught')] = named;

  // What nothing caught ends the block, as it ends node.
  function uncaught(error) {
    named(error);
    const isError = error instanceof Error;
    const stack = isError ? String(error.stack) : `Uncaught ${host('inspect', error)}`;
    const line = error !== null && typeof error === 'object' ? thrownAt.get(error) : undefined;
    host('uncaught', stack, line);
  }

  function isJson(value, depth = 0) {
    if (value === null || typeof value === 'string' || typeof value === 'boolean') return true;
    if (typeof value === 'number') return Number.isFinite(value);
    if (typeof value !== 'object' || depth > 64) return false;
    if (Array.isArray(value)) return value.every((item) => isJson(item, depth + 1));
    const prototype = Object.getPrototypeOf(value);
    if (prototype !== Object.prototype && prototype !== null) return false;
    return Object.values(value).every((item) => item === undefined || isJson(item, depth + 1));
  }
  globalThis[Symbol.for('packhost.answer')] = async (value) => {
    value = await value;
    const answer = {};
    if (value !== undefined) {
      const text = isJson(value) ? JSON.stringify(value) : undefined;
      if (text !== undefined && host('bytes', text) <= maxResultBytes) answer.result = value;
      else {
        const label = shownValue(value);
        const text = typeof label === 'string' && label !== value ? label : host('inspect', value);
        answer.resultRepr = text.length > maxResultBytes ? `${text.slice(0, maxResultBytes)}\n[Output truncated]` : text;
      }
    }
    host('answer', JSON.stringify(answer));
  };

  const api = Object.freeze({
    start(main) {
      then.call(
        main(),
        () => host('settled'),
        (error) => uncaught(error),
      );
    },
    uncaught,
    reply(line) {
      const reply = JSON.parse(line);
      const call = waiting.get(reply.id);
      if (!call) return;
      waiting.delete(reply.id);
      if ('error' in reply) call.reject(failed(call.error, reply.error));
      else call.resolve(reply.ok);
    },
    fire(id) {
      const timer = callbacks.get(id);
      if (!timer) return;
      if (!timer.repeat) callbacks.delete(id);
      try {
        Reflect.apply(timer.callback, undefined, timer.args);
      } catch (error) {
        uncaught(error);
      }
    },
  });
  globalThis.PackError = PackError;

  // The caller's packs, aliases and prompts: `setupText` is the pack's JSON.
  function bind(setupText) {
    const setup = JSON.parse(setupText);
    const { bindings, node_globals: nodeGlobals } = setup;
    maxResultBytes = setup.max_result_bytes;
    answered = setup.answered;
    const packs = {};
    for (const tool of bindings.tools) {
      const name = `${tool.pack}.${tool.function}`;
      const bound = (args) => request(name, args, bound);
      Object.defineProperty(bound, 'name', { value: tool.function });
      bound.signature = tool.signature;
      bound.description = tool.description;
      labels.set(bound, `[packhost tool ${tool.signature}]`);
      (packs[tool.pack] ??= {})[tool.function] = bound;
    }
    function render(listed, args, caller) {
      if (args !== undefined && (args === null || typeof args !== 'object' || Array.isArray(args))) {
        throw calledAt(caller, new TypeError(`prompt ${listed} takes one object of named arguments, as in ({ name: "value" })`));
      }
      return request('prompts/get', { name: listed, arguments: args ?? {} }, caller);
    }
    const prompts = {};
    for (const prompt of bindings.prompts ?? []) {
      const bound = (args) => render(prompt.listed, args, bound);
      Object.defineProperty(bound, 'name', { value: prompt.name });
      bound.description = prompt.description;
      labels.set(bound, `[packhost prompt ${prompt.listed}]`);
      (prompts[prompt.pack] ??= {})[prompt.name] = bound;
      packs[prompt.pack] ??= {};
    }
    function members(what, kind, named) {
      const listed = Object.keys(named).join(', ');
      const traps = {
        get(target, key) {
          if (typeof key === 'symbol' || key in target || key === 'then' || key === 'toJSON') return target[key];
          throw calledAt(traps.get, new TypeError(`${what} has no ${kind} \`${key}\`; ${kind}s: ${listed || '(none)'}`));
        },
      };
      return new Proxy(named, traps);
    }
    function namespace(pack, functions) {
      const extra = 'prompts' in functions ? {} : { prompts: members(`pack \`${pack}\``, 'prompt', prompts[pack] ?? {}) };
      return members(`pack \`${pack}\``, 'function', { ...functions, ...extra });
    }
    // A name node's global has is taken there: taken here too.
    const nodeHas = new Set(nodeGlobals);
    const taken = [];
    function expose(name, value) {
      if (name in globalThis || nodeHas.has(name)) taken.push(name);
      else globalThis[name] = value;
    }
    const { packhost: hostPack = {}, ...others } = packs;
    for (const [pack, functions] of Object.entries(others)) expose(pack, namespace(pack, functions));
    const aliases = [];
    for (const [alias, target] of Object.entries(bindings.aliases ?? {})) {
      const [pack, fn] = target.split('.');
      if (packs[pack]?.[fn]) {
        expose(alias, packs[pack][fn]);
        aliases.push(alias);
      }
    }
    globalThis.packhost = Object.freeze({
      ...hostPack,
      call: function call(tool, args) {
        return request(tool, args, call);
      },
      prompts: () => (bindings.prompts ?? []).map(({ listed, description, arguments: args }) => ({ name: listed, description, arguments: args })),
      get_prompt: function get_prompt(name, args) {
        return render(name, args, get_prompt);
      },
      read_resource: function read_resource(uri) {
        return request('resources/read', { uri }, read_resource);
      },
      resources: function resources() {
        return request('resources/list', {}, resources);
      },
      packs: Object.fromEntries(Object.entries(others).map(([pack, functions]) => [pack, namespace(pack, functions)])),
      projects: bindings.projects ?? {},
    });
    if (taken.length) {
      host('write', 2, `(node:${host('pid')}) Warning: packs or aliases named like a global are only reachable as packhost.packs.<name>: ${taken.join(', ')}\n(Use \`node --trace-warnings ...\` to show where the warning was created)\n`);
    }

    known = `packs: ${Object.keys(packs).join(', ') || '(none)'}${aliases.length ? `; aliases: ${aliases.join(', ')}` : ''}`;
    return api;
  }

  return Object.freeze({ bind });
}

// Unhandled rejections end the block as they end node.
process.on('unhandledRejection', (reason) => {
  if (!current) return;
  current.rejected(reason);
});
//# sourceURL=packhost:worker
