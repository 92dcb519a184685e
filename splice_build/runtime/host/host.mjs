// The sandbox host: reads one job from the parent, hardens the process, imports the tool's
// entry module and sends exactly one result frame (PROTOCOL.md). Started by
// splice_build/runtime/sandbox.py as `node <flags> host.mjs <in-fd> <out-fd> [fetch] [reuse]`
// (`fetch`: the package may use the network, so the web streams its fetch needs are
// captured while the process waits for its job; `reuse`: after a successful result the host
// serves the next job of the same package instead of exiting, serve.mjs).
import './pristine.mjs';
import { ACCESS_DENIED, HOST_CODES } from './codes.mjs';
import { Channel, jsonString } from './channel.mjs';
import {
  harden, installEnvironment, installStdio, lockFailureHandler,
} from './harden.mjs';
import { installModuleGuard } from './module_guard.mjs';
import { prepareBuiltin } from './fd_guard.mjs';
import { createFetch } from './fetch.mjs';
import { createCapabilityClient } from './capability.mjs';
import { serveJobs } from './serve.mjs';
import {
  apply, captureWebStreams, deferred, formatWithOptions, freeze, getActiveResourcesInfo, hasOwn,
  isArray, keys, reallyExit, safeGet, safeString, setOwn, setTimer, settle, stringToWellFormed,
  stringify, writeSync,
} from './pristine.mjs';

const EXIT_HOST_FAILURE = 70;

const CHANNEL_FDS = [Number(process.argv[2]), Number(process.argv[3])];
const channel = new Channel(CHANNEL_FDS[0], CHANNEL_FDS[1]);
const FLAGS = process.argv.slice(4);
if (FLAGS.includes('fetch')) captureWebStreams();
const REUSE = FLAGS.includes('reuse');
let finished = false;
// The id of the job being run (PROTOCOL.md): repeated in its result, never in the tool's
// reach, so a result frame the tool writes to the pipe itself cannot pass for the job's.
let jobId = '';

/** Send the job's result; exit unless it is a success in reuse mode. A second result for
 * one job (a failure the tool left running after its result) ends a reused process. */
function finish(jsonText, success = false) {
  if (finished) {
    if (REUSE) {
      // Said on the pipe first: an exit can wait on a pending read of the job pipe, and the
      // parent never hands a job to an idle process that wrote anything after its result.
      try {
        channel.sendRaw(jsonText);
      } finally {
        apply(reallyExit, process, [EXIT_HOST_FAILURE]);
      }
    }
    return;
  }
  finished = true;
  channel.sendRaw(jsonText);
  if (!(REUSE && success)) apply(reallyExit, process, [0]);
}

function fail(code, message) {
  // Well-formed: a message cut inside a surrogate pair would make the parent refuse the whole
  // frame (PROTOCOL.md) and report the tool's error as an invalid message.
  const text = apply(stringToWellFormed, message, []);
  finish(`{"type":"result","ok":false,"error":{"code":${jsonString(code)},"message":${jsonString(text)}},"job":${jsonString(jobId)}}`);
}

function errorCode(err) {
  return safeGet(err, 'code') === ACCESS_DENIED ? HOST_CODES.PERMISSION_DENIED : null;
}

// Node's permission model names the refused path in `resource` and its kind in `permission`;
// its message only says which command-line flag would allow it.
const FS_PERMISSIONS = freeze({ __proto__: null, FileSystemRead: 'read', FileSystemWrite: 'write' });

/** A file-system refusal in the manifest's terms, or null for any other error. */
function fsRefusalMessage(err) {
  if (safeGet(err, 'code') !== ACCESS_DENIED) return null;
  const permission = safeGet(err, 'permission');
  const kind = typeof permission === 'string' ? FS_PERMISSIONS[permission] : undefined;
  if (kind === undefined) return null;
  const resource = safeGet(err, 'resource');
  const where = typeof resource === 'string' ? ` to \`${resource}\`` : '';
  return `${kind} access${where} is denied: declare it in manifest \`permissions.fs.${kind}\``;
}

function messageOf(err) {
  const refusal = fsRefusalMessage(err);
  if (refusal !== null) return refusal;
  const message = safeGet(err, 'message');
  return message === undefined ? safeString(err) : safeString(message);
}

function hostFailure(stage, err) {
  // Fail closed: no result frame, a distinct exit code, the reason on stderr for the logs.
  apply(writeSync, undefined, [2, `splice host: ${stage} failed: ${messageOf(err)}\n`]);
  apply(reallyExit, process, [EXIT_HOST_FAILURE]);
}

/** ``value`` frozen with all it holds. It runs for every job, in a reused process after the
 * tool's code did: captured functions and indexes only (no `Object.keys`, no iterator). */
function deepFreeze(value) {
  if (value && typeof value === 'object') {
    const names = keys(value);
    for (let i = 0; i < names.length; i += 1) deepFreeze(value[names[i]]);
    freeze(value);
  }
  return value;
}

/** The declared capability names, copied by index (a spread would run the tool's iterator). */
function declaredCapabilities(permissions) {
  const list = hasOwn(permissions, 'capabilities') ? permissions.capabilities : undefined;
  const names = [];
  if (isArray(list)) for (let i = 0; i < list.length; i += 1) setOwn(names, i, list[i]);
  return freeze(names);
}

let job;
try {
  job = channel.readFrameSync();
  if (!job || job.type !== 'job') throw new Error('first frame is not a job');
  if (typeof job.id !== 'string') throw new Error('the job has no id');
} catch (err) {
  hostFailure('reading the job', err);
}

function installGuards() {
  installModuleGuard(job.context.paths.package, job.builtins, prepareBuiltin);
  // The tool's requests are performed by the parent under its network policy (fetch.mjs).
  const guardedFetch = createFetch({ channel, limits: deepFreeze(job.fetch) });
  return harden({ guardedFetch, channelFds: CHANNEL_FDS });
}

const LOG_OPTIONS = freeze({ __proto__: null, colors: false });

/** ctx.log: the arguments formatted as console.error would, written to stderr directly. */
function log(...args) {
  const list = [LOG_OPTIONS];
  for (let i = 0; i < args.length; i += 1) setOwn(list, i + 1, args[i]);
  apply(writeSync, undefined, [2, `${apply(formatWithOptions, undefined, list)}\n`]);
}

// The host decides what an exception no code caught means for the call: always a failure,
// never something the tool's listeners or hooks can swallow (harden.mjs, lockFailureHandler).
const onAsyncFailure = (err) => {
  fail(errorCode(err) || HOST_CODES.TOOL_ERROR, messageOf(err));
};

try {
  lockFailureHandler(onAsyncFailure);
  installEnvironment(job.env || {});
  // unsafeInProcessGuardsOff exists only when a Python test passed
  // SpliceRuntime(_unsafe_in_process_guards_off=True) (Node then runs without --permission
  // too): no guard at all, to prove what the OS layer alone stops. No package, variable or
  // file can set it.
  if (job.unsafeInProcessGuardsOff === true) installStdio();
  else installGuards();
} catch (err) {
  hostFailure('hardening', err);
}

// The requests Node's thread pool runs for the file system (an un-awaited `fs.writeFile`, a
// FileHandle's write), as `process.getActiveResourcesInfo` names them.
const FILE_REQUESTS = freeze({ __proto__: null, FSReqCallback: true, FSReqPromise: true });

/** Reuse: settles once no file-system request the tool started is in flight. A stop holds a
 * thread only when its system call returns, so a write in the kernel goes on while a kept
 * process waits stopped: a 120 MB `fs.writeFile` left un-awaited went on writing its grant
 * ~0.3 s after its call had returned. A one-job host's exit waits for them; a kept one's
 * result does (their callbacks run within the call, under its deadline). The channel's own
 * read, once it listens (channel.mjs), is one such request, always pending. */
async function fileRequestsDone() {
  for (;;) {
    const active = apply(getActiveResourcesInfo, undefined, []);
    let pending = channel.listening ? -1 : 0;
    for (let i = 0; i < active.length; i += 1) if (FILE_REQUESTS[active[i]] === true) pending += 1;
    if (pending <= 0) return;
    const box = deferred();
    apply(setTimer, undefined, [box.resolve, 1]);
    await box.promise;
  }
}

/** Run one job to its result frame (a failure exits the process, see ``finish``). */
async function runJob(job) {
  finished = false;
  jobId = job.id;
  const context = job.context;
  const permissions = deepFreeze(context.permissions);
  const ctx = freeze({
    package: freeze({ id: context.package.id, version: context.package.version }),
    tool: context.tool,
    paths: freeze({ project: context.paths.project, package: context.paths.package }),
    permissions,
    log: freeze(log),
    capability: freeze(
      createCapabilityClient({ channel, declared: declaredCapabilities(permissions) }),
    ),
  });

  let entry;
  try {
    entry = await settle(import(job.entryUrl));
  } catch (err) {
    fail(errorCode(err) || HOST_CODES.TOOL_LOAD_FAILED, `Could not load tool: ${messageOf(err)}`);
  }

  const toolFn = safeGet(entry, 'default');
  if (typeof toolFn !== 'function') {
    fail(HOST_CODES.TOOL_LOAD_FAILED, 'Tool entry must have a default export function');
  }

  let output;
  try {
    output = await toolFn(job.input, ctx);
  } catch (err) {
    fail(errorCode(err) || HOST_CODES.TOOL_ERROR, messageOf(err));
  }

  let outputJson;
  try {
    outputJson = stringify(output === undefined ? null : output);
  } catch (err) {
    fail(HOST_CODES.INVALID_OUTPUT, `Tool output is not JSON-serializable: ${messageOf(err)}`);
  }
  if (REUSE) await fileRequestsDone();
  finish(`{"type":"result","ok":true,"output":${outputJson === undefined ? 'null' : outputJson},"job":${jsonString(jobId)}}`, true);
}

await runJob(job);
if (REUSE) await serveJobs(channel, runJob, (err) => hostFailure('reading the next job', err));
