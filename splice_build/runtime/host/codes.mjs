// Every error-code string the host reports to the parent (PROTOCOL.md). The parent maps them
// to final codes; a Python test checks they are members of splice_build.errors.ErrorCode.
export const HOST_CODES = Object.freeze({
  PERMISSION_DENIED: 'PERMISSION_DENIED',
  TOOL_LOAD_FAILED: 'TOOL_LOAD_FAILED',
  TOOL_ERROR: 'TOOL_ERROR',
  INVALID_OUTPUT: 'INVALID_OUTPUT',
  INVALID_INPUT: 'INVALID_INPUT',
  INPUT_TOO_LARGE: 'INPUT_TOO_LARGE',
});

// Node's own code for permission-model denials; the host uses it for its own denials too so
// tools see one code for "not allowed" whatever layer refused.
export const ACCESS_DENIED = 'ERR_ACCESS_DENIED';
