// Test-only driver: runs the host's network-guard functions for many inputs in ONE Node
// process (tests/network/test_url_table.py, tests/runtime/test_net_guard_unit.py). Reads one
// JSON document on stdin {policy, targets: [{url, patterns}], addresses: [..],
// lookups: [{url, patterns, table}]} and writes the verdicts as JSON on stdout.
import {
  checkTarget, checkedLookup, parseUrl, snapshot, tableResolver,
} from '../splice_build/runtime/host/net_guard.mjs';
import { compileRanges, isLoopbackAddress, isPublicAddress } from '../splice_build/runtime/host/addresses.mjs';

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const request = JSON.parse(Buffer.concat(chunks).toString('utf8'));
const policy = request.policy;
const ranges = compileRanges(policy);

function verdict(url, patterns) {
  let parts;
  try {
    parts = snapshot(parseUrl(url));
  } catch {
    return { verdict: 'invalid' };
  }
  try {
    const target = checkTarget(parts, patterns, policy, ranges);
    return { verdict: 'allow', host: target.host, grant: target.grant };
  } catch (err) {
    if (err.code !== 'ERR_ACCESS_DENIED') throw err;
    return { verdict: 'deny', reason: err.reason, message: err.message };
  }
}

function lookupOnce({ url, patterns, table }) {
  const target = checkTarget(snapshot(parseUrl(url)), patterns, policy, ranges);
  const state = { allowed: Object.create(null), denial: null, lookups: 0 };
  const lookup = checkedLookup(target, state, { resolve: tableResolver(table), ranges });
  return new Promise((resolve) => {
    lookup(target.host, { all: true }, (err, addresses) => {
      resolve({
        error: err ? { code: err.code, reason: err.reason, message: err.message } : null,
        addresses: addresses ? addresses.map((a) => a.address) : null,
        lookups: state.lookups,
        allowed: Object.keys(state.allowed),
      });
    });
  });
}

const out = {
  targets: (request.targets || []).map((c) => verdict(c.url, c.patterns)),
  addresses: (request.addresses || []).map((a) => ({
    public: isPublicAddress(ranges, a), loopback: isLoopbackAddress(ranges, a),
  })),
  lookups: [],
};
for (const item of request.lookups || []) out.lookups.push(await lookupOnce(item));
process.stdout.write(JSON.stringify(out));
