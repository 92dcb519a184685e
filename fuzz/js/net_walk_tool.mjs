// A hostile tool for the net_walk fuzz target (fuzz/net_targets.py, fuzz/README.md): the
// bytes pick, per attempt, a route to the network and a URL (or host and port) aimed at the
// recording listeners the harness runs on 127.0.0.1-3 and ::1, or at names its test
// resolver points at them. The routes are enumerated from what the process holds, so a
// route a later Node adds is walked too: every built-in module Node lists (the harness
// passes Node's own list), every function of globalThis and of its symbol-keyed values,
// process's module and binding loaders, fetch in its spellings. The tool catches
// everything and returns, per attempt, how it ended; the harness judges the listeners.

const PENDING_MS = 400;
const URL_ROUTES = 12;
const FILE_MODULES = new Set(['fs', 'fs/promises']);

class Bytes {
  constructor(data) {
    this.data = data;
    this.at = 0;
  }

  next() {
    const value = this.at < this.data.length ? this.data[this.at] : 0;
    this.at += 1;
    return value;
  }

  pick(list) {
    return list[this.next() % list.length];
  }

  get done() {
    return this.at >= this.data.length;
  }
}

const FULL_WIDTH = (text) =>
  [...text].map((c) => (c >= '0' && c <= '9' ? String.fromCharCode(c.charCodeAt(0) + 0xfee0) : c)).join('');

/** Spellings of the IPv4 address ``a.b.c.d`` a WHATWG host parser reads as that address. */
function v4Forms(parts) {
  const [a, b, c, d] = parts;
  const n = ((a << 24) >>> 0) + (b << 16) + (c << 8) + d;
  const dotted = parts.join('.');
  return [
    dotted,
    String(n),
    `0x${n.toString(16)}`,
    `0${n.toString(8)}`,
    `${a}.${(b << 16) + (c << 8) + d}`,
    `${a}.${b}.${(c << 8) + d}`,
    `0x${a.toString(16)}.${b}.${c}.0${d.toString(8)}`,
    `0${a.toString(8)}.${b}.${c}.${d}`,
    `${dotted}.`,
    [...dotted].map((ch) => `%${ch.charCodeAt(0).toString(16)}`).join(''),
    FULL_WIDTH(dotted),
    dotted.replaceAll('.', '\u3002'),
    `${a}.${b}.${c}.${d}`.replace('.', '\t.'),
  ];
}

/** IPv6 spellings that embed the IPv4 address (mapped, compatible, NAT64, 6to4, Teredo-ish). */
function v6Embeddings(parts) {
  const dotted = parts.join('.');
  const hex = (x, y) => ((x << 8) + y).toString(16);
  const h1 = hex(parts[0], parts[1]);
  const h2 = hex(parts[2], parts[3]);
  return [
    `[::ffff:${dotted}]`,
    `[::ffff:${h1}:${h2}]`,
    `[0:0:0:0:0:ffff:${dotted}]`,
    `[::${dotted}]`,
    `[64:ff9b::${dotted}]`,
    `[64:ff9b:1::${h1}:${h2}]`,
    `[2002:${h1}:${h2}::]`,
    `[::ffff:0:${dotted}]`,
    `[2001:0:4136:e378:8000:63bf:${(~((parts[0] << 8) + parts[1]) & 0xffff).toString(16)}:${(~((parts[2] << 8) + parts[3]) & 0xffff).toString(16)}]`,
  ];
}

const V6_LOOPBACK = ['[::1]', '[0:0:0:0:0:0:0:1]', '[::0:1]', '[::1%25lo]', '[::1%lo]', '[0::1]', '[::0.0.0.1]', '[::1]'.toUpperCase()];

function hostForms(host) {
  const forms = [host, host.toUpperCase(), `${host}.`, `${host}..`, host.replace(/^(.)/, (c) => `%${c.charCodeAt(0).toString(16)}`), FULL_WIDTH(host).replace(/[a-z]/g, (c) => String.fromCharCode(c.charCodeAt(0) + 0xfee0))];
  return forms;
}

/** A host spelling aimed at one of the harness's listeners or names, or at no one. */
function host(bytes, env) {
  // The granted literal and the names most, as the only targets a connection may reach.
  const choice = bytes.next() % 9;
  if (choice === 0) return '127.0.0.3';
  if (choice <= 2) return bytes.pick(v4Forms([127, 0, 0, bytes.pick([3, 3, 1])]));
  if (choice === 3) return bytes.pick(v4Forms([127, 0, 0, 2]));
  if (choice === 4) return bytes.pick([1, 2, 3].flatMap((d) => v6Embeddings([127, 0, 0, d])));
  if (choice === 5) return bytes.pick(V6_LOOPBACK);
  if (choice <= 7) return bytes.pick(hostForms(bytes.pick(env.names)));
  return bytes.pick([...v4Forms([0, 0, 0, 0]), '[::]', '0', '10.0.0.1', '169.254.169.254', 'xn--nxasmq6b.test', 'localhost.localdomain', 'a.localhost']);
}

function port(bytes, env) {
  const ports = env.ports;
  const listener = bytes.pick([ports['127.0.0.3'], ports['127.0.0.3'], ports['127.0.0.1'], ports['127.0.0.2'], ports['::1']]);
  const odd = [`:000${listener}`, ':0', ':65535', ':65536', `:${listener} `, '', ':80', `:+${listener}`];
  return bytes.next() % 2 ? `:${listener}` : bytes.pick(odd);
}

const SCHEMES = ['http', 'http', 'http', 'http', 'http', 'http', 'https', 'https', 'HTTP', 'HtTpS', 'ws', 'wss', 'ftp', 'file', 'blob:http', 'gopher'];
const USERINFO = ['', '', '', '', '', '', '', '', 'u:p@', ':@', 'u@', ':p@', '%40@', 'a%3Ab@'];
const STATUSES = [301, 302, 303, 307, 308, 300, 304, 305, 306, 309, 399];

/** ``target`` as a redirect Location of one of the forms servers send. */
function location(bytes, env, depth) {
  const absolute = url(bytes, env, depth + 1);
  const h = host(bytes, env);
  const p = port(bytes, env);
  return bytes.pick([
    absolute,
    absolute,
    `//${h}${p}/`,
    `/${h}${p}/`,
    `\\\\${h}${p}\\`,
    `http:${h}${p}/`,
    `http:/${h}${p}/`,
    `https://${h}${p}/`,
    '/ok',
    '?q=1',
    `  ${absolute}`,
    `${absolute}#frag`,
  ]);
}

/** A URL from the bytes; its path may ask the listener for a redirect. */
function url(bytes, env, depth = 0) {
  // Half plain http without userinfo: the host and port spellings are what is tried.
  const plain = bytes.next() % 2 === 0;
  const scheme = plain ? 'http' : bytes.pick(SCHEMES);
  const userinfo = plain ? '' : bytes.pick(USERINFO);
  const h = host(bytes, env);
  const p = port(bytes, env);
  let path = '/ok';
  if (depth < 2 && bytes.next() % 3 === 0) {
    path = `/r/${bytes.pick(STATUSES)}/${encodeURIComponent(location(bytes, env, depth))}`;
  }
  return `${scheme}://${userinfo}${h}${p}${path}`;
}

// What became of one attempt: thrown/rejected errors keep their code, reason and cause code.
function ended(error) {
  if (error === null || (typeof error !== 'object' && typeof error !== 'function')) {
    return { thrown: true, name: typeof error, code: null, message: String(error).slice(0, 200) };
  }
  let name = null;
  let code = null;
  let reason = null;
  let message = null;
  let cause = null;
  try { name = String(error.name); } catch { name = '?'; }
  try { code = error.code === undefined ? null : String(error.code); } catch { code = '?'; }
  try { reason = error.reason === undefined ? null : String(error.reason); } catch { reason = '?'; }
  try { message = String(error.message).slice(0, 300); } catch { message = '?'; }
  try { cause = error.cause?.code === undefined ? null : String(error.cause.code); } catch { cause = '?'; }
  return { thrown: true, name, code, reason, message, cause };
}

function settled(value) {
  if (value && typeof value === 'object' && 'status' in value) {
    try { return { thrown: false, status: Number(value.status), type: typeof value }; } catch { /* below */ }
  }
  let type = typeof value;
  try { type = value?.constructor?.name ?? type; } catch { /* keep */ }
  return { thrown: false, type };
}

async function attempt(run) {
  let timer;
  try {
    const pending = new Promise((resolve) => { timer = setTimeout(() => resolve('pending'), PENDING_MS); });
    const value = await Promise.race([Promise.resolve().then(run), pending]);
    if (value === 'pending') return { thrown: false, type: 'pending' };
    // A stream or emitter: give it the chance to connect and fail.
    if (value && typeof value.on === 'function') {
      await new Promise((resolve) => {
        try { value.on('error', () => resolve()); } catch { resolve(); }
        setTimeout(resolve, 100);
      });
      try { value.destroy?.(); value.close?.(); } catch { /* the tool's own object */ }
    }
    return settled(value);
  } catch (error) {
    return ended(error);
  } finally {
    clearTimeout(timer);
  }
}

// Argument shapes for a function of unknown meaning.
function argumentShapes(text, h, p, bytes) {
  const numericPort = Number(String(p).replace(/[^0-9]/g, '')) || 80;
  const bare = h.replace(/^\[|\]$/g, '');
  return bytes.pick([
    [text],
    [new URL('http://127.0.0.1/')],
    [numericPort, bare],
    [{ host: bare, port: numericPort, path: '/ok' }],
    [{ hostname: bare, port: numericPort, family: bytes.pick([4, 6, 0]) }],
    [{ origin: text, path: '/ok', method: 'GET' }, { onError() {}, onConnect() {}, onHeaders() {}, onData() {}, onComplete() {} }],
    [text, { method: 'GET' }],
    [bare],
    [{ path: '/tmp/sock' }],
  ]);
}

const SKIP_GLOBALS = new Set(['eval', 'Function', 'AsyncFunction', 'close', 'queueMicrotask', 'setInterval', 'setImmediate', 'setTimeout', 'structuredClone']);

/** Every route, named, each a function of (bytes, env) returning what to await. */
function routes(env) {
  const list = [];
  const fetchRoutes = [
    ['fetch', (t) => fetch(t)],
    ['fetch URL', (t) => fetch(new URL(t))],
    ['fetch Request', (t) => fetch(new Request(t))],
    ['fetch manual', (t) => fetch(t, { redirect: 'manual' })],
    ['fetch error', (t) => fetch(t, { redirect: 'error' })],
    ['fetch POST', (t) => fetch(t, { method: 'POST', body: 'x' })],
    ['fetch Request POST', (t) => fetch(new Request(t, { method: 'PUT', body: 'x' }), { redirect: 'follow' })],
    ['fetch dispatcher', (t) => fetch(t, { dispatcher: { dispatch() { return true; } } })],
    ['fetch globalThis', (t) => globalThis['fet' + 'ch'](t)],
  ];
  for (const [name, run] of fetchRoutes) list.push({ name, kind: 'fetch', run: (t) => run(t) });
  // Module loads from the URL (Node's network imports, JSON modules, import.meta.resolve).
  list.push({ name: 'import URL', kind: 'import', run: (t) => import(t) });
  list.push({ name: 'import URL json', kind: 'import', run: (t) => import(t, { with: { type: 'json' } }) });
  list.push({ name: 'import.meta.resolve', kind: 'import', run: (t) => import.meta.resolve(t) });
  for (const name of env.builtins) {
    list.push({
      name: `import ${name}`,
      kind: 'module',
      module: name,
      run: async (t, h, p, bytes) => {
        const mod = await import(bytes.next() % 2 ? `node:${name}` : name);
        // The file surface is fs_walk's: an allowed file module is only loaded here.
        return FILE_MODULES.has(name) ? mod : callSome(mod, t, h, p, bytes, `import ${name}`);
      },
    });
    list.push({
      name: `getBuiltinModule ${name}`,
      kind: 'module',
      module: name,
      run: (t, h, p, bytes) => {
        const mod = process.getBuiltinModule(name);
        return FILE_MODULES.has(name) ? mod : callSome(mod, t, h, p, bytes, name);
      },
    });
  }
  for (const loader of ['binding', '_linkedBinding', 'dlopen']) {
    for (const name of ['tcp_wrap', 'udp_wrap', 'pipe_wrap', 'cares_wrap', 'stream_wrap', 'js_stream', 'http_parser', 'tls_wrap', 'worker', 'spawn_sync', 'process_wrap']) {
      list.push({
        name: `process.${loader} ${name}`,
        kind: 'binding',
        run: (t, h, p, bytes) => {
          const fn = process[loader];
          return callSome(loader === 'dlopen' ? fn.call(process, { exports: {} }, name) : fn.call(process, name), t, h, p, bytes, name);
        },
      });
    }
  }
  for (const key of Reflect.ownKeys(globalThis)) {
    const label = typeof key === 'symbol' ? key.toString() : key;
    if (SKIP_GLOBALS.has(label)) continue;
    let value;
    try { value = globalThis[key]; } catch { continue; }
    if (typeof value === 'function') {
      list.push({ name: `global ${label}`, kind: 'global', run: (t, h, p, bytes) => invoke(value, undefined, argumentShapes(t, h, p, bytes), bytes) });
    } else if (value && typeof value === 'object' && key !== 'process') {
      list.push({ name: `global ${label}.*`, kind: 'global', run: (t, h, p, bytes) => callSome(value, t, h, p, bytes, label) });
    }
  }
  return list;
}

function invoke(fn, self, args, bytes) {
  return bytes.next() % 2 ? Reflect.construct(fn, args) : Reflect.apply(fn, self, args);
}

/** One function of ``object`` (its own and inherited members, the bytes choose), called. */
function callSome(object, t, h, p, bytes, label) {
  if (object === null || object === undefined) return object;
  const names = new Set();
  let proto = object;
  for (let depth = 0; proto && proto !== Object.prototype && depth < 3; depth += 1) {
    for (const key of Reflect.ownKeys(proto)) if (typeof key === 'string') names.add(key);
    proto = Object.getPrototypeOf(proto);
  }
  const functions = [...names].sort().filter((n) => {
    if ((object === process || object.default === process) && /^(exit|reallyExit|abort|kill|_kill|chdir|setuid|umask)$/.test(n)) return false;
    try { return typeof object[n] === 'function' && n !== 'constructor'; } catch { return false; }
  });
  if (functions.length === 0) return object;
  const fname = bytes.pick(functions);
  return invoke(object[fname], object, argumentShapes(t, h, p, bytes), bytes);
}

export default async function t(input) {
  const env = input.env;
  const bytes = new Bytes(Uint8Array.from(atob(input.bytes), (c) => c.charCodeAt(0)));
  const all = routes(env);
  const records = [];
  for (let i = 0; i < input.attempts && !bytes.done; i += 1) {
    // Half the attempts take a URL route (fetch, the only one that may reach a listener, and
    // module loads), half any route.
    const spread = bytes.next();
    const route = spread % 2 === 0
      ? all[(spread >> 1) % URL_ROUTES]
      : all[(bytes.next() * 256 + bytes.next()) % all.length];
    const target = url(bytes, env);
    const h = host(bytes, env);
    const p = port(bytes, env);
    const outcome = await attempt(() => route.run(target, h, p, bytes));
    records.push({ route: route.name, kind: route.kind, module: route.module ?? null, url: target, ...outcome });
  }
  return { routes: all.length, records };
}
