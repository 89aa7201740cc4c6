"""The phone's small in-memory file system: what ``uiautomator dump``, ``cat``, ``rm``, ``ls``
and ``> file`` need. The shell user (adb's uid) may write under /sdcard and /data/local/tmp
only, as on a real phone; everything else is read-only or not visible.
"""
from __future__ import annotations

import posixpath

# /sdcard is a link to the primary shared storage; paths are stored under their /sdcard spelling
ALIASES = ("/storage/emulated/0", "/storage/self/primary", "/mnt/sdcard", "/mnt/user/0/primary")
WRITABLE = ("/sdcard", "/data/local/tmp")
SDCARD_DIRS = ("Alarms", "Android", "Audiobooks", "DCIM", "Documents", "Download", "Movies",
               "Music", "Notifications", "Pictures", "Podcasts", "Recordings", "Ringtones")
ROOT_DIRS = ("acct", "apex", "bin", "cache", "config", "d", "data", "debug_ramdisk", "dev", "etc",
             "linkerconfig", "metadata", "mnt", "odm", "oem", "proc", "product", "sdcard",
             "storage", "sys", "system", "system_ext", "vendor")
HIDDEN = ("/data", "/cache", "/config", "/metadata", "/debug_ramdisk")   # "Permission denied"


class FileSystem:
    def __init__(self):
        self.files: dict[str, str] = {}
        self.dirs: set[str] = {"/", "/sdcard", "/data/local/tmp", "/data/local", "/storage",
                               "/storage/emulated", "/system", "/system/bin", "/mnt", "/dev"}
        self.dirs.update("/" + d for d in ROOT_DIRS)
        self.dirs.update("/sdcard/" + d for d in SDCARD_DIRS)

    def reset(self) -> None:
        self.__init__()

    @staticmethod
    def resolve(path: str, cwd: str = "/") -> str:
        full = posixpath.normpath(posixpath.join(cwd, path))
        if full.startswith("//"):
            full = full[1:]
        for alias in ALIASES:
            if full == alias or full.startswith(alias + "/"):
                full = "/sdcard" + full[len(alias):]
        return full

    def writable(self, path: str) -> bool:
        return any(path.startswith(d + "/") for d in WRITABLE) and posixpath.dirname(path) in self.dirs

    def is_dir(self, path: str) -> bool:
        return path in self.dirs

    def exists(self, path: str) -> bool:
        return path in self.files or path in self.dirs

    def denied(self, path: str) -> bool:
        return any(path == d or path.startswith(d + "/") for d in HIDDEN) and not any(
            path == w or path.startswith(w + "/") for w in WRITABLE)

    def read(self, path: str) -> str | None:
        return self.files.get(path)

    def write(self, path: str, text: str, append: bool = False) -> None:
        self.files[path] = (self.files.get(path, "") if append else "") + text

    def remove(self, path: str) -> bool:
        return self.files.pop(path, None) is not None

    def listdir(self, path: str) -> list[str]:
        prefix = path.rstrip("/") + "/"
        names = {p[len(prefix):].split("/", 1)[0] for p in list(self.files) + list(self.dirs)
                 if p.startswith(prefix) and p != prefix}
        return sorted(names)
