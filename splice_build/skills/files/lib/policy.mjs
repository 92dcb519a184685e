/**
 * The path policy of @splice/files as pure string rules (no file system access). A path is taken
 * exactly as given: never percent-decoded, never Unicode-normalized, so "%2e%2e" and "．．" are
 * ordinary names. The rules run in the order of the TypeScript Splice's files skill, so every
 * path gets the same code from both (docs/compatibility.md, "Official skills"):
 *
 * 1. the whole path: over 512 UTF-16 units, a NUL, or a backslash is INVALID_PATH (so
 *    "\\server\share" and "..\x" are INVALID_PATH); then a leading "/" (also "//server" and
 *    "//?/" forms), a drive letter ("C:") or a leading "~" is PATH_OUTSIDE_SANDBOX;
 * 2. one leading "./" (with any slashes after it) and trailing slashes are dropped: "./a/" is
 *    "a". Nothing left, or ".", names workspace/ itself: files.list only, else INVALID_PATH;
 * 3. each segment in turn: ".." is PATH_OUTSIDE_SANDBOX; an empty or "." segment is
 *    INVALID_PATH; so is a name Windows treats specially, refused on every platform (control
 *    characters, < > : " | ? *, a trailing dot or space — so ".. " and "..." —, device names
 *    with any extension, 8.3 "~N" aliases); a credential-like name is SENSITIVE_PATH.
 *
 * Added here (stricter, never more lenient): C1 control characters and DEL, device names
 * followed by spaces before the extension ("CON .txt"), and the wider credential list below.
 */
import { fail, quote } from "./fail.mjs";

export const MAX_PATH_LENGTH = 512;

const DRIVE = /^[A-Za-z]:/;
const LEADING_DOT_SLASH = /^\.\/+/;
const TRAILING_SLASHES = /\/+$/;
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const WINDOWS_FORBIDDEN = /[<>:"|?*]/;
const TRAILING_DOT_OR_SPACE = /[. ]$/;
/** Device names, also with spaces before an extension and with superscript digits (COM¹). */
const DEVICE = /^(?:con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³]|conin\$|conout\$) *(?:\..*)?$/i;
const SHORT_NAME_ALIAS = /~[0-9]/;

/**
 * Credential-like names, matched against every segment, case-insensitively (Windows and macOS
 * file systems are case-insensitive). `credentials*` and `secret(s)*` are globs (docs/skills.md):
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
  if (CONTROL.test(name)) return "contains control characters";
  if (WINDOWS_FORBIDDEN.test(name)) return 'contains a character Windows does not allow in names (< > : " | ? *)';
  if (TRAILING_DOT_OR_SPACE.test(name)) return "ends with a dot or space (Windows would strip it)";
  if (DEVICE.test(name)) return "is a reserved device name";
  if (SHORT_NAME_ALIAS.test(name)) return "looks like an 8.3 short-name alias (~N)";
  return null;
}

function checkWhole(path) {
  if (path.length > MAX_PATH_LENGTH) throw fail("INVALID_PATH", `path is longer than ${MAX_PATH_LENGTH} characters`);
  if (path.includes("\0")) throw fail("INVALID_PATH", `${quote(path)} contains a NUL character`);
  if (path.includes("\\")) throw fail("INVALID_PATH", `${quote(path)} contains a backslash; use "/" as the separator`);
  if (path.startsWith("/")) {
    throw fail("PATH_OUTSIDE_SANDBOX", `${quote(path)} is an absolute or UNC path; paths are relative to workspace/`);
  }
  if (DRIVE.test(path)) throw fail("PATH_OUTSIDE_SANDBOX", `${quote(path)} starts with a drive letter; paths are relative to workspace/`);
  if (path.startsWith("~")) throw fail("PATH_OUTSIDE_SANDBOX", `${quote(path)} refers to a home directory; paths are relative to workspace/`);
}

function checkSegment(path, segment) {
  if (segment === "..") throw fail("PATH_OUTSIDE_SANDBOX", `${quote(path)} contains "..", which would leave workspace/`);
  if (segment === "" || segment === ".") throw fail("INVALID_PATH", `${quote(path)} contains an empty or "." segment`);
  const reason = windowsUnsafeReason(segment);
  if (reason) throw fail("INVALID_PATH", `${quote(path)}: ${quote(segment)} ${reason}`);
  if (isSensitiveName(segment)) {
    throw fail("SENSITIVE_PATH", `${quote(path)} looks like a credential or secret file and cannot be accessed`);
  }
}

/**
 * Checks a caller's path and returns its segments. With `allowRoot`, a path naming workspace/
 * itself ("", ".", "./") yields no segments (files.list); elsewhere it is INVALID_PATH.
 */
export function checkPath(path, { allowRoot = false } = {}) {
  checkWhole(path);
  const trimmed = path.replace(LEADING_DOT_SLASH, "").replace(TRAILING_SLASHES, "");
  if (trimmed === "" || trimmed === ".") {
    if (allowRoot) return [];
    throw fail("INVALID_PATH", "a file path is required");
  }
  const segments = trimmed.split("/");
  for (const segment of segments) checkSegment(path, segment);
  return segments;
}
