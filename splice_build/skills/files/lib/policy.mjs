/**
 * The path policy of @splice/files as pure string rules (no file system access). A path is taken
 * exactly as given: never percent-decoded, never Unicode-normalized, so "%2e%2e" and "．．" are
 * ordinary names. Checks run in order of concern, each over the whole path:
 *
 * 1. PATH_OUTSIDE_SANDBOX — the path could name something outside workspace/ on some platform:
 *    absolute (/x, and //server or //?/ forms), drive letters (C:), a leading ~, or a ".."
 *    segment. Backslashes count as separators for this check only, because Windows reads
 *    "\\server\share" and "..\x" that way; Windows also trims trailing dots and spaces, so
 *    ".. " and "..." are treated as "..".
 * 2. INVALID_PATH — the path is not portable or not unambiguous: over 512 UTF-16 units, control
 *    characters (NUL included), backslashes, empty or "." segments, and names Windows treats
 *    specially (device names with any extension, trailing dot or space, ":", 8.3 "~N" aliases,
 *    < > " | ? *), refused on every platform so behaviour is the same everywhere.
 * 3. SENSITIVE_PATH — any segment looks like a credential store (seed 004's list).
 */
import { fail, quote } from "./fail.mjs";

export const MAX_PATH_LENGTH = 512;

const DRIVE = /^[A-Za-z]:/;
/** "..", or ".." followed only by dots and spaces (Windows trims those, leaving ".."). */
const PARENT = /^\.\.[. ]*$/;
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const WINDOWS_FORBIDDEN = /[<>:"|?*]/;
const TRAILING_DOT_OR_SPACE = /[. ]$/;
/** Device names, also with spaces before an extension and with superscript digits (COM¹). */
const DEVICE = /^(?:con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³]|conin\$|conout\$) *(?:\..*)?$/i;
const SHORT_NAME_ALIAS = /~[0-9]/;

/**
 * Credential-like names, matched against every segment, case-insensitively (Windows and macOS
 * file systems are case-insensitive). `credentials*` and `secret(s)*` are globs as in the seed:
 * any name starting with "credentials" or "secret" (so "secretary.txt" too), with an optional
 * leading dot. ".yarnrc.yml" is added to ".yarnrc": Yarn 2+ keeps registry tokens there.
 */
const SENSITIVE = [
  /^\.env(?:\..*)?$/i,
  /^\.envrc$/i,
  /\.(?:pem|key|p12|pfx|jks|keystore|kdbx|ppk|asc|gpg)$/i,
  /^id_(?:rsa|dsa|ecdsa|ed25519|xmss)(?:[._-].*)?$/i,
  /^\.(?:ssh|gnupg|aws|azure|kube|docker)$/i,
  /^\.(?:npmrc|yarnrc|yarnrc\.yml|netrc|pgpass|git-credentials|pypirc)$/i,
  /^\.?credentials/i,
  /^\.?secret/i,
];

export function isSensitiveName(name) {
  return SENSITIVE.some((pattern) => pattern.test(name));
}

/** Why a single name is unsafe on Windows, or null. */
export function windowsUnsafeReason(name) {
  if (WINDOWS_FORBIDDEN.test(name)) return 'contains a character Windows does not allow in names (< > : " | ? *)';
  if (TRAILING_DOT_OR_SPACE.test(name)) return "ends with a dot or space (Windows would strip it)";
  if (DEVICE.test(name)) return "is a reserved device name";
  if (SHORT_NAME_ALIAS.test(name)) return "looks like an 8.3 short-name alias (~N)";
  return null;
}

function assertInsideSandbox(path) {
  const unified = path.replaceAll("\\", "/");
  if (unified.startsWith("/")) {
    throw fail("PATH_OUTSIDE_SANDBOX", `${quote(path)} is an absolute or UNC path; paths are relative to workspace/`);
  }
  if (DRIVE.test(path)) throw fail("PATH_OUTSIDE_SANDBOX", `${quote(path)} starts with a drive letter; paths are relative to workspace/`);
  if (path.startsWith("~")) throw fail("PATH_OUTSIDE_SANDBOX", `${quote(path)} refers to a home directory; paths are relative to workspace/`);
  if (unified.split("/").some((segment) => PARENT.test(segment))) {
    throw fail("PATH_OUTSIDE_SANDBOX", `${quote(path)} contains "..", which would leave workspace/`);
  }
}

function assertWellFormed(path, segments) {
  if (path.length > MAX_PATH_LENGTH) throw fail("INVALID_PATH", `path is longer than ${MAX_PATH_LENGTH} characters`);
  if (path.includes("\0")) throw fail("INVALID_PATH", `${quote(path)} contains a NUL character`);
  if (CONTROL.test(path)) throw fail("INVALID_PATH", `${quote(path)} contains control characters`);
  if (path.includes("\\")) throw fail("INVALID_PATH", `${quote(path)} contains a backslash; use "/" as the separator`);
  for (const segment of segments) {
    if (segment === "" || segment === ".") {
      throw fail("INVALID_PATH", `${quote(path)} contains an empty or "." segment`);
    }
    const reason = windowsUnsafeReason(segment);
    if (reason) throw fail("INVALID_PATH", `${quote(path)}: ${quote(segment)} ${reason}`);
  }
}

/**
 * Checks a caller's path and returns its segments. With `allowRoot`, exactly "." names
 * workspace/ itself and yields no segments (files.list); elsewhere "." is an invalid segment.
 */
export function checkPath(path, { allowRoot = false } = {}) {
  assertInsideSandbox(path);
  if (allowRoot && path === ".") return [];
  const segments = path.split("/");
  assertWellFormed(path, segments);
  for (const segment of segments) {
    if (isSensitiveName(segment)) {
      throw fail("SENSITIVE_PATH", `${quote(path)} looks like a credential or secret file and cannot be accessed`);
    }
  }
  return segments;
}
