"""How much room a tool's file view (fileview.py) takes of the kernel: the paths its tmpfs
holds, how that tmpfs is sized, and the most a view may hold."""

from __future__ import annotations

import os
from collections.abc import Iterable

from splice_build.records import dataclass

# A link text of this many bytes or more takes a page of the tmpfs (shorter ones are kept
# with the inode: the kernel's mm/shmem.c, SHORT_SYMLINK_LEN).
_INLINE_LINK_TEXT = 128

# The most paths a view's tmpfs may hold (``view_paths``). Each is an inode and a dentry of
# the kernel's memory, 1 to 1.25 KiB, for as long as the tool runs: the most the schema
# allows, 2,000 grants 128 directories deep, is 255,000 paths, 312 MiB and 10 s of building
# for every tool process. This bound holds a view to 40 MiB and about a second (measured:
# 32,500 paths, 32 MiB, 1.1 s); it admits both lists at the schema's length up to 8
# directories deep, one of them up to 16 (or 256 grants 128 deep).
MOST_VIEW_PATHS = 32_768


def view_paths(places: Iterable[str]) -> int:
    """How many paths the tmpfs of a view holds at most, ``places`` being its binds' targets
    and its links' paths: its root, ``/proc``, each place and every directory on the way to
    one, each counted once (also where an earlier bind holds it already: never too few)."""
    paths = {"/proc"}
    for place in places:
        while place not in paths and place != "/":
            paths.add(place)
            place = os.path.dirname(place)
    return 1 + len(paths)


@dataclass(frozen=True)
class TmpfsSize:
    """The new root's tmpfs, sized from the view it holds: an inode for each of its paths
    (``view_paths``) and a page for each link whose text does not fit in its inode.

    A fixed ``size=64k,nr_inodes=4096`` made every start of a package granted 33 paths 128
    directories deep fail (``ENOSPC`` creating a mount point, ``TOOL_CRASHED``) after its
    directories were made, and left out, without a word, every link to a grant past the
    16th whose text was 128 bytes or more. The kernel allocates only what is made:
    ``nr_inodes`` is a ceiling, never a reservation (``MOST_VIEW_PATHS`` bounds what is
    made). A quarter more inodes than counted covers the extended attributes a security
    module may label each inode with (the kernel takes their bytes from the same allowance,
    1 KiB an inode)."""

    inodes: int
    bytes: int

    @classmethod
    def of(cls, paths: int, link_texts: Iterable[str]) -> TmpfsSize:
        """The size of a view of ``paths`` paths (``view_paths``) whose links' texts are
        ``link_texts``."""
        pages = 1 + sum(len(os.fsencode(text)) >= _INLINE_LINK_TEXT for text in link_texts)
        return cls(paths + paths // 4, pages * os.sysconf("SC_PAGE_SIZE"))

    def options(self) -> str:
        """The tmpfs's mount options (mounted read-only once built)."""
        return f"mode=0755,size={self.bytes},nr_inodes={self.inodes}"
