// A breadth-first walk of everything a tool can reach, for tests/runtime/test_reachable.py.
//
// Starts from globalThis, the tool's input and context, import.meta, the namespace of every
// built-in module that loads (the input names every one of Node's `builtinModules`), what
// the host hands back through callbacks (a thenable's resolvers, ctx.log's inspect options)
// and errors (every frame's `this` and function, through Error.prepareStackTrace), then the
// live objects a tool holds once it used what it was granted (a FileHandle, a watcher, a
// zlib stream, hashes and ciphers…). Every own property of every object is followed, getters
// are called on their object, and prototypes are followed. It reports what the test checks:
// which modules loaded, which host functions and which native classes of Node's C++ layer
// are reachable, and what every function constructor does with a string.
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import zlib from 'node:zlib';
import crypto from 'node:crypto';
import { inspect } from 'node:util';

const NATIVE = /\{\s*\[native code\]\s*\}$/;
const sourceOf = (fn) => Function.prototype.toString.call(fn);
const isNative = (fn) => NATIVE.test(sourceOf(fn));

/** Errors the host and Node throw at a tool, each with the frames V8 saw when it was made. */
async function refusals(ctx, add) {
  const previous = Error.prepareStackTrace;
  let frames = 0;
  Error.prepareStackTrace = (error, callSites) => {
    for (const site of callSites) {
      frames += 1;
      add(site.getThis(), 'frame.this');
      add(site.getFunction(), 'frame.function');
    }
    return '';
  };
  const attempts = [
    () => ctx.capability('undeclared.capability', { toJSON() { return {}; } }),
    () => fetch('http://undeclared.invalid/'),
    () => import('node:vm'),
    () => fs.readFileSync(64),
    () => fs.readdirSync('/'),
    () => process.kill(process.pid),
  ];
  const errors = [];
  for (const attempt of attempts) {
    try {
      await attempt();
    } catch (err) {
      void err.stack; // the first read runs prepareStackTrace
      errors.push(err);
    }
  }
  Error.prepareStackTrace = previous;
  return { errors, frames };
}

/** What a tool holds once it used its grants: each with its own C++ object behind it. */
async function liveObjects(file, ctx) {
  return {
    fileHandle: await fsp.open(file),
    dir: fs.opendirSync(ctx.paths.package),
    watcher: fs.watch(ctx.paths.package),
    statWatcher: fs.watchFile(file, () => {}),
    readStream: fs.createReadStream(file),
    fileBlob: await fs.openAsBlob(file),
    gzip: zlib.createGzip(),
    hash: crypto.createHash('sha256'),
    hmac: crypto.createHmac('sha256', 'key'),
    cipher: crypto.createCipheriv('aes-128-cbc', Buffer.alloc(16), Buffer.alloc(16)),
    sign: crypto.createSign('sha256'),
    ecdh: crypto.createECDH('prime256v1'),
    keyPair: crypto.generateKeyPairSync('ed25519'),
    broadcast: new BroadcastChannel('walk'),
    channel: new MessageChannel(),
    decoder: new TextDecoder('latin1'),
    compression: new CompressionStream('gzip'),
    timer: setTimeout(() => {}, 0),
    immediate: setImmediate(() => {}),
  };
}

async function close(file, live) {
  live.dir.closeSync();
  live.watcher.close();
  fs.unwatchFile(file);
  live.readStream.destroy();
  live.broadcast.close();
  live.channel.port1.close();
  await live.fileHandle.close();
}

async function walk(input, ctx, resolvers) {
  const seen = new Map();
  const queue = [];
  const add = (value, path) => {
    if ((typeof value !== 'object' && typeof value !== 'function') || value === null) return;
    if (seen.has(value)) return;
    // A getter's rejected promise (a stream's `closed`) must not end the walk as unhandled.
    if (value instanceof Promise) Promise.prototype.then.call(value, undefined, () => {});
    seen.set(value, { path, live: false });
    queue.push(value);
  };
  const follow = () => {
    for (let i = 0; i < queue.length; i += 1) {
      const value = queue[i];
      const { path } = seen.get(value);
      add(Object.getPrototypeOf(value), `${path}.__proto__`);
      for (const key of Reflect.ownKeys(value)) {
        const name = typeof key === 'symbol' ? `[${key.description}]` : key;
        const d = Reflect.getOwnPropertyDescriptor(value, key);
        if (d === undefined) continue;
        if ('value' in d) {
          add(d.value, `${path}.${name}`);
          continue;
        }
        add(d.get, `${path}.get ${name}`);
        add(d.set, `${path}.set ${name}`);
        try {
          if (d.get) add(Reflect.apply(d.get, value, []), `${path}.${name}`);
        } catch {
          // A getter that needs another receiver: its function is walked anyway.
        }
      }
    }
    queue.length = 0;
  };

  const modules = {};
  for (const name of input.modules) {
    const id = name.startsWith('node:') ? name : `node:${name}`;
    try {
      add(await import(id), id);
      modules[name] = 'loaded';
    } catch (err) {
      modules[name] = String(err && err.code);
    }
  }
  add(globalThis, 'globalThis');
  add(input, 'input');
  add(ctx, 'ctx');
  add(import.meta, 'import.meta');
  add(resolvers, 'then');
  ctx.log({ [inspect.custom]: (...args) => { add(args, 'ctx.log.inspect'); return 'walk'; } });
  const { errors, frames } = await refusals(ctx, add);
  add(errors, 'errors');
  follow();
  const surface = seen.size;

  const file = `${ctx.paths.package}/SKILL.md`;
  const live = await liveObjects(file, ctx);
  const before = new Set(seen.keys());
  add(live, 'live');
  follow();
  for (const [value, entry] of seen) if (!before.has(value)) entry.live = true;
  await close(file, live);

  const host = fs.readFileSync(process.argv[1], 'utf8');
  const report = {
    objects: seen.size, surface, frames, functions: 0, nativeFunctions: 0, modules,
    hostFunctions: [], nativeClasses: [], functionConstructors: [], env: Object.keys(process.env),
  };
  for (const [value, { path, live: fromLive }] of seen) {
    if (typeof value !== 'function') continue;
    report.functions += 1;
    const native = isNative(value);
    const entry = { name: String(value.name), path };
    if (!native) {
      if (host.includes(sourceOf(value))) report.hostFunctions.push(entry);
      continue;
    }
    report.nativeFunctions += 1;
    // A function constructor is Function or has it as its [[Prototype]] (AsyncFunction…).
    if (value === Function || Object.getPrototypeOf(value) === Function) {
      let outcome = 'made a function';
      try {
        value('return 1');
      } catch (err) {
        outcome = err instanceof EvalError ? 'EvalError' : `${err && err.name}`;
      }
      report.functionConstructors.push({ ...entry, outcome });
      continue;
    }
    const prototype = Reflect.getOwnPropertyDescriptor(value, 'prototype');
    // A native class of Node's C++ layer: one a tool reaches only through an object it holds
    // or a prototype, never as a global or a module's export (nor a member of one).
    const exported = /^(globalThis|node:[\w/]+)(\.[\w$]+){1,2}$/.test(path);
    const accessor = /\.(get|set) [^.]*$/.test(path);
    if (prototype && typeof prototype.value === 'object' && !exported && !accessor) {
      report.nativeClasses.push({ ...entry, live: fromLive });
    }
  }
  return report;
}

export default function reachWalk(input, ctx) {
  // Returned as a thenable: the host's await hands its resolvers to `then`, and they are
  // walked with the rest.
  return {
    then(resolve, reject) {
      walk(input, ctx, [resolve, reject]).then(resolve, reject);
    },
  };
}
