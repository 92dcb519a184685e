// A tool that replaces, one at a time, every own property of URL, URL.prototype,
// URLSearchParams, URLSearchParams.prototype and the URLSearchParams iterator (what Node's
// module loader looks up while it resolves and reads a module), and the global URL itself,
// each with a liar that answers for another module: getters and methods answer for that
// module's URL, statics return it. The other module is one outside the package (a file the
// tool wrote into its write grant: to redirect an import there) or a packaged one (to pass
// the outside one off as it); a liar lies always, or only to the host's code (directly or
// through node:url), or only to Node's loader. After each replacement, for each of these ways
// of lying, it imports the outside module (the guard must refuse it) and a packaged one (which
// must load as it is); then it puts the property back. It returns, for each property, whether
// the replacement took and what the imports gave.
import fs from 'node:fs';
import { pathToFileURL } from 'node:url';

const apply = Reflect.apply;
const MODES = ['always', 'host', 'loader'];
let mode = 'always';
let decoy = 'outside';
let hostUrl = '';

/** Whether a liar asked now lies: who asks is the first frame below it outside node:url. */
function lies() {
  if (mode === 'always') return true;
  const lines = new Error().stack.split('\n');
  for (let i = 3; i < lines.length; i += 1) {
    if (lines[i].includes('node:internal/url') || lines[i].includes('node:url')) continue;
    const host = lines[i].includes(hostUrl);
    return mode === 'host' ? host : !host && lines[i].includes('node:internal/modules');
  }
  return false;
}

async function attempt(load) {
  try {
    return `loaded: ${(await load()).default}`;
  } catch (e) {
    return (e && e.code) || String(e);
  }
}

/** A descriptor for ``key`` that answers for ``decoys[decoy]`` where the original answered. */
function liar(original, decoys, isStatic) {
  const base = { configurable: true, enumerable: original.enumerable };
  if (!('value' in original)) {
    return {
      ...base,
      get() {
        if (!lies()) return original.get ? apply(original.get, this, []) : undefined;
        return original.get ? apply(original.get, decoys[decoy], []) : decoys[decoy];
      },
      set(v) { if (original.set) apply(original.set, this, [v]); },
    };
  }
  if (typeof original.value !== 'function') {
    return { ...base, writable: true, value: decoys.outside };
  }
  const fn = original.value;
  return {
    ...base,
    writable: true,
    value: isStatic
      ? function lyingStatic(...args) { return lies() ? decoys[decoy] : apply(fn, this, args); }
      : function lying(...args) { return apply(fn, lies() ? decoys[decoy] : this, args); },
  };
}

export default async function t(input, ctx) {
  hostUrl = input.hostUrl;
  const evilPath = `${ctx.paths.project}/w/evil.mjs`;
  fs.writeFileSync(evilPath, "export default 'evil';");
  const evilHref = pathToFileURL(evilPath).href;
  const urls = {
    outside: new URL(evilHref),
    packaged: pathToFileURL(`${ctx.paths.package}/tools/t2.mjs`),
  };
  const params = { outside: new URLSearchParams('evil=1'), packaged: new URLSearchParams('t2=1') };
  const iterators = { outside: params.outside.keys(), packaged: params.packaged.keys() };
  const targets = [
    ['URL', URL, urls, true],
    ['URL.prototype', URL.prototype, urls, false],
    ['URLSearchParams', URLSearchParams, params, true],
    ['URLSearchParams.prototype', URLSearchParams.prototype, params, false],
    ['URLSearchParams iterator', Object.getPrototypeOf(iterators.outside), iterators, false],
    ['globalThis', globalThis, urls, true],
  ];
  const out = [];
  let n = 0;
  for (const [label, target, decoys, isStatic] of targets) {
    const names = label === 'globalThis' ? ['URL', 'URLSearchParams'] : Reflect.ownKeys(target);
    for (const key of names) {
      const name = `${label}.${typeof key === 'symbol' ? key.description : key}`;
      const original = Object.getOwnPropertyDescriptor(target, key);
      const lie = liar(original, decoys, isStatic);
      let replaced = false;
      try {
        Object.defineProperty(target, key, lie);
        replaced = true;
      } catch {
        try {
          target[key] = 'value' in lie ? lie.value : lie.get;
          replaced = Object.getOwnPropertyDescriptor(target, key).value !== original.value;
        } catch {}
      }
      const seen = [];
      for (const d of ['outside', 'packaged']) {
        for (const m of MODES) {
          decoy = d;
          mode = m;
          n += 1;
          const outside = await attempt(() => import(`${evilHref}?k=${n}`));
          const inside = await attempt(() => import(`./t2.mjs?k=${n}`));
          seen.push({ lie: `${d} ${m}`, outside, inside });
        }
      }
      decoy = 'outside';
      mode = 'always';
      if (replaced) Object.defineProperty(target, key, original);
      out.push({ name, replaced, seen });
    }
  }
  return out;
}
