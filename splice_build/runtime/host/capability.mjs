// ctx.capability(name, args): capability requests with ids over the channel (PROTOCOL.md).
// The parent enforces every limit again; the checks here only give the tool early, clear
// errors. Pristine functions only (pristine.mjs): the tool may have replaced any method.
import { ACCESS_DENIED, HOST_CODES } from './codes.mjs';
import { jsonString } from './channel.mjs';
import {
  ErrorCtor, MapCtor, apply, arrayIncludes, bufferByteLength, deferred, hasOwn, mapDelete,
  mapGet, mapSet, rejected, safeGet, safeString, setOwn, stringify,
} from './pristine.mjs';

const MAX_ARGS_BYTES = 256 * 1024;

function capabilityError(code, message) {
  const err = new ErrorCtor(message);
  setOwn(err, 'code', code === HOST_CODES.PERMISSION_DENIED ? ACCESS_DENIED : safeString(code));
  return err;
}

function field(frame, key) {
  return hasOwn(frame, key) ? frame[key] : undefined;
}

export function createCapabilityClient({ channel, declared }) {
  const pending = new MapCtor();
  let nextId = 1;
  let listening = false;

  const onFrame = (frame) => {
    const id = field(frame, 'id');
    const entry = apply(mapGet, pending, [id]);
    if (entry === undefined) return;
    apply(mapDelete, pending, [id]);
    const error = field(frame, 'error');
    if (error !== undefined && error !== null && typeof error === 'object') {
      entry.reject(capabilityError(field(error, 'code'), safeString(field(error, 'message'))));
    } else {
      entry.resolve(field(frame, 'result'));
    }
  };

  return function capability(name, args = undefined) {
    const capName = safeString(name);
    if (!apply(arrayIncludes, declared, [capName])) {
      return rejected(capabilityError(
        HOST_CODES.PERMISSION_DENIED,
        `Capability "${capName}" is not declared in manifest permissions.capabilities`,
      ));
    }
    let argsJson;
    try {
      argsJson = args === undefined ? '{}' : stringify(args);
    } catch (err) {
      return rejected(capabilityError(
        HOST_CODES.INVALID_INPUT, `Capability arguments are not JSON: ${safeString(safeGet(err, 'message'))}`,
      ));
    }
    if (argsJson === undefined) argsJson = 'null';
    if (apply(bufferByteLength, Buffer, [argsJson, 'utf8']) > MAX_ARGS_BYTES) {
      return rejected(capabilityError(HOST_CODES.INPUT_TOO_LARGE, 'Capability arguments exceed 256 KiB'));
    }
    const id = nextId;
    nextId += 1;
    if (!listening) {
      listening = true;
      channel.on('capability-result', onFrame);
      channel.listen();
    }
    const box = deferred();
    apply(mapSet, pending, [id, { __proto__: null, resolve: box.resolve, reject: box.reject }]);
    channel.sendRaw(`{"type":"capability","id":${id},"name":${jsonString(capName)},"args":${argsJson}}`);
    return box.promise;
  };
}
