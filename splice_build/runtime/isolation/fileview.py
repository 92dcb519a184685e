"""The tool's file view (issue #17): a fresh root that holds only what the tool may see.

Node's permission model checks path strings and the kernel then follows symbolic links, so
a link inside a grant (or a directory swapped for one while a call runs) could lead outside
it. In the OS layer the tool's mount namespace therefore gets a new root, a small read-only
tmpfs, holding bind mounts of exactly:

- the Node binary, its ELF interpreter and the shared libraries that interpreter resolves
  for it (``ld.so --list``, once per binary), and ``/etc/ld.so.cache``: read-only, the only
  place from which a program can be executed (besides the package directory);
- the host directory (``runtime/host``) and the package directory, read-only;
- the declared ``fs`` paths, read-only or read-write as granted, never executable;
- ``/dev/null``, ``/dev/zero``, ``/dev/random``, ``/dev/urandom``, and a ``/proc`` of the
  tool's PID namespace.

Every path is bound once, at its canonical path, and the symbolic links met on the way to
it are recreated as they are on the host (``resolve``), so the path given to Node leads
there as it does outside: Node's ``--allow-fs-*`` flags, module URLs and the host's paths
keep working, and a grant that is itself a link still looks like one. Nothing else exists:
no ``/tmp``, home, ``/etc`` or project outside the grants, so a link to anywhere else leads
nowhere. Directories on the way to a bind exist (empty, read-only) so the bind has a place;
the working directory is ``/``.

How (as bubblewrap builds its root, with the file-descriptor mount API):

1. ``plan_view`` (parent) resolves each source to its canonical path, noting the links;
2. ``build`` (the namespace's PID 1, before exec) makes every mount private, opens each
   source without following any symbolic link (``openat2`` with ``RESOLVE_NO_SYMLINKS``)
   and clones its mount tree (``open_tree``), adding read-only/nosuid/nodev/noexec to the
   whole clone (``mount_setattr``, recursive: submounts are covered too); all before
   anything is mounted over a host path;
3. it mounts the tmpfs over ``/tmp`` (seen only in this namespace), mounts the private
   ``/proc`` in it, creates each mount point (only on that tmpfs, never following a link,
   never in a host directory), attaches each clone (``move_mount``) and recreates the
   links;
4. it makes the tmpfs read-only, ``pivot_root``\\ s into it and detaches the old root.

A source that does not exist is left out (the path then does not exist for the tool either),
and so is a grant that lies inside a writable grant or is reached through a link inside one:
the tool may have put that link there itself (``plan_view``).
A symbolic link that appears in a source path between the parent's resolution and the mount
fails the start instead, and so does a grant that is no longer the file or directory (device
and inode) the parent planned (``SourceChanged``: the child reports which source, so the
parent refuses with the code of what changed, the package or a grant): the plan is part of
the warm pool's key (``SandboxSpec.planned``), so a process never binds anything but what its
key names.
``support.detect`` builds a view once in a throw-away child: where the kernel refuses a step,
the OS layer runs without a file view and says why (``splice doctor``,
``isolation.unavailable``).
"""

from __future__ import annotations

import errno
import os
import stat
import struct
import subprocess
from collections.abc import Callable, Iterable
from functools import lru_cache
from pathlib import Path

from splice_build.file_keys import same_file
from splice_build.records import dataclass
from splice_build.runtime.isolation.kernel import (
    MOUNT_ATTR_NODEV,
    MOUNT_ATTR_NOEXEC,
    MOUNT_ATTR_NOSUID,
    MOUNT_ATTR_RDONLY,
    RESOLVE_NO_MAGICLINKS,
    RESOLVE_NO_SYMLINKS,
    Kernel,
)
from splice_build.runtime.isolation.view_room import TmpfsSize, view_paths

# Where the new root's tmpfs is mounted before pivot_root: an existing directory whose host
# contents are hidden only inside this mount namespace (the sources were cloned before).
BASE = "/tmp"
EXECUTABLE = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV
READ_ONLY = EXECUTABLE | MOUNT_ATTR_NOEXEC
WRITABLE = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC
# Device nodes need a mount without nodev; writing to a device is allowed on a read-only mount.
DEVICE = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC
DEVICES = ("/dev/null", "/dev/zero", "/dev/random", "/dev/urandom")
LD_CACHE = "/etc/ld.so.cache"

# O_PATH is Linux only (the view is never built elsewhere; the module still imports there).
_PATH = getattr(os, "O_PATH", 0) | os.O_NOFOLLOW | os.O_CLOEXEC
_PT_INTERP = 3


@dataclass(frozen=True)
class Bind:
    """One bind mount of the view."""

    source: str  # canonical host path (no symbolic link in it)
    target: str  # absolute path inside the view
    attrs: int  # MOUNT_ATTR_* added to the clone
    directory: bool
    # A grant's or the package directory's (st_dev, st_ino) when the view was planned: the
    # mount must be that very file or directory (None: not checked, Node's files, devices).
    identity: tuple[int, int] | None = None


@dataclass(frozen=True)
class FileView:
    binds: tuple[Bind, ...]  # parents before their children
    # Symbolic links on the way to a bind, recreated as they are on the host: (path, text).
    links: tuple[tuple[str, str], ...] = ()
    # The package directory's bind as planned (None: nothing was there to bind): what the
    # runtime hashes (runtime.py ``_check_bound``), never the path resolved again later.
    package: Bind | None = None

    def grants_outside(self, root: str) -> tuple[Bind, ...]:
        """The grants' binds (a planned identity, not the package directory) whose source is
        neither ``root`` (a canonical path) nor below it."""
        return tuple(
            bind
            for bind in self.binds
            if bind.identity is not None
            and bind != self.package
            and bind.source != root
            and not _strictly_inside(bind.source, root)
        )

    def paths(self) -> int:
        """The paths its tmpfs holds at most (``view_paths`` of its binds and links)."""
        return view_paths([bind.target for bind in self.binds] + [w for w, _ in self.links])

    def tmpfs(self) -> TmpfsSize:
        """What the new root's tmpfs must hold for this view (``TmpfsSize``)."""
        return TmpfsSize.of(self.paths(), [text for _where, text in self.links])

    def descriptors(self) -> int:
        """The descriptors ``build`` holds at once, at most: a clone of each bind, the new
        root, and the directories on the way to the deepest mount point with that point."""
        places = [bind.target for bind in self.binds] + [where for where, _ in self.links]
        return len(self.binds) + 1 + max((place.count("/") for place in places), default=1)

    def kind_of(self, source: str) -> str:
        """What the bind of ``source`` is: ``package``, ``grant`` (a planned identity) or
        ``runtime`` (Node's files, the host, the devices)."""
        if self.package is not None and source == self.package.source:
            return "package"
        found = next((bind for bind in self.binds if bind.source == source), None)
        return "grant" if found is not None and found.identity is not None else "runtime"


def planned_paths(node: Path, host: Path, package: Path, grants: Iterable[Path]) -> int:
    """``view_paths`` of the view ``plan_view`` would make of these, every grant counted as
    if it existed (none needs to: the count is taken before the runtime makes any), each at
    its canonical path with the links on the way to it: never fewer than the view holds
    once they exist, but for a link changed in between."""
    places = []
    for bind, links in _fixed_entries(node):
        places += [bind.target, *(where for where, _text in links)]
    for path in (host, package, *grants):
        source, links = resolve(str(path))
        places += [source, *(where for where, _text in links)]
    return view_paths(places)


class SourceChanged(OSError):
    """A source of the view changed while it was planned, or between its plan and its bind
    (``build``): a symbolic link on its path, or another file or directory (or none) in its
    place. ``source`` is the bind's canonical path, ``kind`` what it is
    (``FileView.kind_of``; empty in the child, which does not say); nothing was run."""

    def __init__(self, code: int, source: str, why: str, kind: str = "") -> None:
        super().__init__(code, f"{source}: {why}")
        self.source = source
        self.kind = kind


class OutOfFiles(OSError):
    """The view could not be built: it ran out of descriptors under the program's hard
    open-file limit ``hard`` (the soft limit was raised to ``hard`` first); ``needed``: what
    it takes, ``FileView.descriptors`` beside the ``own`` the program had. Nothing was run."""

    def __init__(self, hard: int, view: FileView, own: int) -> None:
        self.hard = hard
        self.own = own
        self.needed = view.descriptors() + own
        super().__init__(
            errno.EMFILE,
            f"the file view holds up to {view.descriptors()} descriptors at once, beside the "
            f"program's own {own}, and the hard open-file limit ({hard}) ran out",
        )


class IsolationFailed(OSError):
    """A step of the OS layer the kernel refused in the child, with its errno and the step
    (the message of ``Kernel``'s errors names it): ``Popen`` passes on only "Exception
    occurred in preexec_fn", and a view that ran out of room on its tmpfs was told as
    nothing more. Nothing was run."""

    def __init__(self, code: int, step: str) -> None:
        name = errno.errorcode.get(code, str(code))
        super().__init__(code, f"the sandbox's isolation could not be applied: {step} ({name})")


_CHANGED = b"changed "
_OUT_OF_FILES = b"out-of-files "
_REFUSED = b"refused "


def failure_report(exc: OSError) -> bytes:
    """What the child writes on its report pipe about the failure ``exc`` of its isolation
    (``Popen`` passes on only that the ``preexec_fn`` failed). ``reported_failure`` reads it."""
    if isinstance(exc, SourceChanged):
        return _CHANGED + os.fsencode(exc.source)
    if isinstance(exc, OutOfFiles):
        return _OUT_OF_FILES + str(exc.own).encode()
    step = exc.strerror or os.strerror(exc.errno or 0)
    return _REFUSED + f"{exc.errno or 0} {step}".encode("utf-8", "replace")


def reported_failure(report: bytes, view: FileView | None, hard_limit: int) -> OSError | None:
    """The error the child's ``failure_report`` names (None for an empty report):
    ``SourceChanged`` with its kind, ``OutOfFiles`` or ``IsolationFailed``."""
    if report.startswith(_CHANGED) and view is not None:
        source = os.fsdecode(report[len(_CHANGED) :])
        why = "changed after the file view was planned"
        return SourceChanged(errno.ESTALE, source, why, view.kind_of(source))
    if report.startswith(_REFUSED):
        code, _, step = report[len(_REFUSED) :].decode("utf-8", "replace").partition(" ")
        return IsolationFailed(int(code), step)
    if report.startswith(_OUT_OF_FILES) and view is not None:
        return OutOfFiles(hard_limit, view, int(report[len(_OUT_OF_FILES) :]))
    return None


def elf_interpreter(binary: Path) -> str | None:
    """The ``PT_INTERP`` path of a 64-bit ELF executable (None for a static one)."""
    with open(binary, "rb") as f:
        header = f.read(64)
        if header[:4] != b"\x7fELF" or header[4] != 2:
            raise OSError(f"{binary} is not a 64-bit ELF executable")
        order = "<" if header[5] == 1 else ">"
        phoff = struct.unpack_from(order + "Q", header, 0x20)[0]
        phentsize, phnum = struct.unpack_from(order + "HH", header, 0x36)
        f.seek(phoff)
        table = f.read(phentsize * phnum)
        for index in range(phnum):
            entry = index * phentsize
            p_type = struct.unpack_from(order + "I", table, entry)[0]
            if p_type == _PT_INTERP:
                offset = struct.unpack_from(order + "Q", table, entry + 8)[0]
                size = struct.unpack_from(order + "Q", table, entry + 32)[0]
                f.seek(offset)
                return f.read(size).rstrip(b"\0").decode()
    return None


# ``<interpreter> --list`` processes started ahead by ``prefetch_node_files``.
_listing: dict[tuple[Path, str], subprocess.Popen[str]] = {}


def _list(interpreter: str, node: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [interpreter, "--list", str(node)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={},
    )


def prefetch_node_files(node: Path) -> None:
    """Start the loader's listing of ``node`` now; ``node_files`` collects it (``splice run``
    calls this before it verifies the package from bytes, so that both run side by side).
    Raises OSError when the loader cannot be started."""
    interpreter = elf_interpreter(node)
    key = (node, interpreter or "")
    if interpreter is not None and key not in _listing and not node_files.cache_info().currsize:
        _listing[key] = _list(interpreter, node)


@lru_cache(maxsize=4)
def node_files(node: Path) -> tuple[str, ...]:
    """What executing ``node`` reads: the binary, its interpreter, the libraries the
    interpreter resolves for it (asked, not guessed: ``<interpreter> --list``, glibc's and
    musl's) and the loader's cache. Raises OSError naming what failed."""
    interpreter = elf_interpreter(node)
    if interpreter is None:
        return (str(node),)
    started = _listing.pop((node, interpreter), None) or _list(interpreter, node)
    try:
        stdout, stderr = started.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        started.kill()
        started.communicate()
        raise OSError(f"{interpreter} --list {node} took more than 30 s") from None
    if started.returncode != 0:
        raise OSError(f"{interpreter} --list {node} failed: {stderr.strip()}")
    files = [str(node), interpreter]
    for line in stdout.splitlines():
        name, arrow, rest = line.strip().partition("=>")
        path = (rest if arrow else name).split(" (")[0].strip()
        if "not found" in path:
            raise OSError(f"{node} needs {name.strip()}, which the loader does not find")
        if path.startswith("/"):
            files.append(path)
    if os.path.isfile(LD_CACHE):
        files.append(LD_CACHE)
    return tuple(dict.fromkeys(files))


def resolve(path: str) -> tuple[str, list[tuple[str, str]]]:
    """``path`` made canonical the way the kernel resolves it, with every symbolic link met
    on the way: ``(canonical path, [(link path with a canonical parent, link text), …])``.
    Raises OSError (ELOOP) for more than 40 links."""
    links: list[tuple[str, str]] = []
    pending = [part for part in os.path.abspath(path).split("/") if part]
    done = "/"
    while pending:
        part = pending.pop(0)
        if part in (".", ""):
            continue
        if part == "..":
            done = os.path.dirname(done)
            continue
        here = os.path.join(done, part)
        try:  # one look (a link swapped in or out between two looks cannot fail the plan)
            text = os.readlink(here)
        except OSError:  # not a link (EINVAL), or nothing there: as ``os.path.islink``
            done = here
            continue
        if len(links) >= 40:
            raise OSError(40, f"{path}: too many levels of symbolic links")
        links.append((here, text))
        if text.startswith("/"):
            done = "/"
        pending[:0] = [piece for piece in text.split("/") if piece]
    return done, links


def _entry(path: str, attrs: int) -> tuple[Bind, list[tuple[str, str]]]:
    source, links = resolve(path)
    return Bind(source, source, attrs, os.path.isdir(source)), links


def _grant_entry(
    path: str, attrs: int, kind: str = "grant"
) -> tuple[Bind, list[tuple[str, str]]] | None:
    """A grant's bind with the identity of what it names now; None when nothing is there.
    SourceChanged when a link took the canonical path's place between the two looks (its
    identity would be the link's, and ``build`` could bind the link itself)."""
    source, links = resolve(path)
    try:
        found = os.lstat(source)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(found.st_mode):
        raise SourceChanged(errno.ESTALE, source, "changed while the file view was planned", kind)
    identity = same_file(found)
    return Bind(source, source, attrs, stat.S_ISDIR(found.st_mode), identity), links


def grants_named(paths: Iterable[Path]) -> tuple[tuple[str, tuple[int, int] | None], ...]:
    """What each of ``paths`` names now, as a view's plan records it: its canonical path with
    its device and inode (the path itself and None when nothing is there). SourceChanged as
    ``_grant_entry``."""
    named = []
    for path in paths:
        grant = _grant_entry(str(path), READ_ONLY)
        named.append((str(path), None) if grant is None else (grant[0].source, grant[0].identity))
    return tuple(named)


@lru_cache(maxsize=4)
def _fixed_entries(node: Path) -> tuple[tuple[Bind, list[tuple[str, str]]], ...]:
    """What every tool of this Node shares: its files (reached by the paths the loader opens)
    and the devices."""
    entries = [_entry(path, EXECUTABLE) for path in node_files(node)]
    entries += [_entry(device, DEVICE) for device in DEVICES if os.path.exists(device)]
    return tuple(entries)


def plan_view(
    node: Path,
    host: Path,
    package: Path,
    read: Iterable[Path],
    write: Iterable[Path],
    shared: Iterable[Path] = (),
) -> FileView:
    """The view of one sandbox process (computed in the parent; raises OSError when Node's
    files cannot be listed). Each path is bound once, at its canonical path, and every
    symbolic link on the way to it is recreated, so the path given to Node leads there as it
    does outside (and a grant that is itself a link still looks like one). Earlier entries
    win a shared target; a path granted for both reading and writing is writable. A grant
    that does not exist (yet) is left out; one inside a writable grant, or reached through a
    link inside one or inside a ``shared`` grant (another package's write grant), is not
    bound (``shaped_by_tool``). Each grant's bind records the device
    and inode it names now, so the view is a value a warm process can be keyed by: a grant
    renamed away and replaced makes another view, and ``build`` refuses to mount anything
    else under a planned grant. The package directory's bind records its identity too: the
    runtime hashes that very directory once the process has bound it (runtime.py
    ``_check_bound``), so the bytes checked are the bytes the tool runs."""
    write = tuple(write)
    entries: list[tuple[Bind | None, list[tuple[str, str]]]] = list(_fixed_entries(node))
    package_entry = _grant_entry(str(package), EXECUTABLE, "package") or (None, [])
    entries += [_entry(str(host), READ_ONLY), package_entry]
    wanted = [(path, WRITABLE) for path in write] + [(path, READ_ONLY) for path in read]
    writable = roots(canonical(write))
    shaped = writable | roots(canonical(shared))
    for path, attrs in wanted:
        grant = _grant_entry(str(path), attrs)
        if grant is None:
            continue
        bind, met = grant
        # A link on the way outside every writable grant (no tool can have made it) is
        # still recreated: it leads into the writable grant's bind, as on the host.
        kept = [(where, text) for where, text in met if not _inside_any([where], shaped)]
        if len(kept) == len(met) and not _inside_any([bind.source], writable):
            entries.append((bind, kept))
        else:
            entries.append((None, kept))
    by_target: dict[str, Bind] = {}
    links: dict[str, str] = {}
    for bind, met in entries:
        if bind is not None and bind.target != "/":
            by_target.setdefault(bind.target, bind)
        for where, text in met:
            links.setdefault(where, text)
    ordered = sorted(by_target.values(), key=lambda bind: bind.target.split("/"))
    planned = package_entry[0]
    bound = None if planned is None else by_target.get(planned.target)
    return FileView(tuple(ordered), tuple(sorted(links.items())), bound)


def shaped_by_tool(path: str, writable: Roots, shared: Roots = frozenset()) -> bool:
    """Whether the grant ``path`` lies inside a writable grant, or is reached through a link
    that lies inside one or inside a ``shared`` grant (``writable``: the package's write
    grants' canonical paths, ``roots(canonical(...))``; ``shared``: those of the project's
    other packages, whose tools can leave a link there just as well; a real directory there is
    still bound, as the user's: the pipeline of one package writing what another reads).

    A tool may create, rename or replace anything inside its write grants, links included,
    so such a grant names what the tool chose at its last run, not what the user consented
    to: a read grant ``work/ref`` under a write grant ``work`` would otherwise be bound
    wherever a link the tool left at ``work/ref`` points (``~/.ssh``) for the next process,
    and the runtime would create a missing write grant ``work/a/out`` through a link at
    ``work/a``. Such a grant is neither bound nor created: what lies inside the writable
    grant is in the view through that grant already, and a link there leads only where the
    view leads."""
    source, links = resolve(path)
    met = [where for where, _text in links]
    return _inside_any([source, *met], writable) or _inside_any(met, shared)


def canonical(paths: Iterable[Path]) -> list[str]:
    """The canonical form of each of ``paths`` (``resolve``)."""
    return [resolve(str(path))[0] for path in paths]


# Directories as ``_inside_any`` looks them up: each without its trailing slashes.
Roots = frozenset[str]


def roots(paths: Iterable[str]) -> Roots:
    """``paths`` as ``Roots``."""
    return frozenset(path.rstrip("/") for path in paths)


def _inside_any(places: Iterable[str], within: Roots) -> bool:
    """Whether one of ``places`` lies strictly inside one of ``within``: each of its
    ancestors looked up once (``_strictly_inside`` for every place and root made a run of a
    package granted 1,000 write paths compare them a million times over)."""
    return any(
        place[:index] in within
        for place in places
        for index, char in enumerate(place)
        if char == "/"
    )


def _strictly_inside(path: str, root: str) -> bool:
    return path.startswith(root.rstrip("/") + "/")


def _open_source(kernel: Kernel, path: str, directory: bool) -> int | None:
    """An ``O_PATH`` descriptor of ``path``, resolved without following any symbolic link
    (OSError ``ELOOP`` when one is there); None when it does not exist."""
    flags = _PATH | (os.O_DIRECTORY if directory else 0)
    try:
        return kernel.open_resolved(path, flags, RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)
    except FileNotFoundError:
        return None


# Errors of a resource running out, not of the path: the build fails rather than skip a bind.
_EXHAUSTED = (errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOSPC)


class _MountPoints:
    """Mount points under the new root's tmpfs (``root``), created there when missing.

    Never follows a link and never creates anything outside the tmpfs (inside an earlier
    bind, a missing path stays missing). The directories on the way to the last path asked
    for stay open (the binds come parents first, so the next one is mostly below them); any
    other is closed, so the descriptors held are as many as one path is deep, not one for
    each directory of the view: a package granted 60 paths 128 directories deep held 7,700
    at once, past many a program's hard limit. A directory is forgotten too under a target
    once something is attached there (it would name the tmpfs directory underneath)."""

    def __init__(self, kernel: Kernel, root: int) -> None:
        self._kernel = kernel
        self._tmpfs = os.fstat(root).st_dev
        self._root = root
        self._dirs: dict[str, int | None] = {}

    def _directory(self, path: str) -> int | None:
        self._forget(lambda open_path: not _on_the_way(open_path, path))
        return self._walk(path)

    def _walk(self, path: str) -> int | None:
        if path == "/":
            return self._root
        if path in self._dirs:
            return self._dirs[path]
        parent = self._walk(os.path.dirname(path))
        fd = None if parent is None else self._child(parent, os.path.basename(path), True)
        self._dirs[path] = fd
        return fd

    def _child(self, parent: int, name: str, directory: bool) -> int | None:
        flags = _PATH | (os.O_DIRECTORY if directory else 0)
        try:
            return os.open(name, flags, dir_fd=parent)
        except FileNotFoundError:
            if os.fstat(parent).st_dev != self._tmpfs:
                return None
            return _create(parent, name, directory)
        except OSError as exc:  # a link, or a file where a directory must be
            if exc.errno in _EXHAUSTED:  # never a missing mount point: the view would lack it
                raise
            return None

    def open(self, target: str, directory: bool) -> int | None:
        """The mount point for ``target`` (None when it cannot be made), the caller's to
        close."""
        parent = self._directory(os.path.dirname(target))
        if parent is None:
            return None
        fd = self._child(parent, os.path.basename(target), directory)
        if fd is None:
            return None
        mode = os.fstat(fd).st_mode
        if stat.S_ISLNK(mode) or stat.S_ISDIR(mode) != directory:
            os.close(fd)
            return None
        return fd

    def link(self, where: str, text: str) -> None:
        """Recreate the host's link ``where`` → ``text`` on the tmpfs (left alone when its
        place is inside a bind, where the host's own link already is, or is taken)."""
        parent = self._directory(os.path.dirname(where))
        if parent is None or os.fstat(parent).st_dev != self._tmpfs:
            return
        try:
            os.symlink(text, os.path.basename(where), dir_fd=parent)
        except OSError as exc:
            if exc.errno in _EXHAUSTED:  # never a missing link: the view would lack it
                raise
            return

    def attached(self, target: str) -> None:
        self._forget(lambda open_path: _on_the_way(target, open_path))

    def _forget(self, which: Callable[[str], bool]) -> None:
        for path in [path for path in self._dirs if which(path)]:
            fd = self._dirs.pop(path)
            if fd is not None:
                os.close(fd)

    def close(self) -> None:
        self._forget(lambda _path: True)


def _on_the_way(ancestor: str, path: str) -> bool:
    """Whether ``ancestor`` is ``path`` or a directory above it."""
    return path == ancestor or _strictly_inside(path, ancestor)


def _create(parent: int, name: str, directory: bool) -> int:
    """Create an empty directory or file ``name`` on the tmpfs and open it ``O_PATH``."""
    try:
        if directory:
            os.mkdir(name, 0o755, dir_fd=parent)
            return os.open(name, _PATH | os.O_DIRECTORY, dir_fd=parent)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        os.close(os.open(name, flags, 0o644, dir_fd=parent))
        return os.open(name, _PATH, dir_fd=parent)
    except OSError as exc:
        raise OSError(exc.errno, f"create a mount point on the new root: {exc.strerror}") from exc


def _check_identity(bind: Bind, source: int | None) -> None:
    """SourceChanged (ESTALE) when a grant's source is no longer what the view was planned
    with."""
    if bind.identity is None:
        return
    found = None
    if source is not None:
        now = os.fstat(source)
        found = same_file(now)
    if found != bind.identity:
        if source is not None:
            os.close(source)
        raise SourceChanged(errno.ESTALE, bind.source, "changed after the file view was planned")


def _open_planned(kernel: Kernel, bind: Bind) -> int | None:
    """``_open_source`` of ``bind``, checked against its plan (SourceChanged otherwise: a
    symbolic link that appeared on its path since, or another file or directory)."""
    try:
        source = _open_source(kernel, bind.source, bind.directory)
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
        why = "a symbolic link or a file appeared on its path after the file view was planned"
        raise SourceChanged(exc.errno, bind.source, why) from None
    _check_identity(bind, source)
    return source


def build(kernel: Kernel, view: FileView) -> None:
    """Steps 2–4 (in the namespace's PID 1, before exec): afterwards ``/`` is the view and
    the working directory. Raises OSError naming the step the kernel refused.

    The mount points are made under umask 022 whatever the program's (given back before
    exec, for the files the tool writes): under a host's ``os.umask(0o777)`` they were made
    mode 000 and Node, without capabilities, could not reach its own libraries (every call
    TOOL_CRASHED, exit code 127)."""
    import resource

    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    own = hard  # every one, when not even the program's own can be listed
    try:
        own = len(os.listdir("/proc/self/fd")) - 1  # without the one listdir held
        _build(kernel, view)
    except OSError as exc:
        if exc.errno != errno.EMFILE:
            raise
        raise OutOfFiles(hard, view, own) from exc


def _build(kernel: Kernel, view: FileView) -> None:
    kernel.make_mounts_private()
    opened: list[int] = []
    points: _MountPoints | None = None
    umask = os.umask(0o022)
    try:
        trees: list[tuple[Bind, int]] = []
        for bind in view.binds:
            source = _open_planned(kernel, bind)
            if source is None:
                continue
            try:
                tree = kernel.clone_tree(source)
            finally:
                os.close(source)
            opened.append(tree)
            kernel.restrict(tree, bind.attrs, recursive=True)
            trees.append((bind, tree))
        kernel.mount_tmpfs(BASE, view.tmpfs().options())
        root = os.open(BASE, _PATH | os.O_DIRECTORY)
        opened.append(root)
        points = _MountPoints(kernel, root)
        proc = points.open("/proc", directory=True)
        if proc is None:
            raise OSError(2, "mount /proc: no mount point")
        os.close(proc)
        kernel.mount_proc(f"{BASE}/proc")
        points.attached("/proc")
        for bind, tree in trees:
            point = points.open(bind.target, bind.directory)
            if point is not None:
                try:
                    kernel.attach_tree(tree, point)
                finally:
                    os.close(point)
                points.attached(bind.target)
        for where, text in view.links:
            points.link(where, text)
        kernel.restrict(root, READ_ONLY, recursive=False)
        os.chdir(BASE)
        kernel.pivot_to_cwd()
    finally:
        os.umask(umask)
        if points is not None:
            points.close()
        for fd in opened:
            os.close(fd)
