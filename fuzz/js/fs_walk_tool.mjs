// The tool of the fs_walk fuzz target (fuzz/sandbox_targets.py): a hostile tool that turns
// bytes into calls of every function of `node:fs`, `fs/promises`, a FileHandle and a Dir,
// enumerated from the module objects when it starts (a function a later Node adds is called
// too), with arguments of every shape a path, a descriptor, an option or a callback can take.
// It catches everything it can and reports what each call gave back, summarised; the target
// judges (what changed on disk, which codes came back, whether a secret was seen).
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import { relative } from 'node:path';

const names = (o) => Object.keys(o).filter((k) => typeof o[k] === 'function').sort();
// Watching keeps handles that outlive a call and report nothing the walk needs.
const SKIP = new Set(['watch', 'watchFile', 'unwatchFile']);
const FS = names(fs).filter((k) => !SKIP.has(k));
const PROMISES = names(fsp).filter((k) => !SKIP.has(k));
const POLLUTABLE = [
  'recursive', 'mode', 'flag', 'flags', 'filter', 'force', 'errorOnExist', 'dereference',
  'encoding', 'withFileTypes', 'flush', 'throwIfNoEntry', 'href', 'protocol', 'pathname',
  'hostname', 'fd', 'start', 'end', 'autoClose', 'fs', 'preserveTimestamps', 'verbatimSymlinks',
  'retryDelay', 'maxRetries', 'bigint', 'persistent', 'signal', 'buffer', 'length', 'position',
];
const ODD_STRINGS = ['', '.', '..', '/', '\u0000', 'a\u0000b', '%2e%2e', '~', '\\..\\'];

let fresh = 0;
let fds = [];
let handles = [];
let dirs = [];
let seen = [];
let polluted = new Set();

/** ``v`` as plain JSON, short: what the tool saw of a call's result or error. */
function summary(v, depth = 0) {
  if (v === null || v === undefined) return v === null ? null : 'undefined';
  const t = typeof v;
  if (t === 'number' || t === 'boolean') return Number.isFinite(v) || t === 'boolean' ? v : String(v);
  if (t === 'bigint') return `${v}n`;
  if (t === 'string') return v.slice(0, 400);
  if (t === 'function') return `function ${v.name}`;
  if (t === 'symbol') return String(v);
  if (v instanceof Error) {
    return { error: String(v.code ?? v.name), message: String(v.message).slice(0, 300) };
  }
  if (ArrayBuffer.isView(v)) {
    return { bytes: Buffer.from(v.buffer, v.byteOffset, Math.min(v.byteLength, 400)).toString('latin1') };
  }
  if (v instanceof ArrayBuffer) return { bytes: Buffer.from(v.slice(0, 400)).toString('latin1') };
  if (depth > 2) return 'object';
  if (Array.isArray(v)) return v.slice(0, 20).map((x) => summary(x, depth + 1));
  if (v instanceof fs.Stats) return { mode: v.mode, size: v.size, nlink: v.nlink, uid: v.uid };
  if (v instanceof fs.Dirent) return { dirent: v.name };
  const out = { kind: v.constructor?.name ?? 'object' };
  for (const k of Object.keys(v).slice(0, 12)) {
    const d = Object.getOwnPropertyDescriptor(v, k);
    if (d && 'value' in d && !k.startsWith('_')) out[k] = summary(d.value, depth + 1);
  }
  return out;
}

/** Listen to what an object gives back later (a stream's data and errors, a watcher). */
function listen(v) {
  if (v === null || typeof v !== 'object' || typeof v.on !== 'function') return;
  try {
    v.on('error', (e) => seen.push(summary(e)));
    if (typeof v.read === 'function' && typeof v.pipe === 'function') {
      v.on('data', (d) => seen.push(summary(d)));
    }
  } catch (e) {
    seen.push(summary(e));
  }
}

class Bytes {
  constructor(data) {
    this.data = data;
    this.at = 0;
  }

  get done() { return this.at >= this.data.length; }

  next() { return this.at < this.data.length ? this.data[this.at++] : 0; }

  pick(list) { return list[(this.next() | (this.next() << 8)) % list.length]; }
}

function paths(p) {
  const ws = `${p.project}/workspace`;
  const out = `${p.project}/out`;
  return [
    `${p.project}/secret.txt`, `${p.project}/splice.json`, p.project, ws, `${ws}/r.txt`,
    `${ws}/sub`, `${ws}/sub/deep.txt`, `${ws}/setid`, `${ws}/inner`, `${ws}/up`,
    `${ws}/up/secret.txt`, out, `${out}/a`, `${out}/b`, `${out}/d`, `${out}/d/x`, `${out}/new`,
    `${out}/leak`, `${out}/updir`, `${out}/updir/s.txt`, `${out}/../secret.txt`,
    `${out}/d/../../secret.txt`, `${out}/./a/..`, `${p.outside}/o.txt`, p.outside,
    `${p.project}/private/s.txt`, `${p.project}/private`, '/', '/etc/passwd', '/proc/self/fd/3',
    '/proc/self/fd/0', `/proc/self/root${p.project}/secret.txt`, '/proc/self/cwd/secret.txt',
    '/dev/fd/3', '/proc/self/mem', '/tmp', `${out}/${'x'.repeat(300)}`,
    `${out}/${'./'.repeat(2100)}a`, `${ws}//r.txt`, `${out}/a/`, `${p.package}/manifest.json`,
    `${ws}/../secret.txt`, `${ws}\u0000/r.txt`,
  ];
}

function percentEncoded(path, r) {
  const every = r.next() % 2 === 0;
  return [...path].map((c) => (c !== '/' && (every || c === '.') ? `%${c.charCodeAt(0).toString(16).padStart(2, '0')}` : c)).join('');
}

const MODES = [0o777, 0o4755, 0o6777, 0o2755, 0o644, 0o7777, '4755', '0o777', 0o1777, 0o666];
const OPTIONS = [
  () => ({ mode: 0o4755 }), () => ({ mode: 0o2777, flag: 'a' }), () => ({ mode: '6755', flag: 'wx' }),
  () => ({ recursive: true }), () => ({ recursive: true, force: true }),
  () => ({ flag: 'a+' }), () => ({ flag: 'w', mode: 0o4777 }), () => ({ mode: '6777' }),
  () => ({ encoding: 'buffer' }), () => ({ withFileTypes: true, recursive: true }),
  () => ({ dereference: true, recursive: true }), () => ({ flush: true, mode: 0o777 }),
  () => ({ throwIfNoEntry: false, bigint: true }), () => ({ errorOnExist: false, force: true }),
  () => ({ filter: () => true, recursive: true }), () => ({ filter: async () => true }),
  () => ({ verbatimSymlinks: true, recursive: true }), () => ({ preserveTimestamps: true }),
  () => ({ fd: fds[0] ?? 3, autoClose: true }), () => ({ start: 0, end: 10 }),
  () => Object.create({ recursive: true }), () => ({ __proto__: null, recursive: true }),
  () => ({ get recursive() { this.n = (this.n ?? 0) + 1; return this.n % 2 === 1; } }),
  () => ({ get mode() { this.n = (this.n ?? 0) + 1; return this.n === 1 ? 0o600 : 0o4777; } }),
  () => ({ encoding: 'latin1', flag: 'r' }), () => 'utf8', () => 'buffer', () => ({ maxRetries: 1 }),
  () => ({ exclude: () => false }), () => ({ cwd: '/' }),
];

function urlOf(path, r) {
  const url = new URL('file:///');
  url.pathname = path;
  if (r.next() % 4 === 0) {
    // A URL whose own pathname tells the host one thing and Node another.
    let n = 0;
    const other = r.pick(paths(ctxPaths));
    Object.defineProperty(url, 'pathname', { get() { n += 1; return n % 2 ? path : other; } });
  }
  return url;
}

let ctxPaths;

/** A path in one of its shapes, or a descriptor. */
function pathArg(r) {
  const all = paths(ctxPaths);
  switch (r.next() % 14) {
    // A name new in the write grant (a mode is given only to a file a call creates).
    case 11: case 12: fresh += 1; return `${ctxPaths.project}/out/${r.pick(['', 'd/'])}n${fresh}`;
    case 13: return Buffer.from(`${ctxPaths.project}/out/n${fresh}`);
    case 9: return r.pick([...twins(ctxPaths).keys()]);
    case 10: return Buffer.from(r.pick([...twins(ctxPaths).keys()]));
    case 0: return Buffer.from(r.pick(all));
    case 1: return urlOf(r.pick(all), r);
    case 2: return new URL(`file://${percentEncoded(r.pick(all), r)}`);
    case 3: return relative(process.cwd(), r.pick(all)) || '.';
    case 4: return r.pick(fds.length ? fds : [3, 4, 5]);
    default: return r.pick(all);
  }
}

// What the main calls take, position by position (p a path, f open flags, m a mode, o
// options, d data, u an owner id, n a number, t a time, F a descriptor, b a buffer); every
// function, these and the rest, is also called with arguments of any shape.
const SIGNATURES = {
  open: 'pfm', writeFile: 'pdo', appendFile: 'pdo', mkdir: 'po', mkdtemp: 'po', chmod: 'pm',
  lchmod: 'pm', fchmod: 'Fm', chown: 'puu', lchown: 'puu', fchown: 'Fuu', copyFile: 'ppn',
  cp: 'ppo', rename: 'pp', link: 'pp', symlink: 'pp', truncate: 'pn', ftruncate: 'Fn',
  utimes: 'ptt', lutimes: 'ptt', futimes: 'Ftt', write: 'Fdnnn', writev: 'Fbn', read: 'Fbnnn',
  readv: 'Fbn', rm: 'po', rmdir: 'po', createWriteStream: 'po', createReadStream: 'po',
  readFile: 'po', readdir: 'po', opendir: 'po', openAsBlob: 'po', unlink: 'p', access: 'pn',
};

function typed(kind, r) {
  switch (kind) {
    case 'p': return pathArg(r);
    case 'f': return r.pick(['w', 'wx', 'a', 'r+', 'as+', 'w+', fs.constants.O_CREAT | fs.constants.O_WRONLY]);
    case 'm': return r.pick(MODES);
    case 'o': return r.pick(OPTIONS)();
    case 'd': return r.pick(['PLANTED', Buffer.from('PLANTED\n')]);
    case 'u': return r.pick([0, 65534, -1, process.geteuid(), 1]);
    case 'n': return r.pick([0, 1, 7, -1, 2 ** 31, null, fs.constants.COPYFILE_EXCL, fs.constants.COPYFILE_FICLONE]);
    case 't': return r.pick([0, 1e9, new Date(0), '1', -1]);
    case 'F': return r.pick(fds.length ? fds : [0, 1, 2, 3, 4, 5]);
    default: return r.pick([Buffer.alloc(16), [Buffer.alloc(8), Buffer.from('PLANTED')]]);
  }
}

/** What follows a path: another path (copy, rename, link), data, options, a mode. */
function secondArg(r) {
  switch (r.next() % 7) {
    case 0: case 1: return pathArg(r);
    case 2: return r.pick(['PLANTED', Buffer.from('PLANTED\n')]);
    case 3: return r.pick(OPTIONS)();
    case 4: return r.pick(MODES);
    default: return arg(r);
  }
}

function arg(r) {
  const all = paths(ctxPaths);
  const shape = r.next() % 24;
  switch (shape) {
    case 0: case 1: case 2: return r.pick(all);
    case 3: return Buffer.from(r.pick(all));
    case 4: return urlOf(r.pick(all), r);
    case 5: return new URL(`file://${percentEncoded(r.pick(all), r)}`);
    case 6: return relative(process.cwd(), r.pick(all)) || '.';
    case 7: return r.pick(fds.length && r.next() % 3 ? fds : [0, 1, 2, 3, 4, 5, 7, 9, 12, 20, -1, 2 ** 31]);
    case 8: return handles.length ? r.pick(handles) : r.pick(all);
    case 9: return r.pick(OPTIONS)();
    case 10: {
      const f = (...a) => seen.push(summary(a));
      return f;
    }
    case 11: return r.pick(MODES);
    case 12: return r.pick(['PLANTED', Buffer.from('PLANTED\n'), new Uint8Array([80, 76]), 'x'.repeat(5000)]);
    case 13: return r.pick([0, 1, 5, 64, -1, 2 ** 53, 0.5, 'r', 'w', 'a', 'wx', 'r+', 'as+', 'w+', fs.constants.O_CREAT | fs.constants.O_WRONLY | fs.constants.O_TRUNC, fs.constants.O_RDWR | fs.constants.O_NOFOLLOW, fs.constants.COPYFILE_EXCL, fs.constants.COPYFILE_FICLONE_FORCE]);
    case 14: return r.pick([0, 65534, -1, process.geteuid(), process.getegid(), 1]);
    case 15: return r.pick([undefined, null, true, false, {}, [], Symbol('s')]);
    case 16: {
      const p = r.pick(all);
      return { href: `file://${p}`, protocol: 'file:', pathname: p, hostname: '', auth: undefined, path: undefined };
    }
    case 17: return new Uint8Array(Buffer.from(r.pick(all)));
    case 18: return new Date(r.next() * 1e9);
    case 19: return Buffer.alloc(r.pick([0, 1, 64, 4096]));
    case 20: return [Buffer.alloc(16), Buffer.from('PLANTED')];
    case 21: return r.pick(ODD_STRINGS);
    case 22: return dirs.length ? r.pick(dirs) : r.pick(all);
    default: return `${r.pick(all)}/${r.pick(['..', '.', 'x', '../..', 'a/../..'])}`;
  }
}

/** Await what a call gave: its promise, or the callbacks it was given (at most ``ms``). */
function settled(result, calls, ms) {
  const waits = [];
  if (result !== null && typeof result === 'object' && typeof result.then === 'function') {
    waits.push(Promise.resolve(result).then((v) => ({ resolved: v }), (e) => ({ rejected: e })));
  }
  waits.push(...calls);
  if (waits.length === 0) return Promise.resolve(null);
  return Promise.race([
    Promise.all(waits),
    new Promise((resolve) => { setTimeout(() => resolve('pending'), ms); }),
  ]);
}

/** The call the next bytes describe: a function, its arguments, where it is called. */
async function nextCall(r) {
  const kind = r.next() % 12;
  if (kind === 11 && r.next() % 4 === 0) {
    // Relative paths resolve against a working directory the tool may move.
    const to = r.next() % 2 ? r.pick(paths(ctxPaths)) : r.pick(ODD_STRINGS);
    try {
      process.chdir(to);
      return { op: `chdir ${to}`.slice(0, 200), cwd: process.cwd() };
    } catch (e) {
      return { op: `chdir ${to}`.slice(0, 200), thrown: summary(e) };
    }
  }
  if (kind >= 10) {
    const key = r.pick(POLLUTABLE);
    if (r.next() % 3 === 0) {
      delete Object.prototype[key];
      polluted.delete(key);
      return { name: `unpollute ${key}` };
    }
    const value = arg(r);
    Object.defineProperty(Object.prototype, key, { value, writable: true, configurable: true, enumerable: false });
    polluted.add(key);
    console.error(`pollute ${key} ${describe([value])}`);
    return { name: `pollute ${key}` };
  }
  let target;
  let name;
  if (kind <= 4 || kind === 9) {
    target = fs;
    name = r.pick(FS);
  } else if (kind <= 6) {
    target = fsp;
    name = r.pick(PROMISES);
  } else if (kind === 7 && handles.length) {
    target = r.pick(handles);
    name = r.pick(Object.getOwnPropertyNames(Object.getPrototypeOf(target)).filter((k) => k !== 'constructor'));
  } else if (kind === 8 && dirs.length) {
    target = r.pick(dirs);
    name = r.pick(Object.getOwnPropertyNames(Object.getPrototypeOf(target)).filter((k) => k !== 'constructor'));
  } else {
    // Something to hold: a descriptor, a FileHandle or a Dir of a path of the tree.
    const path = r.pick(paths(ctxPaths));
    const flags = r.pick(['r', 'r+', 'a', 'w', 'wx', 'as+']);
    const record = { op: `hold ${path} ${flags}`.slice(0, 200) };
    try {
      const which = r.next() % 3;
      if (which === 0) fds.push(fs.openSync(path, flags));
      else if (which === 1) handles.push(await fsp.open(path, flags));
      else dirs.push(fs.opendirSync(path));
    } catch (e) {
      record.thrown = summary(e);
    }
    return record;
  }
  const base = name.replace(/Sync$/, '');
  if ((target === fs || target === fsp) && SIGNATURES[base] !== undefined && r.next() % 2 === 0) {
    const args = [...SIGNATURES[base]].map((kind) => typed(kind, r));
    const given = args.length - (r.next() % 2);
    args.length = Math.max(1, given);
    if (target === fs && base === name) args.push(() => {});
    return { target, name, args };
  }
  const fn = target[name];
  // Mostly one to four arguments (the host's guards declare none), the first a path (or a
  // descriptor), the last a callback for fs's callback forms; else any number of any shape.
  const plausible = r.next() % 4 !== 0;
  const count = plausible ? Math.min(fn.length, 6) || 1 + (r.next() % 4) : r.next() % 6;
  const callbackForm = target === fs && !name.endsWith('Sync') && /^[a-z]/.test(name);
  const args = [];
  if (plausible && callbackForm && count === 1) args.push(pathArg(r));
  // From a file the tool may only read (or not at all) to its write grant: copies, links,
  // renames of the set-user-ID program, the links and the secrets.
  if (plausible && count >= 2 && (target === fs || target === fsp) && r.next() % 3 === 0) {
    const p = ctxPaths;
    args.push(r.pick([`${p.project}/workspace/setid`, `${p.project}/workspace/r.txt`,
      `${p.project}/workspace`, `${p.project}/workspace/inner`, `${p.project}/workspace/up`,
      `${p.project}/secret.txt`, `${p.outside}/o.txt`, `${p.project}/out/leak`]));
    args.push(r.pick([`${p.project}/out/new`, `${p.project}/out/a`, `${p.project}/out/d`,
      `${p.project}/out/d/copy`, `${p.project}/out/updir`]));
  }
  for (let i = args.length; i < count; i += 1) {
    if (plausible && i === count - 1 && callbackForm) args.push(() => {});
    else if (plausible && i === 0 && target !== fs && target !== fsp) args.push(arg(r));
    else if (plausible && i === 0) args.push(r.next() % 5 === 0 ? arg(r) : pathArg(r));
    else if (plausible && i === 1) args.push(secondArg(r));
    else args.push(arg(r));
  }
  return { target, name, args };
}

function describe(args) {
  return args.map((a) => {
    if (typeof a === 'function') return 'callback';
    if (a instanceof URL) return `URL ${a.href}`.slice(0, 200);
    if (typeof a === 'string') return a.slice(0, 200);
    if (Buffer.isBuffer(a)) return `Buffer ${a.toString('latin1').slice(0, 200)}`;
    if (a !== null && typeof a === 'object') return `${a.constructor?.name ?? 'object'} ${Object.keys(a).join(',')}`;
    return String(a);
  });
}

/** The path outside the grants that does not exist, for one that does: a refused path gives
 * the same answer either way (docs/security.md, File access). */
function twins(p) {
  return new Map([
    [`${p.project}/secret.txt`, `${p.project}/missing.txt`],
    [`${p.project}/private/s.txt`, `${p.project}/private/none.txt`],
    [`${p.project}/private`, `${p.project}/nodir`],
    [`${p.outside}/o.txt`, `${p.outside}/none.txt`],
  ]);
}

/** Whether ``a`` answers a second call as it answered the first: no getter of its own (an
 * option that toggles would make the twin another call). */
function stateless(a) {
  if (a === null || (typeof a !== 'object' && typeof a !== 'function')) return true;
  if (typeof a === 'function' || a instanceof URL || ArrayBuffer.isView(a)) return true;
  return Object.values(Object.getOwnPropertyDescriptors(a)).every((d) => 'value' in d);
}

/** ``args`` with their first, their one path (a string or bytes) that has a twin, replaced
 * by it; null when there is no such path or more than one (a path elsewhere may be data:
 * `writeSync(1, path)`). */
function twinArgs(args) {
  const map = twins(ctxPaths);
  const at = [];
  for (let i = 0; i < args.length; i += 1) {
    const a = args[i];
    if (typeof a === 'string' || a instanceof URL || Buffer.isBuffer(a) || a instanceof Uint8Array) at.push(i);
  }
  if (at.length !== 1 || at[0] !== 0 || !args.every(stateless)) return null;
  const a = args[at[0]];
  const text = typeof a === 'string' ? a : Buffer.isBuffer(a) ? a.toString('latin1') : null;
  if (text === null || !map.has(text)) return null;
  const copy = [...args];
  copy[at[0]] = typeof a === 'string' ? map.get(text) : Buffer.from(map.get(text));
  return { args: copy, from: text, to: map.get(text) };
}

/** Call ``target[name]`` with ``raw`` (its callbacks wrapped to be awaited): what it gave. */
async function invoke(target, name, raw) {
  const args = [...raw];
  const calls = [];
  for (let i = 0; i < args.length; i += 1) {
    if (typeof args[i] !== 'function') continue;
    const cb = args[i];
    calls.push(new Promise((resolve) => {
      args[i] = (...results) => {
        cb(...results);
        resolve({ called: results });
      };
    }));
  }
  let result;
  try {
    result = Reflect.apply(target[name], target, args);
  } catch (e) {
    return { thrown: summary(e) };
  }
  listen(result);
  const done = await settled(result, calls, 150);
  const value = done && done !== 'pending' && done[0] && 'resolved' in done[0] ? done[0].resolved : result;
  hold(name, value);
  if (done && done !== 'pending') {
    for (const d of done) if (d && d.called) hold(name, d.called[1]);
  }
  listen(value);
  return { result: summary(result), settled: summary(done) };
}

/** Keep what a call opened: a descriptor, a FileHandle, a Dir. */
function hold(name, value) {
  if (typeof value === 'number' && (name === 'openSync' || name === 'open')) fds.push(value);
  if (value instanceof fs.Dir) dirs.push(value);
  if (value && typeof value === 'object' && typeof value.fd === 'number' && typeof value.readLines === 'function') handles.push(value);
}

async function one(r) {
  const call = await nextCall(r);
  if (call.target === undefined) return call.name === undefined ? call : { op: call.name };
  const { target, name, args } = call;
  const record = { op: name, args: describe(args) };
  // On stderr first: a call that ends the tool leaves its name in the logs.
  console.error(JSON.stringify(record));
  // A handle's or a Dir's method reads its own state again: no twin.
  const twin = target === fs || target === fsp ? twinArgs(args) : null;
  Object.assign(record, await invoke(target, name, args));
  if (record.thrown !== undefined) console.error(JSON.stringify({ thrown: record.thrown.error }));
  if (twin !== null) {
    record.twin = { from: twin.from, to: twin.to, ...(await invoke(target, name, twin.args)) };
  }
  return record;
}

export default async (input, ctx) => {
  ctxPaths = { project: ctx.paths.project, package: ctx.paths.package ?? ctx.paths.project, outside: input.outside };
  if (input.reset) {
    for (const fd of fds) { try { fs.closeSync(fd); } catch { /* closed already */ } }
    for (const h of handles) { try { await h.close(); } catch { /* closed already */ } }
    for (const d of dirs) { try { d.closeSync(); } catch { /* closed already */ } }
    fds = []; handles = []; dirs = []; seen = []; fresh = 0;
    for (const key of polluted) delete Object.prototype[key];
    polluted = new Set();
    // Every input starts in the write grant (the sandbox's own start directory is no grant).
    process.chdir(`${ctx.paths.project}/out`);
    return { fs: FS, promises: PROMISES };
  }
  const r = new Bytes(Buffer.from(input.bytes, 'base64'));
  const records = [];
  for (let i = 0; i < input.ops && !r.done; i += 1) records.push(await one(r));
  // A kept process's next call finds what this one left on Object.prototype, unless cleared.
  if (!input.keepPollution) {
    for (const key of polluted) delete Object.prototype[key];
    polluted = new Set();
  }
  const later = seen;
  seen = [];
  return { records, later };
};
