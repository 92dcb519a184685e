// Reuse mode (`reuse` on the host's command line, PROTOCOL.md "Reuse"): after a successful
// result the host waits for the next job instead of exiting, and runs it in the same
// process — same package, same grant, same hardening (applied once, for the first job). The
// parent sends a job only after the previous result, so jobs never overlap.
import { deferred } from './pristine.mjs';

/** Serve jobs until the process ends; ``onBroken(err)`` for a frame that is not a job or a
 * pipe that hung up (it must end the process). */
export async function serveJobs(channel, runJob, onBroken) {
  let waiting = null;
  let early = null;
  // Once a capability or fetch made the channel read asynchronously, jobs arrive there too.
  channel.on('job', (frame) => {
    if (waiting === null) {
      early = frame;
      return;
    }
    const box = waiting;
    waiting = null;
    // In a null-prototype box: resolving a promise with the frame itself would look up its
    // `then`, which a getter on Object.prototype answers, handed the frame and its job id.
    box.resolve({ __proto__: null, frame });
  });
  for (;;) {
    let job = early;
    early = null;
    try {
      if (job === null && !channel.listening) job = channel.readFrameSync();
    } catch (err) {
      onBroken(err);
    }
    if (job === null) {
      waiting = deferred();
      job = (await waiting.promise).frame;
    }
    if (!job || job.type !== 'job' || typeof job.id !== 'string') {
      onBroken(new Error('the next frame is not a job'));
    }
    await runJob(job);
  }
}
