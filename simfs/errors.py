"""Errors simfs raises: POSIX errors for file operations, ImageError for a bad image."""

import os


class FSError(OSError):
    """A file-system operation failed with a POSIX errno (ENOENT, ENOSPC, ...).

    The FUSE front end answers the request with this errno; in-process callers catch it
    like any OSError.
    """

    def __init__(self, err: int, detail: str = ""):
        msg = _STRERROR.get(err)
        if msg is None:             # os.strerror costs as much as the rest of raising one
            msg = _STRERROR[err] = os.strerror(err)
        super().__init__(err, f"{msg}: {detail}" if detail else msg)


#: errno -> os.strerror(errno): an in-process run raises tens of thousands (ENOENT, ENODATA)
_STRERROR: dict[int, str] = {}


class ImageWriteError(OSError):
    """The image file could not be written (its host file system is full, or failing): a
    commit did not happen. The message is one line for the user. `in_place`: the journal of
    that commit was complete, so the next mount (or `simfs fsck`) replays it; otherwise the
    image is as it was at the last commit and the changes since are only in memory."""

    def __init__(self, err: int, message: str, *, in_place: bool = False):
        super().__init__(err, message)
        self.in_place = in_place

    @property
    def at_close(self) -> str:
        """One line for a close that failed so: what the image holds from now on."""
        return self.strerror + ("" if self.in_place else ": the changes since are lost")


class OutputError(OSError):
    """A file simfs writes beside the image (the statistics, the trace) could not be written;
    the image itself is written back and clean. The message is one line for the user."""


class ImageError(Exception):
    """The image cannot be used: missing, not ext2, corrupt, or with an unsupported feature.

    The message is meant for the user as it stands (one line, no traceback).
    """



class VerbRefused(Exception):
    """An in-process verb refuses its arguments before it changes anything, as the real tool
    does (`rm -rf .`, `cp -a` of a directory into itself). The message is one line for the
    user, in the tool's words."""
