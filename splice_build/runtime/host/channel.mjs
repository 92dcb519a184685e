// The IPC channel to the parent: newline-delimited JSON on two inherited pipe fds
// (PROTOCOL.md). Outgoing frames are built from strings with pristine functions so prototype
// pollution by the tool cannot change their shape; incoming frames are dispatched by `type`
// to the handler registered for it (capability results, fetch answers). A frame with a
// numeric `bytes` member is followed by that many raw bytes, handed to the handler as a
// fresh Uint8Array (response bodies travel so, without base64). Only pristine functions are
// used (pristine.mjs), and a frame is read through own properties only.
import {
  BufferFrom, MapCtor, Uint8ArrayCtor, apply, bufferAllocUnsafe, bufferConcat, bufferIndexOf,
  bufferSubarray, bufferToString, byteLength, hasOwn, mapGet, mapSet, parse, read, readSync,
  setOwn, stringify, typedArraySet, writeSync,
} from './pristine.mjs';

const CHUNK = 256 * 1024;
// Reads once listening: as large as the parent's pipe (sandbox.py widens it to 1 MiB when the
// package fetches), so a response chunk and its header line arrive in one read, not two.
const LISTEN_READ = 1024 * 1024;
// The job carries at most 4 MiB of input plus context, a capability result at most 4 MiB;
// anything larger is a broken parent.
const MAX_INCOMING_FRAME = 8 * 1024 * 1024;

export class Channel {
  #in;
  #out;
  #pending = [];
  #pendingCount = 0;
  #pendingBytes = 0;
  #reading = false;
  #handlers = new MapCtor();
  #raw = null; // the frame whose payload is arriving: { frame, bytes, got }

  constructor(inFd, outFd) {
    this.#in = inFd;
    this.#out = outFd;
  }

  /** Send one frame whose body is already a JSON text (no newline). */
  sendRaw(jsonText) {
    const bytes = apply(BufferFrom, Buffer, [jsonText + '\n', 'utf8']);
    let offset = 0;
    const total = byteLength(bytes);
    while (offset < total) {
      offset += apply(writeSync, undefined, [this.#out, bytes, offset, total - offset]);
    }
  }

  /** Block until one whole frame arrives (a job, before the channel listens). */
  readFrameSync() {
    const buf = apply(bufferAllocUnsafe, Buffer, [CHUNK]);
    for (;;) {
      const n = apply(readSync, undefined, [this.#in, buf, 0, CHUNK, null]);
      if (n === 0) throw new Error('IPC channel closed before the job arrived');
      const frame = this.#feedOne(apply(bufferSubarray, buf, [0, n]));
      if (frame !== undefined) return frame;
    }
  }

  /** Deliver every frame whose ``type`` is ``type`` to ``handler(frame)`` (once reading). */
  on(type, handler) {
    apply(mapSet, this.#handlers, [type, handler]);
  }

  /** Start reading frames (when a request that expects an answer is sent; idempotent). */
  listen() {
    this.#startReading();
  }

  /** Whether frames are read asynchronously now (``readFrameSync`` must not be used then). */
  get listening() {
    return this.#reading;
  }

  #dispatch(frame, payload) {
    if (frame === null || typeof frame !== 'object' || !hasOwn(frame, 'type')) return;
    const handler = apply(mapGet, this.#handlers, [frame.type]);
    if (handler !== undefined) handler(frame, payload);
  }

  /** A frame, or the start of one with a raw payload (``bytes``), read from ``line``. */
  #begin(frame) {
    const size = frame !== null && typeof frame === 'object' && hasOwn(frame, 'bytes')
      ? frame.bytes : undefined;
    if (typeof size !== 'number') {
      this.#dispatch(frame, undefined);
      return;
    }
    if (!(size >= 0 && size <= MAX_INCOMING_FRAME)) throw new Error('IPC payload too large');
    this.#raw = { __proto__: null, frame, bytes: new Uint8ArrayCtor(size), got: 0 };
    if (size === 0) this.#endRaw();
  }

  #endRaw() {
    const raw = this.#raw;
    this.#raw = null;
    this.#dispatch(raw.frame, raw.bytes);
  }

  #startReading() {
    if (this.#reading) return;
    this.#reading = true;
    const buf = apply(bufferAllocUnsafe, Buffer, [LISTEN_READ]);
    const loop = () => {
      apply(read, undefined, [this.#in, buf, 0, LISTEN_READ, null, (err, n) => {
        if (err || n === 0) return;
        this.#feedAll(apply(bufferSubarray, buf, [0, n]));
        loop();
      }]);
    };
    loop();
  }

  #feedAll(chunk) {
    let rest = chunk;
    for (;;) {
      const size = byteLength(rest);
      if (this.#raw !== null) {
        const raw = this.#raw;
        const need = byteLength(raw.bytes) - raw.got;
        const take = size < need ? size : need;
        apply(typedArraySet, raw.bytes, [apply(bufferSubarray, rest, [0, take]), raw.got]);
        raw.got += take;
        if (raw.got < byteLength(raw.bytes)) return;
        this.#endRaw();
        rest = apply(bufferSubarray, rest, [take]);
        continue;
      }
      if (size === 0) return;
      const nl = apply(bufferIndexOf, rest, [10]);
      if (nl < 0) {
        this.#keep(rest);
        return;
      }
      this.#begin(this.#frame(apply(bufferSubarray, rest, [0, nl])));
      rest = apply(bufferSubarray, rest, [nl + 1]);
    }
  }

  /** The first complete frame in ``chunk`` (the job); anything after it is kept. */
  #feedOne(chunk) {
    const nl = apply(bufferIndexOf, chunk, [10]);
    if (nl < 0) {
      this.#keep(chunk);
      return undefined;
    }
    const frame = this.#frame(apply(bufferSubarray, chunk, [0, nl]));
    this.#keep(apply(bufferSubarray, chunk, [nl + 1]));
    return frame;
  }

  #keep(bytes) {
    const size = byteLength(bytes);
    if (size === 0) return;
    // A copy: the read buffer is reused for the next read.
    setOwn(this.#pending, this.#pendingCount, apply(BufferFrom, Buffer, [bytes]));
    this.#pendingCount += 1;
    this.#pendingBytes += size;
    if (this.#pendingBytes > MAX_INCOMING_FRAME) throw new Error('IPC frame too large');
  }

  /** The frame ending with ``tail``: the kept bytes before it, then ``tail``. */
  #frame(tail) {
    let whole = tail;
    if (this.#pendingCount > 0) {
      setOwn(this.#pending, this.#pendingCount, tail);
      whole = apply(bufferConcat, Buffer, [this.#pending, this.#pendingBytes + byteLength(tail)]);
      this.#pending = [];
      this.#pendingCount = 0;
      this.#pendingBytes = 0;
    }
    return parse(apply(bufferToString, whole, ['utf8']));
  }
}

/** JSON text of a string (safe: JSON.stringify never consults toJSON for primitives). */
export function jsonString(value) {
  return stringify(value);
}
