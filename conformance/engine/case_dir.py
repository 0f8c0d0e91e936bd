"""A case's working directory, touched only through a descriptor for it (issue 25).

The implementation under test may create, replace or re-point anything in its case directory while the suite
works there. A path checked and then opened by name can be swapped for a symlink in between; so every file
operation of the suite here walks from a descriptor of the directory, one component at a time, with no-follow
opens (`dir_fd`, O_NOFOLLOW). A symlink found on the way is refused, never followed: nothing outside the case
directory can be read, written, deleted or re-permissioned by the suite, whatever was swapped in.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from conformance.bindings.base import HarnessError

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC


class CaseDir:
    def __init__(self, root: Path):
        self.root = root

    @contextmanager
    def _parent(self, name: str, what: str, create: bool = False):
        """A descriptor of the directory that holds `name`, and its last component."""
        parts = PurePosixPath(name).parts
        if not parts or any(p in ("..", "/") for p in parts):
            raise HarnessError(f"{what}: {name!r} is not a path inside the case directory")
        fd = os.open(self.root, _DIR)
        try:
            for part in parts[:-1]:
                if part == ".":
                    continue
                if create:
                    try:
                        os.mkdir(part, dir_fd=fd)
                    except FileExistsError:
                        pass
                try:
                    child = os.open(part, _DIR, dir_fd=fd)
                except OSError as exc:
                    raise _refused(what, name, exc, fd, part) from None
                os.close(fd)
                fd = child
            yield fd, parts[-1]
        finally:
            os.close(fd)

    def write(self, name: str, data: bytes, what: str) -> None:
        with self._parent(name, what, create=True) as (parent, leaf):
            try:
                fd = os.open(leaf, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NONBLOCK | _NOFOLLOW, 0o644,
                             dir_fd=parent)
            except OSError as exc:
                raise _refused(what, name, exc, parent, leaf) from None
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO the implementation made would block a write
                    raise HarnessError(f"{what}: {name!r} is not a regular file (the implementation put something there?)")
                os.write(fd, data)
            finally:
                os.close(fd)

    def read(self, name: str, what: str) -> bytes | None:
        """The file's bytes, or None when it is not a regular file one can open (gone, a directory, unreadable)."""
        with self._parent(name, what) as (parent, leaf):
            try:
                fd = os.open(leaf, os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW, dir_fd=parent)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise _refused(what, name, exc, parent, leaf) from None
                return None
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    return None
                with os.fdopen(os.dup(fd), "rb") as stream:
                    return stream.read()
            finally:
                os.close(fd)

    def size(self, name: str, what: str) -> int | None:
        with self._parent(name, what) as (parent, leaf):
            try:
                info = os.stat(leaf, dir_fd=parent, follow_symlinks=False)
            except FileNotFoundError:
                return None
            return info.st_size if stat.S_ISREG(info.st_mode) else None

    def remove(self, name: str, what: str) -> None:
        """The file, a symlink (not what it points at) or a whole directory tree; nothing if it is gone."""
        with self._parent(name, what) as (parent, leaf):
            try:
                info = os.stat(leaf, dir_fd=parent, follow_symlinks=False)
            except FileNotFoundError:
                return
            try:
                if stat.S_ISDIR(info.st_mode):
                    shutil.rmtree(leaf, dir_fd=parent)  # rmtree with dir_fd never follows a symlink
                else:
                    os.unlink(leaf, dir_fd=parent)
            except OSError as exc:
                raise HarnessError(f"{what}: cannot remove {name!r}: {exc.strerror}") from None

    def mkdir(self, name: str, what: str) -> None:
        with self._parent(name, what, create=True) as (parent, leaf):
            os.mkdir(leaf, dir_fd=parent)

    def symlink(self, points_to: str, name: str, what: str) -> None:
        with self._parent(name, what) as (parent, leaf):
            os.symlink(points_to, leaf, dir_fd=parent)

    def forbid_reading(self, name: str, what: str) -> bool:
        """Take every permission from the file (creating it if need be); whether that now stops a read."""
        with self._parent(name, what, create=True) as (parent, leaf):
            try:
                fd = os.open(leaf, os.O_RDONLY | os.O_CREAT | os.O_NONBLOCK | _NOFOLLOW, 0o644, dir_fd=parent)
            except OSError as exc:
                raise _refused(what, name, exc, parent, leaf) from None
            try:
                os.fchmod(fd, 0)
            finally:
                os.close(fd)
            try:
                os.close(os.open(leaf, os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW, dir_fd=parent))
                return False  # permissions do not stop this process (root)
            except PermissionError:
                return True


def _refused(what: str, name: str, exc: OSError, parent: int, component: str) -> HarnessError:
    """Why the suite will not go on: a symlink (named with where it points, never followed), something that is
    not a directory on the way, a FIFO or device where a file was written, or the system's own reason."""
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        try:
            where = f"a symlink to {os.readlink(component, dir_fd=parent)}"
        except OSError:
            where = "something that is not a directory"
        return HarnessError(f"{what}: {name!r} leads through {where} the implementation put in the case "
                            "directory; the suite does not follow it")
    if exc.errno == errno.ENXIO:  # a FIFO with no reader (or a device): a write would block
        return HarnessError(f"{what}: {name!r} is not a regular file (the implementation put something there?)")
    return HarnessError(f"{what}: cannot use {name!r}: {exc.strerror}")
