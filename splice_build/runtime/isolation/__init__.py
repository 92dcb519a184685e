"""The OS layer under the in-process guards (issue #14): Linux namespaces (an empty network
namespace always), a private /proc, no capabilities, ``no_new_privs``, a seccomp
allow-list (no sockets) and resource limits for every sandbox process.

- ``support.detect()``: what this kernel allows, and why a layer is not available;
- ``plan.plan_for(mode, support)``: the ``IsolationPlan`` of a sandbox process;
- ``child.make_preexec(plan, parent_pid)``: the code run between fork and exec;
- ``kernel``, ``rlimits``, ``cgroup``: the system calls, the limits, cgroup v2 detection;
- ``seccomp``: the allow-list filter of system calls (no sockets), and its detection.

docs/security.md, "The OS layer", says what it adds, when it is active and what remains.
"""
