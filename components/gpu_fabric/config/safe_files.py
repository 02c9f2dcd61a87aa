"""File operations that a planted symbolic link, FIFO or device cannot redirect (POSIX ``*at`` calls).

Every path is walked from a directory handle one component at a time with ``O_NOFOLLOW``, so no
component -- not a folder on the way, not the file itself -- may be a symbolic link; a name is never
resolved through a path string that something else could swap between a check and a use. Files
are opened with ``O_NONBLOCK`` (a FIFO would otherwise block the open forever) and must be regular
files; written files go to a temporary name created exclusively (``O_CREAT | O_EXCL``) and are
renamed over the target, and a rename replaces a link rather than writing through it.

Used by ``render --out``, ``verify --record`` and ``verify --replay``. (The node agent carries its
own copy of the same rules: it runs without gpu-fabric installed.)
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from pathlib import Path, PurePosixPath
from typing import Optional

_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class UnsafeFileError(ValueError):
    """A path that is a link, leaves its root, or is not a regular file/folder where one belongs."""


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def path_kind(path: Path) -> Optional[str]:
    """What ``path`` names, following symbolic links as opening it would: ``None`` when nothing is there,
    ``"file"`` for a regular file, else what it is (``"a FIFO"``, ``"a folder"``, ``"a symbolic link loop"``...).

    Only ``stat`` calls: nothing is opened, so a FIFO cannot block and a device is never read. Commands
    say what a path is instead of calling a FIFO or a link loop "missing".
    """
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        if os.path.islink(path):  # the link is there, what it names is not
            return f"a symbolic link to {os.readlink(path)}, which does not exist"
        return None
    except OSError as error:
        if error.errno == errno.ELOOP:
            return "a symbolic link loop"
        return f"unreadable ({error.strerror or error})"
    return "file" if stat.S_ISREG(mode) else _kind(mode)


def _lstat_at(directory: int, name: str) -> Optional[os.stat_result]:
    try:
        return os.stat(name, dir_fd=directory, follow_symlinks=False)
    except FileNotFoundError:
        return None


class Folder:
    """An open directory handle and the path it was opened as (for messages); use as a context manager."""

    def __init__(self, fd: int, path: Path):
        self.fd = fd
        self.path = Path(path)

    def __enter__(self) -> "Folder":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the handle (idempotent)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    @classmethod
    def open(cls, path: Path, *, create: bool = False, follow: bool = False) -> "Folder":
        """The folder ``path``; with ``create`` made (and its parents) when missing.

        ``follow=False`` refuses ``path`` itself being a symbolic link (a folder we write into);
        reading a folder a user named may follow it.
        """
        path = Path(path)
        if create:
            try:
                path.mkdir(parents=True, exist_ok=True)
            except FileExistsError:
                pass  # something else is there: the open below says what
            except OSError as error:
                raise UnsafeFileError(f"{path}: cannot create the folder: {error.strerror or error}") from None
        try:
            fd = os.open(path, _DIRECTORY | (0 if follow else _NOFOLLOW))
        except FileNotFoundError:
            raise
        except OSError as error:
            raise UnsafeFileError(f"{path}: {cls._refusal(path, error)}") from None
        return cls(fd, path)

    @staticmethod
    def _refusal(path: Path, error: OSError) -> str:
        try:
            mode = os.lstat(path).st_mode
            return f"is {'a file' if stat.S_ISREG(mode) else _kind(mode)}, not a folder"
        except OSError:
            return str(error.strerror or error)

    def subfolder(self, name: str, *, create: bool = False) -> "Folder":
        """The child folder ``name`` (one component), never through a link; made when ``create``."""
        _one_component(name)
        if create and _lstat_at(self.fd, name) is None:
            try:
                os.mkdir(name, 0o755, dir_fd=self.fd)
            except FileExistsError:
                pass
        found = _lstat_at(self.fd, name)
        if found is None:
            raise FileNotFoundError(str(self.path / name))
        if not stat.S_ISDIR(found.st_mode):
            what = "a file" if stat.S_ISREG(found.st_mode) else _kind(found.st_mode)
            raise UnsafeFileError(f"{self.path / name} is {what}, not a folder")
        fd = os.open(name, _DIRECTORY | _NOFOLLOW, dir_fd=self.fd)
        return Folder(fd, self.path / name)

    def walk(self, relative: PurePosixPath, *, create: bool = False) -> "Folder":
        """The folder holding ``relative`` (its parent components walked one by one)."""
        current = Folder(os.dup(self.fd), self.path)
        for part in relative.parts[:-1]:
            try:
                child = current.subfolder(part, create=create)
            finally:
                current.close()
            current = child
        return current

    def kind(self, name: str) -> Optional[str]:
        """``None`` when absent, ``"file"`` for a regular file, else what it is (``"a symbolic link"``, ...)."""
        _one_component(name)
        found = _lstat_at(self.fd, name)
        if found is None:
            return None
        return "file" if stat.S_ISREG(found.st_mode) else _kind(found.st_mode)

    def read(self, name: str, limit: int) -> bytes:
        """The bytes of the regular file ``name`` (at most ``limit``); :class:`UnsafeFileError` otherwise."""
        _one_component(name)
        where = self.path / name
        try:
            fd = os.open(name, os.O_RDONLY | _NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=self.fd)
        except FileNotFoundError:
            raise
        except OSError as error:
            found = _lstat_at(self.fd, name)
            if found is not None and not stat.S_ISREG(found.st_mode):
                raise UnsafeFileError(f"{where} is {_kind(found.st_mode)}, not a regular file") from None
            raise UnsafeFileError(f"{where}: {error.strerror or error}") from None
        try:
            mode = os.fstat(fd).st_mode
            if not stat.S_ISREG(mode):
                raise UnsafeFileError(f"{where} is {_kind(mode)}, not a regular file")
            chunks, size = [], 0
            while size <= limit:
                chunk = os.read(fd, min(1 << 20, limit + 1 - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
            if size > limit:
                raise UnsafeFileError(f"{where} is larger than {limit} bytes")
            return b"".join(chunks)
        finally:
            os.close(fd)

    def write(self, name: str, data: bytes, mode: int = 0o644, *, durable: bool = True) -> None:
        """Replace ``name`` with ``data`` in one rename; refuse when a link, folder, FIFO or device is there.

        ``durable``: the data reaches the disk (``fsync``) before the rename, so that a power loss leaves the old
        file or the whole new one. ``False`` leaves that to the kernel, for files that are written again at will
        (a render's manifests: ``gpu_fabric.cli.render_output``); the rename still shows readers one or the other.
        """
        _one_component(name)
        where = self.path / name
        existing = self.kind(name)
        if existing not in (None, "file"):
            raise UnsafeFileError(f"{where} is {existing}; refusing to write through or over it")
        temporary = f".{name[:200]}.{secrets.token_hex(6)}.tmp"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=self.fd)
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                if durable:
                    os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temporary, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except BaseException:
            try:
                os.unlink(temporary, dir_fd=self.fd)
            except OSError:
                pass
            raise

    def remove(self, name: str) -> bool:
        """Unlink the regular file ``name``; ``False`` when it is absent or not a regular file."""
        if self.kind(name) != "file":
            return False
        os.unlink(name, dir_fd=self.fd)
        return True

    def remove_empty(self, name: str) -> bool:
        """Remove the child folder ``name`` when it is a real, empty folder."""
        if self.kind(name) != "a folder":
            return False
        try:
            os.rmdir(name, dir_fd=self.fd)
        except OSError:
            return False
        return True


def _one_component(name: str) -> None:
    if not name or name in (".", "..") or "/" in name or "\0" in name:
        raise UnsafeFileError(f"{name!r} is not a single file name")
