// Reading a response body for the guarded fetch: bounded while it arrives, then decoded
// (gzip, deflate, br; listed in netpolicy.json) with the decoded size bounded too, so a
// decompression bomb stops at the limit. Failures are `TypeError('fetch failed')`.
import { fetchFailed } from './net_target.mjs';
import { bufferConcat, freeze } from './pristine.mjs';

const getBuiltin = process.getBuiltinModule;
const TOO_LARGE = 'ERR_SPLICE_RESPONSE_TOO_LARGE';

function tooLarge(limit) {
  return fetchFailed(`response body larger than ${limit} bytes`, TOO_LARGE);
}

function codings(header) {
  const out = [];
  if (typeof header !== 'string') return out;
  let current = '';
  for (let i = 0; i <= header.length; i += 1) {
    const ch = i === header.length ? ',' : header[i];
    if (ch === ',') {
      if (current !== '') out[out.length] = current;
      current = '';
    } else if (ch !== ' ' && ch !== '\t') {
      current += ch >= 'A' && ch <= 'Z' ? String.fromCharCode(ch.codePointAt(0) + 32) : ch;
    }
  }
  return out;
}

function decodeOnce(zlib, coding, data, limit) {
  const options = freeze({ maxOutputLength: limit });
  if (coding === 'gzip' || coding === 'x-gzip') return zlib.gunzipSync(data, options);
  if (coding === 'br') return zlib.brotliDecompressSync(data, options);
  // deflate: the zlib wrapper (RFC 1950) is what the name means; some servers send raw
  // deflate (RFC 1951) instead, recognised by the missing zlib header (as browsers do).
  if (data.length > 0 && (data[0] & 0x0f) === 8) return zlib.inflateSync(data, options);
  return zlib.inflateRawSync(data, options);
}

/** Decode ``data`` per the Content-Encoding header (last coding first); unknown: as is. */
export function decodeBody(data, contentEncoding, policy) {
  const limit = policy.response.maxBytes;
  const list = codings(contentEncoding);
  let out = data;
  for (let i = list.length - 1; i >= 0; i -= 1) {
    let known = false;
    for (let k = 0; k < policy.response.decodings.length; k += 1) {
      if (policy.response.decodings[k] === list[i]) known = true;
    }
    if (!known) return out;
    const zlib = getBuiltin('node:zlib');
    try {
      out = decodeOnce(zlib, list[i], out, limit);
    } catch (err) {
      if (err && err.code === 'ERR_BUFFER_TOO_LARGE') throw tooLarge(limit);
      throw fetchFailed(`could not decode a ${list[i]} response body`, err && err.code);
    }
  }
  return out;
}

/** Collect ``res`` (an IncomingMessage) up to the policy's size; resolves a Buffer. */
export function readBody(res, policy) {
  const limit = policy.response.maxBytes;
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    res.on('data', (chunk) => {
      size += chunk.length;
      if (size > limit) {
        reject(tooLarge(limit)); // first: destroy() emits 'aborted' synchronously
        res.destroy();
        return;
      }
      chunks[chunks.length] = chunk;
    });
    res.on('end', () => resolve(bufferConcat(chunks, size)));
    res.on('error', (err) => reject(err));
    res.on('aborted', () => reject(fetchFailed('the connection was closed early')));
  });
}
