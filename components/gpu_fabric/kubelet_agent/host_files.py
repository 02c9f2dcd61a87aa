"""The host's files as the agent may touch them: only inside the mounted directories, never through a link.

The agent runs as root with the kubelet's directories mounted: a symbolic link planted there (by a
pod that can write a hostPath, or a careless edit) must not make it read or write anything else.
So no path is ever opened by name from the container's root. Each operation starts at the
mounted directory's own handle and opens one component at a time with O_NOFOLLOW; a link on the
way is read (readlink) and resolved as the *host* resolves it, and is followed only when it stays
inside the mounted directories -- a link leaving them is a refusal. Files are opened O_NONBLOCK
(a FIFO would block the open) and must be regular files; writes go to a temporary file created
O_CREAT|O_EXCL next to the target and are renamed over it (a rename replaces a link, never
writes through it).
"""

import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Tuple

from .errors import AgentError

MAX_HOST_FILE_BYTES = 4 * 2**20
"""No kubelet configuration, drop-in, marker or state file is anywhere near 4 MiB."""
_MAX_LINKS = 40  # what Linux allows in one path resolution (MAXSYMLINKS)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW | os.O_CLOEXEC


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def _lstat_at(directory: int, name: str) -> Optional[os.stat_result]:
    try:
        return os.stat(name, dir_fd=directory, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _reason(error: OSError) -> str:
    return error.strerror or str(error)


@dataclass(frozen=True)
class HostFiles:
    """Host directories mounted under ``root`` at their own path (``/etc/kubernetes`` -> ``/host/etc/kubernetes``)."""

    root: Path
    mounted: Tuple[str, ...]

    def _mount_of(self, host_path: str) -> Tuple[str, List[str]]:
        normal = os.path.normpath(host_path)
        if not os.path.isabs(normal):
            raise AgentError(f"{host_path!r} is not an absolute path")
        for directory in sorted(self.mounted, key=len, reverse=True):
            directory = os.path.normpath(directory)
            if normal == directory or normal.startswith(directory.rstrip("/") + "/"):
                rest = normal[len(directory):].strip("/")
                return directory, [part for part in rest.split("/") if part]
        raise AgentError(
            f"{normal} is outside the host directories mounted into the agent ({', '.join(self.mounted)}); "
            "add its directory to the pool's topologyAgent.hostPaths; nothing was changed"
        )

    def path(self, host_path: str) -> Path:
        """The container path of ``host_path`` (for messages and tests); :class:`AgentError` when no
        mounted directory holds it. Never open it by name: use :meth:`read` / :meth:`write`."""
        self._mount_of(host_path)
        return self.root / os.path.normpath(host_path).lstrip("/")

    def _open_mount(self, directory: str) -> int:
        try:
            return os.open(self.root / directory.lstrip("/"), _DIRECTORY_FLAGS)
        except OSError as error:
            raise AgentError(f"the mounted host directory {directory} cannot be opened: {_reason(error)}") from None

    def resolve(self, host_path: str) -> str:
        """``host_path`` with every symbolic link resolved as the host resolves it, inside the mounts.

        A link whose target leaves the mounted directories is an :class:`AgentError`; a missing
        component ends the resolution (what follows does not exist yet).
        """
        current = os.path.normpath(host_path)
        for _ in range(_MAX_LINKS):
            directory, parts = self._mount_of(current)
            fd = self._open_mount(directory)
            try:
                walked = directory
                for index, part in enumerate(parts):
                    found = _lstat_at(fd, part)
                    if found is None:
                        return current
                    here = os.path.join(walked, part)
                    if stat.S_ISLNK(found.st_mode):
                        target = os.readlink(part, dir_fd=fd)
                        joined = target if os.path.isabs(target) else os.path.join(walked, target)
                        following = os.path.normpath(os.path.join(joined, *parts[index + 1:]))
                        try:
                            self._mount_of(following)
                        except AgentError:
                            raise AgentError(
                                f"{here} is a symbolic link to {target}, outside the host directories mounted into the "
                                f"agent ({', '.join(self.mounted)}); not following it; nothing was changed") from None
                        current = following
                        break
                    if index < len(parts) - 1:
                        if not stat.S_ISDIR(found.st_mode):
                            raise AgentError(f"{here} is {_kind(found.st_mode)}, not a directory; nothing was changed")
                        child = os.open(part, _DIRECTORY_FLAGS, dir_fd=fd)
                        os.close(fd)
                        fd = child
                    walked = here
                else:
                    return current
            except OSError as error:
                raise AgentError(f"cannot look up {current} on the host: {_reason(error)}; nothing was changed") from None
            finally:
                os.close(fd)
        raise AgentError(f"{host_path}: more than {_MAX_LINKS} symbolic links; nothing was changed")

    def _parent(self, host_path: str, create: bool = False, follow: bool = True) -> Optional[Tuple[int, str, str]]:
        """``(directory handle, file name, resolved host path)`` of ``host_path``, its directories walked
        without links; ``None`` when a directory on the way does not exist (and ``create`` is off).

        ``follow=False`` resolves only the directories: the last component is taken as it is (a file
        the agent creates itself -- a marker, a backup -- must not be a link to anything)."""
        if follow:
            resolved = self.resolve(host_path)
        else:
            normal = os.path.normpath(host_path)
            resolved = os.path.join(self.resolve(os.path.dirname(normal)), os.path.basename(normal))
        directory, parts = self._mount_of(resolved)
        if not parts:
            raise AgentError(f"{resolved} is a mounted directory, not a file; nothing was changed")
        fd = self._open_mount(directory)
        walked = directory
        try:
            for part in parts[:-1]:
                walked = os.path.join(walked, part)
                if _lstat_at(fd, part) is None:
                    if not create:
                        os.close(fd)
                        return None
                    try:
                        os.mkdir(part, 0o755, dir_fd=fd)
                    except FileExistsError:
                        pass
                child = os.open(part, _DIRECTORY_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = child
        except OSError as error:
            os.close(fd)
            raise AgentError(f"cannot open the directory {walked} on the host: {_reason(error)}; nothing was changed") from None
        return fd, parts[-1], resolved

    def kind(self, host_path: str, follow: bool = True) -> Optional[str]:
        """``None`` when absent, ``"file"`` for a regular file, else what is there (``"a directory"``, ``"a FIFO"``,
        and with ``follow=False`` ``"a symbolic link"``)."""
        parent = self._parent(host_path, follow=follow)
        if parent is None:
            return None
        fd, name, _ = parent
        try:
            found = _lstat_at(fd, name)
        finally:
            os.close(fd)
        if found is None:
            return None
        return "file" if stat.S_ISREG(found.st_mode) else _kind(found.st_mode)

    def read(self, host_path: str, limit: int = MAX_HOST_FILE_BYTES, follow: bool = True) -> Optional[bytes]:
        """The bytes of the regular file ``host_path``, ``None`` when it does not exist; :class:`AgentError` for a
        directory, FIFO, device, a link leaving the mounts, or a file larger than ``limit``."""
        parent = self._parent(host_path, follow=follow)
        if parent is None:
            return None
        fd, name, resolved = parent
        try:
            try:
                handle = os.open(name, os.O_RDONLY | _NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fd)
            except FileNotFoundError:
                return None
            except OSError as error:
                found = _lstat_at(fd, name)
                what = _kind(found.st_mode) if found is not None and not stat.S_ISREG(found.st_mode) else ""
                raise AgentError(f"{resolved} is {what}, not a regular file; nothing was changed" if what
                                 else f"cannot read {resolved}: {_reason(error)}; nothing was changed") from None
        finally:
            os.close(fd)
        try:
            mode = os.fstat(handle).st_mode
            if not stat.S_ISREG(mode):
                raise AgentError(f"{resolved} is {_kind(mode)}, not a regular file; nothing was changed")
            chunks: List[bytes] = []
            size = 0
            while size <= limit:
                chunk = os.read(handle, min(1 << 20, limit + 1 - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
            if size > limit:
                raise AgentError(f"{resolved} is larger than {limit} bytes; not a file the agent edits; nothing was changed")
            return b"".join(chunks)
        except OSError as error:
            raise AgentError(f"cannot read {resolved}: {_reason(error)}; nothing was changed") from None
        finally:
            os.close(handle)

    def write(self, host_path: str, content: bytes, follow: bool = True) -> None:
        """Replace ``host_path`` with ``content`` atomically (its mode kept); refuse what is not a regular file.

        ``follow=False``: a link at ``host_path`` itself is refused rather than resolved."""
        parent = self._parent(host_path, create=True, follow=follow)
        assert parent is not None  # created on the way
        fd, name, resolved = parent
        try:
            _replace_at(fd, name, content, resolved)
        finally:
            os.close(fd)

    def remove(self, host_path: str, follow: bool = True) -> None:
        """Unlink the regular file ``host_path`` (absent is fine); refuse anything else."""
        parent = self._parent(host_path, follow=follow)
        if parent is None:
            return
        fd, name, resolved = parent
        try:
            found = _lstat_at(fd, name)
            if found is None:
                return
            if not stat.S_ISREG(found.st_mode):
                raise AgentError(f"{resolved} is {_kind(found.st_mode)}, not a regular file; not removing it")
            os.unlink(name, dir_fd=fd)
        except FileNotFoundError:
            pass
        except OSError as error:
            raise AgentError(f"cannot remove {resolved}: {_reason(error)}") from None
        finally:
            os.close(fd)


def _replace_at(directory: int, name: str, content: bytes, where: str) -> None:
    """Write ``content`` to an exclusively created temporary file in ``directory`` and rename it to ``name``."""
    found = _lstat_at(directory, name)
    if found is not None and not stat.S_ISREG(found.st_mode):
        raise AgentError(f"{where} is {_kind(found.st_mode)}, not a regular file; nothing was changed")
    mode = stat.S_IMODE(found.st_mode) if found is not None else 0o644
    temporary = f".{name[:100]}.gpu-fabric.{secrets.token_hex(6)}.tmp"
    try:
        handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=directory)
    except OSError as error:
        raise AgentError(f"cannot write next to {where}: {_reason(error)}; nothing was changed") from None
    try:
        try:
            view = memoryview(content)
            while view:
                view = view[os.write(handle, view):]
            os.fchmod(handle, mode)
            os.fsync(handle)
        finally:
            os.close(handle)
        os.replace(temporary, name, src_dir_fd=directory, dst_dir_fd=directory)
        os.fsync(directory)
    except OSError as error:
        try:
            os.unlink(temporary, dir_fd=directory)
        except OSError:
            pass
        raise AgentError(f"cannot write {where}: {_reason(error)}; nothing was changed") from None


def atomic_write(target: Path, content: bytes) -> None:
    """Replace the container file ``target`` (the status file) in one rename, never through a link."""
    target = Path(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        directory = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as error:
        raise AgentError(f"cannot open {target.parent}: {_reason(error)}") from None
    try:
        _replace_at(directory, target.name, content, str(target))
    finally:
        os.close(directory)
