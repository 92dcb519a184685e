// Address classification for the network guard, compiled from splice_build/schemas/netpolicy.json
// (the same data Python reads in splice_build/security/addresses.py). IPv4 and IPv6 ranges are
// separate lists: an IPv4 address is only ever compared with IPv4 ranges, so the IPv4-mapped
// and NAT64 IPv6 ranges are refused as ranges, never by unwrapping the embedded address.
//
// These functions run while the tool's code is live and may have patched String.prototype,
// Array.prototype or iterators: they use only indexing, `.length`, arithmetic and typed arrays.
import { freeze } from './pristine.mjs';

function hexValue(code) {
  if (code >= 48 && code <= 57) return code - 48;
  if (code >= 97 && code <= 102) return code - 87;
  if (code >= 65 && code <= 70) return code - 55;
  return -1;
}

// ASCII code of each printable character (avoids String.prototype.charCodeAt).
const CODE_OF = (() => {
  const table = Object.create(null);
  for (let c = 32; c < 127; c += 1) table[String.fromCharCode(c)] = c;
  return freeze(table);
})();

function codeAt(text, i) {
  const code = CODE_OF[text[i]];
  return code === undefined ? -1 : code;
}

/** Strict dotted-quad (four decimal parts 0-255, no leading zeros) → uint32, or -1. */
export function parseIPv4(text) {
  if (typeof text !== 'string') return -1;
  let value = 0;
  let part = -1;
  let digits = 0;
  let dots = 0;
  for (let i = 0; i <= text.length; i += 1) {
    const code = i === text.length ? 46 : codeAt(text, i);
    if (code === 46) {
      if (digits === 0) return -1;
      value = value * 256 + part;
      dots += 1;
      part = -1;
      digits = 0;
      continue;
    }
    if (code < 48 || code > 57) return -1;
    if (digits > 0 && part === 0) return -1; // leading zero
    part = (part < 0 ? 0 : part) * 10 + (code - 48);
    digits += 1;
    if (part > 255) return -1;
  }
  return dots === 4 ? value : -1;
}

/**
 * IPv6 text (``::`` compression, an embedded dotted IPv4 tail, a ``%zone`` suffix ignored)
 * → Uint16Array(8) of its pieces, or null.
 */
export function parseIPv6(text) {
  if (typeof text !== 'string') return null;
  let end = text.length;
  for (let i = 0; i < text.length; i += 1) {
    if (text[i] === '%') {
      end = i;
      break;
    }
  }
  const pieces = new Uint16Array(8);
  let piece = 0;
  let compress = -1;
  let i = 0;
  if (text[0] === ':') {
    if (text[1] !== ':') return null;
    i = 2;
    piece = 1;
    compress = 1;
    if (i === end) return pieces;
  }
  while (i < end) {
    if (piece === 8) return null;
    if (text[i] === ':') {
      if (compress >= 0) return null;
      i += 1;
      piece += 1;
      compress = piece;
      if (i === end) break;
      continue;
    }
    let value = 0;
    let length = 0;
    while (length < 4 && i < end && hexValue(codeAt(text, i)) >= 0) {
      value = value * 16 + hexValue(codeAt(text, i));
      i += 1;
      length += 1;
    }
    if (text[i] === '.') {
      if (length === 0 || piece > 6) return null;
      const tailStart = i - length;
      let tail = '';
      for (let j = tailStart; j < end; j += 1) tail += text[j];
      const v4 = parseIPv4(tail);
      if (v4 < 0) return null;
      pieces[piece] = Math.floor(v4 / 65536);
      pieces[piece + 1] = v4 % 65536;
      piece += 2;
      i = end;
      break;
    }
    if (length === 0) return null;
    pieces[piece] = value;
    piece += 1;
    if (i === end) break;
    if (text[i] !== ':') return null;
    i += 1;
    if (i === end) return null;
  }
  if (compress >= 0) {
    let swaps = piece - compress;
    piece = 7;
    while (piece !== 0 && swaps > 0) {
      const from = compress + swaps - 1;
      const tmp = pieces[from];
      pieces[from] = pieces[piece];
      pieces[piece] = tmp;
      piece -= 1;
      swaps -= 1;
    }
  } else if (piece !== 8) {
    return null;
  }
  return pieces;
}

function v4Range(cidr) {
  const slash = cidr.indexOf('/');
  const base = parseIPv4(cidr.slice(0, slash));
  const bits = Number(cidr.slice(slash + 1));
  if (base < 0 || !(bits >= 0 && bits <= 32)) throw new Error(`bad IPv4 range ${cidr}`);
  return freeze({ base, bits });
}

function v6Range(cidr) {
  const slash = cidr.indexOf('/');
  const base = parseIPv6(cidr.slice(0, slash));
  const bits = Number(cidr.slice(slash + 1));
  if (base === null || !(bits >= 0 && bits <= 128)) throw new Error(`bad IPv6 range ${cidr}`);
  return freeze({ base, bits });
}

function inV4(value, range) {
  if (range.bits === 0) return true;
  const size = 2 ** (32 - range.bits);
  return Math.floor(value / size) === Math.floor(range.base / size);
}

function inV6(pieces, range) {
  let bits = range.bits;
  for (let k = 0; k < 8 && bits > 0; k += 1) {
    const take = bits >= 16 ? 16 : bits;
    const size = 2 ** (16 - take);
    if (Math.floor(pieces[k] / size) !== Math.floor(range.base[k] / size)) return false;
    bits -= take;
  }
  return true;
}

function compileList(list, make) {
  const out = [];
  for (let k = 0; k < list.length; k += 1) {
    const item = list[k];
    out[k] = make(typeof item === 'string' ? item : item.cidr);
  }
  return freeze(out);
}

/** Compile the policy's ranges once, at host start (before any tool code runs). */
export function compileRanges(policy) {
  return freeze({
    refusedV4: compileList(policy.refused.ipv4, v4Range),
    refusedV6: compileList(policy.refused.ipv6, v6Range),
    loopbackV4: compileList(policy.loopback.ipv4, v4Range),
    loopbackV6: compileList(policy.loopback.ipv6, v6Range),
  });
}

function matches(address, v4List, v6List) {
  const v4 = parseIPv4(address);
  if (v4 >= 0) {
    for (let k = 0; k < v4List.length; k += 1) if (inV4(v4, v4List[k])) return true;
    return false;
  }
  const v6 = parseIPv6(address);
  if (v6 === null) return null;
  for (let k = 0; k < v6List.length; k += 1) if (inV6(v6, v6List[k])) return true;
  return false;
}

/** True when ``address`` is an IP address outside every refused range (non-IP text: false). */
export function isPublicAddress(ranges, address) {
  return matches(address, ranges.refusedV4, ranges.refusedV6) === false;
}

/** True when ``address`` is a loopback address (the only answers a `localhost` grant accepts). */
export function isLoopbackAddress(ranges, address) {
  return matches(address, ranges.loopbackV4, ranges.loopbackV6) === true;
}

/** True when ``text`` is an IPv4 or IPv6 literal (without brackets). */
export function isIPLiteral(text) {
  return parseIPv4(text) >= 0 || parseIPv6(text) !== null;
}

/** A canonical key for an address (compares `::ffff:1.2.3.4` and `::ffff:102:304` equal). */
export function addressKey(address) {
  const v4 = parseIPv4(address);
  if (v4 >= 0) return `4:${v4}`;
  const v6 = parseIPv6(address);
  if (v6 === null) return null;
  let key = '6';
  for (let k = 0; k < 8; k += 1) key += `:${v6[k]}`;
  return key;
}
