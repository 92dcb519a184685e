"""Runtime limits (docs/compatibility.md#runtime, docs/compatibility.md#capability-channel); one place, each value with its source."""

from __future__ import annotations

MAX_LOG_BYTES = 64 * 1024  # maxLogBytes, 4.2
MAX_OUTPUT_BYTES = 1024 * 1024  # maxOutputBytes (serialized UTF-8), 4.2
MAX_INPUT_BYTES = 4 * 1024 * 1024  # maxInputBytes, 4.2
# Not in the reference: the parent refuses deeper output so nothing downstream (schema
# validation, redaction, MCP encoding) can hit Python's recursion limit (issue #3). Twice the
# input limit, so a tool may wrap a 256-deep input (json.parse returns {value, type}).
MAX_OUTPUT_DEPTH = 512
# Levels a frame adds around the value it carries ({"type": "result", "output": …}).
FRAME_ENVELOPE_DEPTH = 1
# JSON.stringify never writes an integer literal longer than 21 digits (larger numbers use an
# exponent); anything longer is forged by the tool process (issue #3: 5,000-digit integers).
MAX_NUMBER_LITERAL = 400

DEFAULT_TIMEOUT_MS = 10_000  # tool timeoutMs default, 1.3
MAX_TIMEOUT_MS = 60_000
# Redaction of a call's errors and logs counts against the call's deadline: it may end at most
# this long after it (a tool that used all its time still gets its logs), and text not scanned
# by then is replaced, never shown (docs/security.md#redaction).
REDACTION_GRACE_S = 2.0

MAX_CAPABILITY_CALLS = 25  # per execution, 4.6
MAX_CAPABILITIES_IN_FLIGHT = 4
# Not in the reference: a broker call outlives the execution that made it (a provider request
# cannot be interrupted), so a tool that starts calls and returns leaves them running; this
# bounds them across every execution of the process (a long-lived MCP server or SDK object).
MAX_CAPABILITIES_IN_FLIGHT_PER_PROCESS = 32
# Each package's share of those (runtime/capabilities.py): two executions' worth, so at least
# four packages together could fill the process, and one package never can.
MAX_CAPABILITIES_IN_FLIGHT_PER_PACKAGE = 8
MAX_CAPABILITY_ARGS_BYTES = 256 * 1024
MAX_CAPABILITY_ARGS_DEPTH = 32
MAX_CAPABILITY_RESULT_BYTES = 4 * 1024 * 1024

# fetch (performed by the parent, runtime/fetch_channel.py; docs/network-security.md). Calls
# and concurrency are bounded per execution like capability calls; the host queues calls
# beyond the in-flight limit instead of failing them (as browsers queue connections).
MAX_FETCH_CALLS = 64
MAX_FETCHES_IN_FLIGHT = 6
MAX_FETCH_REQUEST_BYTES = 4 * 1024 * 1024  # one request body
# One body frame carries at most this many bytes (base64 in the frame), both directions.
FETCH_CHUNK_BYTES = 256 * 1024
# Response chunks the parent may send before the host asks (every request starts with this
# credit, so a small response arrives with its head), and the most credit the host may hold;
# the parent never sends a chunk beyond the credit, so a few chunks at most are buffered.
FETCH_INITIAL_CREDIT = 8
MAX_FETCH_CREDIT = 16
MAX_FETCH_URL_CHARS = 16 * 1024
MAX_FETCH_HEADERS = 256
MAX_FETCH_HEADER_BYTES = 64 * 1024  # names and values of one request together

# Memory: V8 heap cap plus an address-space cap for the whole process. Node 24 reserves about
# 1.3 GiB of address space when idle, so 2 GiB leaves room for ordinary work while a 1 GiB
# Buffer fails (measured; see docs/runtime.md).
HEAP_LIMIT_MB = 256
ADDRESS_SPACE_LIMIT_BYTES = 2 * 1024 * 1024 * 1024

# Parent → host: the job frame, at most what host/channel.mjs reads (MAX_INCOMING_FRAME; one
# number, tests/runtime/test_job_frame.py ties them). The input is at most MAX_INPUT_BYTES;
# the rest is the context (the grants) and the declared variables' values.
MAX_JOB_FRAME_BYTES = 8 * 1024 * 1024

# Child → parent frames: the largest legitimate frame is a result at MAX_OUTPUT_BYTES plus its
# envelope; capability requests are smaller. Longer frames are discarded while counting.
FRAME_ENVELOPE_SLACK = 64 * 1024
MAX_FRAME_BYTES = MAX_OUTPUT_BYTES + FRAME_ENVELOPE_SLACK

# Parent → host bytes waiting to be written; a host that stops reading its channel while
# asking for more (forged requests) is killed instead of growing the parent's memory.
MAX_PENDING_OUTGOING_BYTES = 64 * 1024 * 1024

# After the result frame the host exits by itself; this grace lets it flush and exit before
# the process group is killed anyway.
EXIT_GRACE_SECONDS = 0.5
