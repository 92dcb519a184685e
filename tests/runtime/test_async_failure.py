"""An exception no code caught always fails its call, whatever the tool did to ``process``.

Every way a tool can reach Node's handling of uncaught exceptions and unhandled rejections
(process listeners, ``process.emit``, ``EventEmitter.prototype.emit``, ``_fatalException``,
the capture callback, directly and through ``node:process``'s named exports) is tried
before an error thrown from a timer or a rejection no one handles; the tool then returns a
forged success. The call must fail with the host's verdict (``TOOL_ERROR`` and the error's
message), never succeed (docs/security.md, "A call's verdict").
"""

from __future__ import annotations

import pytest

from splice_build.errors import ErrorCode

pytestmark = pytest.mark.node

# Each hook runs at the top of the tool's module; a refused one (a locked property) throws and
# the tool goes on. ``swallow`` does nothing with the error it is given.
HOOKS = {
    "listeners": "process.on('uncaughtException', swallow); process.on('unhandledRejection', swallow);",
    "prepended_listeners": (
        "process.prependListener('uncaughtException', swallow);"
        " process.prependListener('unhandledRejection', swallow);"
    ),
    "host_listeners_removed": (
        "process.removeAllListeners('uncaughtException');"
        " process.removeAllListeners('unhandledRejection');"
        " process.on('uncaughtException', swallow); process.on('unhandledRejection', swallow);"
    ),
    "process_emit": "process.emit = function () { return true; };",
    "event_emitter_emit": (
        "const { EventEmitter } = await import('node:events');"
        " EventEmitter.prototype.emit = function () { return true; };"
        " delete process.emit;"
    ),
    "fatal_exception_assigned": "process._fatalException = () => true;",
    "fatal_exception_defined": (
        "Object.defineProperty(process, '_fatalException', { value: () => true });"
    ),
    "fatal_exception_deleted": "delete process._fatalException;",
    "capture_callback": (
        "process.setUncaughtExceptionCaptureCallback(null);"
        " process.setUncaughtExceptionCaptureCallback(swallow);"
    ),
    "capture_callback_named_export": (
        "const p = await import('node:process');"
        " p.setUncaughtExceptionCaptureCallback(null);"
        " p.setUncaughtExceptionCaptureCallback(swallow);"
    ),
    "process_prototype_emit": (
        "Object.getPrototypeOf(process).emit = function () { return true; }; delete process.emit;"
    ),
}

FAILURES = {
    "timer_throw": "setTimeout(() => { throw new Error('boom'); }, 0);",
    "unhandled_rejection": "Promise.reject(new Error('boom'));",
    "microtask_throw": "queueMicrotask(() => { throw new Error('boom'); });",
}


def _tool(hook: str, failure: str) -> str:
    return (
        "const swallow = () => {};\n"
        f"try {{ {hook} }} catch {{}}\n"
        "export default async () => {\n"
        f"  {failure}\n"
        "  await new Promise((resolve) => setTimeout(resolve, 100));\n"
        "  return { forged: true };\n"
        "};\n"
    )


@pytest.mark.parametrize("failure", sorted(FAILURES))
@pytest.mark.parametrize("hook", sorted(HOOKS))
def test_an_uncaught_error_fails_the_call_whatever_the_tool_hooked(
    run_tool, hook: str, failure: str
) -> None:
    result = run_tool(_tool(HOOKS[hook], FAILURES[failure]))
    assert not result.ok, result.to_json()
    assert result.error is not None
    assert (result.error.code, result.error.message) == (ErrorCode.TOOL_ERROR, "boom")


def test_the_capture_callback_setter_is_denied(run_tool) -> None:
    body = "export default () => process.setUncaughtExceptionCaptureCallback(null);"
    result = run_tool(body)
    assert result.error is not None and result.error.code == ErrorCode.PERMISSION_DENIED


def test_a_rejection_with_a_value_that_is_no_error_names_it(run_tool) -> None:
    """Node wraps a reason that is not an Error before the host sees it (the strict mode that
    keeps the tool's listeners out of the way); its message quotes the value."""
    body = (
        "export default async () => { Promise.reject('boom');"
        " await new Promise((resolve) => setTimeout(resolve, 100)); return 1; };"
    )
    result = run_tool(body)
    assert result.error is not None and result.error.code == ErrorCode.TOOL_ERROR
    assert result.error.message.endswith('The promise rejected with the reason "boom".')
