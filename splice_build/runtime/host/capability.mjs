// ctx.capability(name, args): capability requests with ids over the channel (PROTOCOL.md).
// The parent enforces every limit again; the checks here only give the tool early, clear errors.
import { ACCESS_DENIED, HOST_CODES } from './codes.mjs';
import { jsonString } from './channel.mjs';
import {
  MapCtor, PromiseCtor, apply, arrayIncludes, bufferByteLength, mapDelete, mapGet, mapSet,
  stringify,
} from './pristine.mjs';

const MAX_ARGS_BYTES = 256 * 1024;

function capabilityError(code, message) {
  const err = new Error(message);
  err.code = code === HOST_CODES.PERMISSION_DENIED ? ACCESS_DENIED : String(code);
  return err;
}

export function createCapabilityClient({ channel, declared }) {
  const pending = new MapCtor();
  let nextId = 1;

  const onFrame = (frame) => {
    if (!frame || frame.type !== 'capability-result') return;
    const entry = apply(mapGet, pending, [frame.id]);
    if (!entry) return;
    apply(mapDelete, pending, [frame.id]);
    if (frame.error) entry.reject(capabilityError(frame.error.code, String(frame.error.message)));
    else entry.resolve(frame.result);
  };

  return function capability(name, args = {}) {
    const capName = String(name);
    if (!apply(arrayIncludes, declared, [capName])) {
      return PromiseCtor.reject(
        capabilityError(HOST_CODES.PERMISSION_DENIED, `Capability "${capName}" is not declared in manifest permissions.capabilities`),
      );
    }
    let argsJson;
    try {
      argsJson = stringify(args === undefined ? {} : args);
    } catch (err) {
      return PromiseCtor.reject(capabilityError(HOST_CODES.INVALID_INPUT, `Capability arguments are not JSON: ${err.message}`));
    }
    if (argsJson === undefined) argsJson = 'null';
    if (apply(bufferByteLength, Buffer, [argsJson, 'utf8']) > MAX_ARGS_BYTES) {
      return PromiseCtor.reject(capabilityError(HOST_CODES.INPUT_TOO_LARGE, 'Capability arguments exceed 256 KiB'));
    }
    const id = nextId++;
    channel.startReading(onFrame);
    return new PromiseCtor((resolve, reject) => {
      apply(mapSet, pending, [id, { resolve, reject }]);
      channel.sendRaw(`{"type":"capability","id":${id},"name":${jsonString(capName)},"args":${argsJson}}`);
    });
  };
}
