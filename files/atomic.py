"""Atomic file writes for everything Loom writes (meshes, frames, bake records, snapshots, replays).

A write goes to a temporary file beside the target, is flushed and fsync'ed, and only then renamed onto
the target (and the folder fsync'ed), so a crash or a kill mid-write leaves the old file, never half of
a new one. The file gets the permissions ``open()`` would give it (0o666 less the umask), not mkstemp's
0o600. An existing device or FIFO (``/dev/null``, ``/dev/full``) is written straight into: renaming over
it would replace the device. Every OSError names the target, not the temporary file.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (see the module docstring); return the path written."""
    target = Path(path)
    if target.exists() and not target.is_file() and not target.is_dir():
        return _write_device(target, data)
    try:
        fd, temporary = tempfile.mkstemp(prefix=f".{target.name}.tmp-", dir=target.parent or ".")
    except OSError as error:
        raise _naming(error, target) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), 0o666 & ~umask())
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except OSError as error:
        Path(temporary).unlink(missing_ok=True)
        raise _naming(error, target) from None
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    _sync_folder(target.parent)
    return target


def os_error_line(error: OSError) -> str:
    """One line for an OSError, for the command lines: ``path: reason`` (the path it names and the system's
    strerror, e.g. ``out/frame_00003.obj: No space left on device``), no traceback."""
    paths = [os.fsdecode(p) if isinstance(p, bytes) else str(p) for p in (error.filename, error.filename2)
             if p is not None]
    reason = error.strerror or str(error) or type(error).__name__
    line = f"{' -> '.join(paths)}: {reason}" if paths else reason
    return " ".join(line.splitlines())


def umask() -> int:
    """The process's file-creation mask, read without changing it where Linux allows (/proc), else by os.umask."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _write_device(target: Path, data: bytes) -> Path:
    """Write ``data`` straight into an existing non-regular file (a device, a FIFO); OSErrors name ``target``."""
    try:
        with open(target, "wb") as handle:
            handle.write(data)
            handle.flush()
    except OSError as error:
        raise _naming(error, target) from None
    return target


def _naming(error: OSError, target: Path) -> OSError:
    """``error`` as an OSError naming ``target`` (not a temporary file); one without an errno is kept as it is."""
    if error.errno is None:
        return error
    return OSError(error.errno, error.strerror, os.fspath(target))


def _sync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable (POSIX); a folder that cannot be opened or synced is left as is."""
    try:
        fd = os.open(folder if str(folder) else ".", os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


__all__ = ["os_error_line", "umask", "write_atomic"]
