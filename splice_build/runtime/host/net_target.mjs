// The static half of the network guard: parse a URL once with the pristine WHATWG parser,
// snapshot its parts through getters captured before the tool loads, and decide whether it
// may be requested under the declared host patterns (docs/network-security.md, rules 1-3).
// The DNS half (rule 4) is the checked lookup in net_guard.mjs. Python mirrors this file in
// splice_build/security/targets.py; tests/network/test_url_table.py compares the two.
import { isIPLiteral, isPublicAddress } from './addresses.mjs';
import { ACCESS_DENIED } from './codes.mjs';
import { apply, freeze, getOwnPropertyDescriptor, stringSlice } from './pristine.mjs';

const URLCtor = URL;
const ErrorCtor = Error;
const TypeErrorCtor = TypeError;
const getter = (name) => getOwnPropertyDescriptor(URLCtor.prototype, name).get;
const URL_GET = freeze({
  href: getter('href'),
  origin: getter('origin'),
  protocol: getter('protocol'),
  username: getter('username'),
  password: getter('password'),
  hostname: getter('hostname'),
  port: getter('port'),
  pathname: getter('pathname'),
  search: getter('search'),
});

/** Refusal reasons (the verdict table compares these with Python's). */
export const REASONS = freeze({
  SCHEME: 'scheme',
  CREDENTIALS: 'credentials',
  NOT_DECLARED: 'not-declared',
  NOT_PUBLIC: 'not-public',
});

/** An ERR_ACCESS_DENIED error (reported as PERMISSION_DENIED) carrying a machine reason. */
export function networkDenied(message, reason) {
  const err = new ErrorCtor(message);
  err.code = ACCESS_DENIED;
  err.reason = reason;
  return err;
}

/** The `TypeError('fetch failed')` of a network failure, its cause naming what happened. */
export function fetchFailed(message, code) {
  const cause = new ErrorCtor(message);
  if (code !== undefined) cause.code = code;
  const err = new TypeErrorCtor('fetch failed');
  err.cause = cause;
  return err;
}

function endsWith(text, suffix) {
  if (suffix.length > text.length) return false;
  const offset = text.length - suffix.length;
  for (let i = 0; i < suffix.length; i += 1) if (text[offset + i] !== suffix[i]) return false;
  return true;
}

function contains(list, value) {
  for (let i = 0; i < list.length; i += 1) if (list[i] === value) return true;
  return false;
}

/** interfaces.md 1.4: `*` any host, `*.x` proper subdomains of x only, else equality. */
export function hostAllowed(host, patterns) {
  for (let i = 0; i < patterns.length; i += 1) {
    const p = patterns[i];
    if (p === '*') return true;
    if (p[0] === '*' && p[1] === '.') {
      const suffix = apply(stringSlice, p, [1]);
      if (host.length > suffix.length && endsWith(host, suffix)) return true;
    } else if (p === host) {
      return true;
    }
  }
  return false;
}

function isLocalhostName(host, policy) {
  if (contains(policy.localhost.names, host)) return true;
  const suffixes = policy.localhost.suffixes;
  for (let i = 0; i < suffixes.length; i += 1) if (endsWith(host, suffixes[i])) return true;
  return false;
}

/** Parse with the captured WHATWG parser; throws TypeError for an invalid URL. */
export function parseUrl(text, base) {
  try {
    return base === undefined ? new URLCtor(text) : new URLCtor(text, base);
  } catch {
    throw new TypeErrorCtor(`Invalid URL: ${text}`);
  }
}

/** The URL's parts read once through the pristine getters (a tool may patch URL.prototype). */
export function snapshot(url) {
  const read = (name) => apply(URL_GET[name], url, []);
  let hostname = read('hostname');
  if (hostname[0] === '[') hostname = apply(stringSlice, hostname, [1, -1]);
  if (hostname.length > 1 && hostname[hostname.length - 1] === '.') {
    hostname = apply(stringSlice, hostname, [0, -1]);
  }
  return freeze({
    href: read('href'),
    origin: read('origin'),
    protocol: read('protocol'),
    credentials: read('username') !== '' || read('password') !== '',
    host: hostname,
    port: read('port'),
    path: read('pathname') + read('search'),
  });
}

/**
 * Decide whether ``parts`` (a snapshot) may be requested. Returns the frozen target
 * ``{...parts, literal, grant}`` or throws ``networkDenied``. ``grant`` is `literal` (the
 * exact IP literal is declared), `localhost` (declared; only loopback answers accepted) or
 * `none` (every address must be public).
 */
export function checkTarget(parts, patterns, policy, ranges) {
  if (!contains(policy.protocols, parts.protocol)) {
    throw networkDenied(
      `Network access with the URL scheme "${parts.protocol}" is denied: only http: and https: are allowed.`,
      REASONS.SCHEME,
    );
  }
  const host = parts.host;
  if (parts.credentials) {
    throw networkDenied(
      `Network access to "${host}" is denied: URLs with credentials are not allowed.`,
      REASONS.CREDENTIALS,
    );
  }
  if (!hostAllowed(host, patterns)) {
    throw networkDenied(
      `Network access to "${host}" is denied. Declare it in manifest permissions.network.`,
      REASONS.NOT_DECLARED,
    );
  }
  const literal = isIPLiteral(host);
  let grant = 'none';
  if (literal) {
    if (contains(patterns, host)) grant = 'literal';
    else if (!isPublicAddress(ranges, host)) {
      throw networkDenied(
        `Network access to "${host}" is denied: it is not a public address.`,
        REASONS.NOT_PUBLIC,
      );
    }
  } else if (isLocalhostName(host, policy)) {
    if (host === policy.localhost.grant && contains(patterns, host)) grant = 'localhost';
    else {
      throw networkDenied(
        `Network access to "${host}" is denied: it is not a public address.`,
        REASONS.NOT_PUBLIC,
      );
    }
  }
  return freeze({ ...parts, literal, grant });
}
