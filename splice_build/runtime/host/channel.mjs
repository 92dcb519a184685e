// The IPC channel to the parent: newline-delimited JSON on two inherited pipe fds
// (PROTOCOL.md). Outgoing frames are built from strings with pristine functions so prototype
// pollution by the tool cannot change their shape.
import {
  BufferFrom, bufferAlloc, bufferConcat, bufferIndexOf, bufferSubarray, bufferToString, call,
  parse, read, readSync, stringify, writeSync,
} from './pristine.mjs';

const CHUNK = 65536;
// The job carries at most 4 MiB of input plus context; anything larger is a broken parent.
const MAX_INCOMING_FRAME = 8 * 1024 * 1024;

export class Channel {
  #in;
  #out;
  #pending = [];
  #pendingBytes = 0;
  #reading = false;

  constructor(inFd, outFd) {
    this.#in = inFd;
    this.#out = outFd;
  }

  /** Send one frame whose body is already a JSON text (no newline). */
  sendRaw(jsonText) {
    const bytes = call(BufferFrom, Buffer, [jsonText + '\n', 'utf8']);
    let offset = 0;
    while (offset < bytes.length) {
      offset += call(writeSync, undefined, [this.#out, bytes, offset, bytes.length - offset]);
    }
  }

  /** Block until one whole frame arrives (used once, for the job). */
  readFrameSync() {
    const buf = call(bufferAlloc, Buffer, [CHUNK]);
    for (;;) {
      const frame = this.#takeFrame();
      if (frame !== undefined) return frame;
      const n = call(readSync, undefined, [this.#in, buf, 0, CHUNK, null]);
      if (n === 0) throw new Error('IPC channel closed before the job arrived');
      this.#push(call(bufferSubarray, buf, [0, n]));
    }
  }

  /** Start delivering frames asynchronously to ``onFrame`` (capability results). */
  startReading(onFrame) {
    if (this.#reading) return;
    this.#reading = true;
    const buf = call(bufferAlloc, Buffer, [CHUNK]);
    const loop = () => {
      call(read, undefined, [this.#in, buf, 0, CHUNK, null, (err, n) => {
        if (err || n === 0) return;
        this.#push(call(bufferSubarray, buf, [0, n]));
        for (let f = this.#takeFrame(); f !== undefined; f = this.#takeFrame()) onFrame(f);
        loop();
      }]);
    };
    loop();
  }

  #push(chunk) {
    this.#pending[this.#pending.length] = call(BufferFrom, Buffer, [chunk]);
    this.#pendingBytes += chunk.length;
    if (this.#pendingBytes > MAX_INCOMING_FRAME) throw new Error('IPC frame too large');
  }

  #takeFrame() {
    if (this.#pendingBytes === 0) return undefined;
    const all = call(bufferConcat, Buffer, [this.#pending]);
    const nl = call(bufferIndexOf, all, [10]);
    if (nl < 0) {
      this.#pending = [all];
      return undefined;
    }
    const rest = call(bufferSubarray, all, [nl + 1]);
    this.#pending = rest.length ? [rest] : [];
    this.#pendingBytes = rest.length;
    return parse(call(bufferToString, all, ['utf8', 0, nl]));
  }
}

/** JSON text of a string (safe: JSON.stringify never consults toJSON for primitives). */
export function jsonString(value) {
  return stringify(value);
}
