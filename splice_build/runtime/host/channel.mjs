// The IPC channel to the parent: newline-delimited JSON on two inherited pipe fds
// (PROTOCOL.md). Outgoing frames are built from strings with pristine functions so prototype
// pollution by the tool cannot change their shape; incoming frames are dispatched by `type`
// to the handler registered for it (capability results, fetch answers). A frame with a
// numeric `bytes` member is followed by that many raw bytes, handed to the handler as a
// fresh Uint8Array (response bodies travel so, without base64). Only pristine functions are
// used (pristine.mjs), and a frame is read through own properties only.
//
// The bytes of jobs and results (the job's id among them, PROTOCOL.md) are only ever in
// Uint8Arrays the channel made with the captured constructor, and handled only by the typed
// array builtins, the vector reads and writes of node:fs and the captured TextDecoder and
// TextEncoder: never by a Buffer (Buffer.from, allocUnsafe and concat take their memory from
// Node's shared pool, whose ArrayBuffer any Buffer of the tool exposes, sized by the
// tool-writable Buffer.poolSize), nor by a Node function that reads a getter of the array (a
// tool that replaced it would be handed the array).
import {
  MapCtor, Uint8ArrayCtor, apply, byteLength, copyBytes, hasOwn, mapGet, mapSet, parse, readv,
  readvSync, setOwn, stringify, typedArrayIndexOf, typedArraySet, utf8Decode, utf8Encode, view,
  writevSync,
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
  #syncBuffer = null; // the buffer of blocking reads, made on first use
  #handlers = new MapCtor();
  #raw = null; // the frame whose payload is arriving: { frame, bytes, got }

  constructor(inFd, outFd) {
    this.#in = inFd;
    this.#out = outFd;
  }

  /** Send one frame whose body is already a JSON text (no newline). */
  sendRaw(jsonText) {
    const bytes = utf8Encode(jsonText + '\n');
    let offset = 0;
    const total = byteLength(bytes);
    while (offset < total) {
      const rest = offset === 0 ? bytes : view(bytes, offset, total - offset);
      offset += apply(writevSync, undefined, [this.#out, [rest], null]);
    }
  }

  /** Block until one whole frame arrives (a job, before the channel listens). */
  readFrameSync() {
    if (this.#syncBuffer === null) this.#syncBuffer = new Uint8ArrayCtor(CHUNK);
    const buf = this.#syncBuffer;
    for (;;) {
      const n = apply(readvSync, undefined, [this.#in, [buf], null]);
      if (n === 0) throw new Error('IPC channel closed before the job arrived');
      const frame = this.#feedOne(view(buf, 0, n));
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
    const buf = new Uint8ArrayCtor(LISTEN_READ);
    const loop = () => {
      apply(readv, undefined, [this.#in, [buf], null, (err, n) => {
        if (err || n === 0) return;
        this.#feedAll(view(buf, 0, n));
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
        apply(typedArraySet, raw.bytes, [view(rest, 0, take), raw.got]);
        raw.got += take;
        if (raw.got < byteLength(raw.bytes)) return;
        this.#endRaw();
        rest = view(rest, take, size - take);
        continue;
      }
      if (size === 0) return;
      const nl = apply(typedArrayIndexOf, rest, [10]);
      if (nl < 0) {
        this.#keep(rest);
        return;
      }
      this.#begin(this.#frame(view(rest, 0, nl)));
      rest = view(rest, nl + 1, size - nl - 1);
    }
  }

  /** The first complete frame in ``chunk`` (the job); anything after it is kept. */
  #feedOne(chunk) {
    const nl = apply(typedArrayIndexOf, chunk, [10]);
    if (nl < 0) {
      this.#keep(chunk);
      return undefined;
    }
    const frame = this.#frame(view(chunk, 0, nl));
    this.#keep(view(chunk, nl + 1, byteLength(chunk) - nl - 1));
    return frame;
  }

  #keep(bytes) {
    const size = byteLength(bytes);
    if (size === 0) return;
    // A copy: the read buffer is reused for the next read.
    setOwn(this.#pending, this.#pendingCount, copyBytes(bytes));
    this.#pendingCount += 1;
    this.#pendingBytes += size;
    if (this.#pendingBytes > MAX_INCOMING_FRAME) throw new Error('IPC frame too large');
  }

  /** The frame ending with ``tail``: the kept bytes before it, then ``tail``. */
  #frame(tail) {
    let whole = tail;
    if (this.#pendingCount > 0) {
      whole = new Uint8ArrayCtor(this.#pendingBytes + byteLength(tail));
      let at = 0;
      for (let i = 0; i < this.#pendingCount; i += 1) {
        apply(typedArraySet, whole, [this.#pending[i], at]);
        at += byteLength(this.#pending[i]);
      }
      apply(typedArraySet, whole, [tail, at]);
      this.#pending = [];
      this.#pendingCount = 0;
      this.#pendingBytes = 0;
    }
    return parse(utf8Decode(whole));
  }
}

/** JSON text of a string (safe: JSON.stringify never consults toJSON for primitives). */
export function jsonString(value) {
  return stringify(value);
}
