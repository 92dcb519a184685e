// The tool's fetch: a WHATWG fetch whose requests are performed by the parent (PROTOCOL.md,
// "fetch"; docs/network-security.md). The host holds no network and decides nothing about
// it: it turns fetch(input, init) into frames, and the parent's answers into a Response
// whose body streams in chunks the host asks for (credit), so neither side buffers more
// than a few chunks. A refusal rejects with `code: 'ERR_ACCESS_DENIED'` (and `reason`), a
// failure with `TypeError('fetch failed')` whose `cause` names what happened; an AbortSignal
// rejects with its reason and cancels the request in the parent.
//
// Requests beyond the parent's in-flight limit wait here for a slot. A slot is held until
// the answer is complete: a response body that is never read or cancelled keeps its slot.
import { jsonString } from './channel.mjs';
import { REQUEST_TOO_LARGE, bodyBytes, describe, fetchFailed } from './fetch_request.mjs';
import { makeResponse } from './fetch_response.mjs';
import {
  ErrorCtor, MapCtor, abortSignalAborted, abortSignalReason, addEventListener, apply,
  base64Slice, byteLength, deferred, hasOwn, mapDelete, mapGet, mapSet, rejected,
  removeEventListener, setOwn, settle, web,
} from './pristine.mjs';

const MAX_REQUEST_BYTES = 4 * 1024 * 1024;
// (a head's status is always 200–599: the parent refuses any other, PROTOCOL.md)
const NULL_BODY_STATUSES = [204, 205, 304];

function field(frame, key) {
  return hasOwn(frame, key) ? frame[key] : undefined;
}

function denial(error) {
  const err = new ErrorCtor(field(error, 'message'));
  setOwn(err, 'code', 'ERR_ACCESS_DENIED');
  const reason = field(error, 'reason');
  if (reason !== undefined && reason !== null) setOwn(err, 'reason', reason);
  return err;
}

function errorOf(error) {
  if (field(error, 'kind') === 'denied') return denial(error);
  return fetchFailed(field(error, 'message'), field(error, 'code'));
}

function headersJson(headers) {
  let out = '[';
  for (let i = 0; i < headers.length; i += 1) {
    out += `${i === 0 ? '' : ','}[${jsonString(headers[i][0])},${jsonString(headers[i][1])}]`;
  }
  return `${out}]`;
}

/** Base64 of a Uint8Array slice, with the Buffer binding captured in pristine.mjs. */
function base64(bytes, start, end) {
  return apply(base64Slice, bytes, [start, end]);
}

export function createFetch({ channel, limits }) {
  const maxInFlight = limits.maxInFlight;
  const chunkBytes = limits.chunkBytes;
  // Response chunks kept ahead of the tool's reads: the credit every request starts with.
  const window = limits.initialCredit;
  const exchanges = new MapCtor();
  const waiting = [];
  let waitHead = 0;
  let waitTail = 0;
  let inFlight = 0;
  let nextId = 1;

  function release() {
    inFlight -= 1;
    if (waitHead < waitTail) {
      const next = waiting[waitHead];
      setOwn(waiting, waitHead, undefined);
      waitHead += 1;
      inFlight += 1;
      next.resolve(true);
    }
  }

  function finish(ex) {
    if (ex.done) return;
    ex.done = true;
    apply(mapDelete, exchanges, [ex.id]);
    if (ex.signal !== null) apply(removeEventListener, ex.signal, ['abort', ex.onAbort]);
    if (ex.holdsSlot) {
      ex.holdsSlot = false;
      release();
    }
  }

  function cancel(ex) {
    if (ex.done) return;
    if (ex.sent) channel.sendRaw(`{"type":"fetch-cancel","id":${ex.id}}`);
    finish(ex);
  }

  function grant(ex) {
    if (ex.done || ex.controller === null) return;
    const want = apply(web.desiredSize, ex.controller, []) - ex.requested;
    // credit in batches of half the window (fewer frames), at once when nothing is coming
    if (want > 0 && (want * 2 >= window || ex.requested === 0)) {
      ex.requested += want;
      channel.sendRaw(`{"type":"fetch-pull","id":${ex.id},"chunks":${want}}`);
    }
  }

  function bodyStream(ex) {
    return new web.ReadableStream({
      __proto__: null,
      start(controller) {
        ex.controller = controller;
      },
      pull() {
        grant(ex);
      },
      cancel() {
        cancel(ex);
      },
    }, { __proto__: null, highWaterMark: window });
  }

  function onHead(frame) {
    const ex = apply(mapGet, exchanges, [field(frame, 'id')]);
    if (ex === undefined || ex.response !== null) return;
    const status = field(frame, 'status');
    let nullBody = ex.method === 'HEAD';
    for (let i = 0; i < NULL_BODY_STATUSES.length; i += 1) if (NULL_BODY_STATUSES[i] === status) nullBody = true;
    if (!nullBody && !web.ready) {
      cancel(ex);
      ex.box.reject(fetchFailed('the sandbox cannot stream a response body', 'ERR_SPLICE_NO_STREAMS'));
      return;
    }
    const head = {
      __proto__: null,
      status,
      statusText: field(frame, 'statusText'),
      url: field(frame, 'url'),
      redirected: field(frame, 'redirected'),
      headers: field(frame, 'headers'),
    };
    ex.response = makeResponse(head, nullBody ? null : bodyStream(ex));
    ex.box.resolve(ex.response);
  }

  function onChunk(frame, payload) {
    const ex = apply(mapGet, exchanges, [field(frame, 'id')]);
    if (ex === undefined || ex.controller === null || payload === undefined) return;
    ex.requested -= 1;
    apply(web.enqueue, ex.controller, [payload]); // a fresh Uint8Array (channel.mjs)
  }

  function onDone(frame) {
    const ex = apply(mapGet, exchanges, [field(frame, 'id')]);
    if (ex === undefined) return;
    finish(ex);
    if (ex.controller !== null) apply(web.close, ex.controller, []);
  }

  function onError(frame) {
    const ex = apply(mapGet, exchanges, [field(frame, 'id')]);
    if (ex === undefined) return;
    finish(ex);
    const err = errorOf(field(frame, 'error'));
    if (ex.response === null) ex.box.reject(err);
    else if (ex.controller !== null) apply(web.error, ex.controller, [err]);
  }

  channel.on('fetch-head', onHead);
  channel.on('fetch-chunk', onChunk);
  channel.on('fetch-done', onDone);
  channel.on('fetch-error', onError);

  function abortWith(ex) {
    const reason = apply(abortSignalReason, ex.signal, []);
    const wasStreaming = ex.response !== null;
    cancel(ex);
    if (!wasStreaming) ex.box.reject(reason);
    else if (ex.controller !== null) apply(web.error, ex.controller, [reason]);
  }

  async function send(ex, request) {
    let bytes = null;
    if (request.body !== null) {
      const box = await settle(bodyBytes(request.body, MAX_REQUEST_BYTES));
      bytes = box.bytes;
      if (byteLength(bytes) > MAX_REQUEST_BYTES) {
        throw fetchFailed(`request body larger than ${MAX_REQUEST_BYTES} bytes`, REQUEST_TOO_LARGE);
      }
    }
    if (inFlight >= maxInFlight) {
      const slot = deferred();
      setOwn(waiting, waitTail, slot);
      waitTail += 1;
      await slot.promise;
    } else {
      inFlight += 1;
    }
    if (ex.done) { // aborted while it waited: pass the slot on
      release();
      return;
    }
    ex.holdsSlot = true;
    apply(mapSet, exchanges, [ex.id, ex]);
    ex.sent = true;
    channel.listen();
    channel.sendRaw(
      `{"type":"fetch","id":${ex.id},"url":${jsonString(request.url)},"method":${jsonString(request.method)},`
      + `"headers":${headersJson(request.headers)},"redirect":${jsonString(request.redirect)},`
      + `"body":${bytes === null ? 'false' : 'true'}}`,
    );
    if (bytes !== null) {
      const size = byteLength(bytes);
      for (let at = 0; at < size; at += chunkBytes) {
        const end = at + chunkBytes < size ? at + chunkBytes : size;
        channel.sendRaw(`{"type":"fetch-body","id":${ex.id},"data":"${base64(bytes, at, end)}"}`);
      }
      channel.sendRaw(`{"type":"fetch-body-end","id":${ex.id}}`);
    }
  }

  return function fetch(input, init = undefined) {
    let request;
    try {
      request = describe(input, init);
    } catch (err) {
      return rejected(err);
    }
    const signal = request.signal;
    if (signal !== null && apply(abortSignalAborted, signal, [])) {
      return rejected(apply(abortSignalReason, signal, []));
    }
    const ex = {
      __proto__: null,
      id: nextId,
      method: request.method,
      signal,
      onAbort: null,
      box: deferred(),
      response: null,
      controller: null,
      requested: window,
      sent: false,
      done: false,
      holdsSlot: false,
    };
    nextId += 1;
    if (signal !== null) {
      ex.onAbort = () => abortWith(ex);
      apply(addEventListener, signal, ['abort', ex.onAbort, { __proto__: null, once: true }]);
    }
    run(ex, request);
    return ex.box.promise;
  };

  /** ``send``, its failures turned into the fetch's rejection (it never rejects itself). */
  async function run(ex, request) {
    try {
      await settle(send(ex, request));
    } catch (err) {
      finish(ex);
      ex.box.reject(err);
    }
  }
}
