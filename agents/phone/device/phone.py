"""``VirtualPhone``: the device model behind the ``Phone`` protocol — a Pixel 7 on Android 14 whose
apps are interpreted from ``assets/phone`` definitions (see ``docs/phone.md``).

Model: one back stack of frames per task (the launcher's task plus one per started app); a frame is
an app screen, a dialog or a popup menu, with its own ``args``, ``local`` values, scroll offsets
and focused field. Only the top window is dumped (a dialog's window alone, as uiautomator does).
Input is resolved against the window freshly laid out from the state, so what a dump shows is
exactly what a tap hits. Gesture navigation: see ``layout``.
"""
from __future__ import annotations

import copy
import threading
from dataclasses import dataclass, field
from .. import NotIdle
from . import layout as L
from .actions import run
from .apps import App, Catalog, load_catalog
from .checks import check
from .keys import char_of, lookup
from .paths import get, merge, put, render
from .uixml import Node, find, to_xml
from ..shell.vfs import FileSystem
from .views import View
from .windows import build_window


@dataclass
class Frame:
    app: str
    screen: str
    args: dict = field(default_factory=dict)
    local: dict = field(default_factory=dict)
    scroll: dict = field(default_factory=dict)
    focus: str | None = None

    @property
    def id(self) -> str:
        return f"{self.app}:{self.screen}"


class VirtualPhone:
    """A virtual Android phone. ``overrides`` (nested dicts or dotted paths -> values) are applied
    to the fresh state at construction and at every ``reset``; ``start`` (``app:screen``) opens
    that screen instead of the home screen."""

    def __init__(self, overrides: dict | None = None, start: str | None = None, catalog: Catalog | None = None):
        self.lock = threading.RLock()
        self.catalog = catalog or load_catalog()
        self.overrides = overrides or {}
        self.start = start
        self.fs = FileSystem()  # shared storage: the shell's `ls`/`cat` see what apps save here
        self.reset()

    # -- state ---------------------------------------------------------------------------------
    def reset(self, setup: dict | None = None) -> None:
        """The fresh state with the constructor's overrides, then ``setup`` (a task's start)."""
        with self.lock:
            self.data: dict = copy.deepcopy(self.catalog.state)
            for app in self.catalog.apps.values():
                merge(self.data, copy.deepcopy(app.state))
            merge(self.data, copy.deepcopy(self.overrides))
            if setup:
                merge(self.data, copy.deepcopy(setup))
            self.tasks: dict[str, list[Frame]] = {}
            self.visited: list[str] = []
            self.busy = 0
            self.fs.reset()
            self.front = self.catalog.home
            self.tasks[self.front] = [self._frame(self.home_app, self.home_app.main, {})]
            self._seen()
            if self.start:
                app_id, _, screen = self.start.partition(":")
                self.launch(self.catalog.apps[app_id].package)
                if screen and screen != self.app.main:
                    self.push(self.start, {})

    def state(self) -> dict:
        with self.lock:
            out = copy.deepcopy(self.data)
            package, activity = self.focus()
            out["foreground"] = {"package": package, "activity": activity, "screen": self.frame.id,
                                 "placeholder": bool(self.screen.get("placeholder"))}
            out["visited"] = list(self.visited)
            out["files"] = self.files()
            return out

    def files(self) -> list[dict]:
        """The files on the device (an export, a saved dump): what checks read as ``files``
        (``files[path='/sdcard/Download/contacts.vcf'].text``) and file pickers list."""
        return [{"path": path, "dir": path.rpartition("/")[0], "name": path.rpartition("/")[2], "text": text}
                for path, text in sorted(self.fs.files.items())]

    def write_file(self, path: str, text: str) -> bool:
        """An app saves a file (a ``write`` step): only where the shell user could write too."""
        path = self.fs.resolve(path)
        if not self.fs.writable(path) or self.fs.is_dir(path):
            return False
        self.fs.write(path, text)
        return True

    @property
    def home_app(self) -> App:
        return self.catalog.by_package[self.catalog.home]

    @property
    def frame(self) -> Frame:
        return self.tasks[self.front][-1]

    @property
    def app(self) -> App:
        return self.catalog.apps[self.frame.app]

    @property
    def screen(self) -> dict:
        return self.app.screens[self.frame.screen]

    def context(self, frame: Frame | None = None) -> dict:
        """The template context of a frame: state namespaces + data/local/args."""
        frame = frame or self.frame
        app = self.catalog.apps[frame.app]
        return dict(self.data, data=app.data, local=frame.local, args=frame.args, files=self.files())

    def _seen(self) -> None:
        if not self.visited or self.visited[-1] != self.frame.id:
            self.visited.append(self.frame.id)

    # -- navigation (also the targets of app actions) -------------------------------------------
    def _frame(self, app: App, screen: str, args: dict) -> Frame:
        frame = Frame(app.id, screen, args=dict(args))
        frame.local = render(copy.deepcopy(app.screens[screen].get("local", {})), self.context(frame), check)
        frame.focus = app.screens[screen].get("autofocus")
        return frame

    def push(self, target: str, args: dict) -> None:
        app_id, _, screen = target.rpartition(":")
        app = self.catalog.apps[app_id] if app_id else self.app
        self.tasks[self.front].append(self._frame(app, screen, args))
        self._seen()

    def back(self, count: int = 1) -> None:
        for _ in range(count):
            stack = self.tasks[self.front]
            if len(stack) > 1:
                stack.pop()
            elif self.front != self.catalog.home:
                del self.tasks[self.front]   # back from a task's root: the app closes
                self.front = self.catalog.home
        self._seen()

    def user_back(self) -> None:
        """BACK pressed (key, edge swipe): a screen's ``on_back`` actions may intercept it (an edited
        form asks "Discard changes?", a selection mode ends); ``back`` steps inside them just pop."""
        on_back = self.screen.get("on_back")
        if on_back:
            run(self, on_back, self.context())
        else:
            self.back()

    def pop_to(self, target: str) -> None:
        app_id, _, screen = target.rpartition(":")
        stack = self.tasks[self.front]
        while len(stack) > 1 and not (stack[-1].screen == screen and stack[-1].app == (app_id or stack[-1].app)):
            stack.pop()
        self._seen()

    def go_home(self) -> None:
        self.front = self.catalog.home
        del self.tasks[self.front][1:]
        self.frame.scroll.clear()
        self._seen()

    def open(self, package: str) -> bool:
        """A launcher icon: resume the app's task where it was, or start it."""
        if package in self.tasks and package != self.catalog.home:
            self.front = package
            self._seen()
            return True
        return self.launch(package)

    def set_focus(self, path: str | None) -> None:
        self.frame.focus = path

    # -- the Phone protocol ----------------------------------------------------------------------
    def screen_size(self) -> tuple[int, int]:
        return L.WIDTH, L.HEIGHT

    def properties(self) -> dict[str, str]:
        return dict(self.catalog.properties)

    def packages(self) -> list[str]:
        return list(self.catalog.packages)

    def launcher_activity(self, package: str) -> str | None:
        app = self.catalog.by_package.get(package)
        return app.launcher if app else None

    def focus(self) -> tuple[str, str]:
        with self.lock:
            # a dialog or menu is a window of the activity under it
            frame = next(f for f in reversed(self.tasks[self.front])
                         if self.catalog.apps[f.app].screens[f.screen].get("kind", "screen") == "screen")
            app = self.catalog.apps[frame.app]
            return app.package, app.activity_of(frame.screen)

    def launch(self, package: str, activity: str | None = None) -> bool:
        """Start ``package`` afresh on its main screen (or the screen of ``activity``)."""
        with self.lock:
            app = self.catalog.by_package.get(package)
            if app is None:
                return False
            screen = app.main
            if activity is not None:
                short = activity[len(package):] if activity.startswith(package + ".") else activity
                names = {activity, short, "." + short.lstrip(".")}
                found = [s for name, s in app.activities.items() if name in names]
                if not found and app.launcher in names:
                    found = [app.main]
                if not found:
                    return False
                screen = found[0]
            if package == self.catalog.home:
                self.go_home()
                return True
            self.tasks.pop(package, None)
            self.tasks[package] = [self._frame(app, screen, {})]
            self.front = package
            self._seen()
            return True

    def force_stop(self, package: str) -> None:
        """``am force-stop``: the app's task is gone (its state data stays, as on disk)."""
        with self.lock:
            if package != self.catalog.home and self.tasks.pop(package, None) is not None \
                    and self.front == package:
                self.front = self.catalog.home
                self._seen()

    def dump_ui(self) -> str:
        with self.lock:
            if self.busy > 0:
                self.busy -= 1
                raise NotIdle("could not get idle state")
            return to_xml([self._window()], self.app.package)

    def _window(self) -> Node:
        return build_window(self.screen, self.frame, self.context(), View(self.app.package, self.frame.focus))

    def tap(self, x: int, y: int) -> None:
        with self.lock:
            if not (0 <= x < L.WIDTH and L.TOP <= y < L.BOTTOM):
                return  # status bar / gesture handle: System UI, not the app
            root = self._window()
            if not _inside(root, x, y):
                if self.screen.get("kind") in ("dialog", "menu", "sheet") and self.screen.get("cancelable", True):
                    self.back()
                return
            hit = find(root, x, y, lambda n: n.clickable and n.enabled)
            if hit is None:
                return
            if hit.edit:
                self.frame.focus = hit.edit
            if hit.slider:
                self._slide(hit, x)
            run(self, hit.tap, hit.ctx)

    def long_press(self, x: int, y: int) -> None:
        with self.lock:
            if not (0 <= x < L.WIDTH and L.TOP <= y < L.BOTTOM):
                return
            hit = find(self._window(), x, y, lambda n: n.long_clickable and n.enabled)
            if hit is not None and hit.long_tap:
                run(self, hit.long_tap, hit.ctx)

    def swipe(self, x1: int, y1: int, x2: int, y2: int, duration_ms: int) -> None:
        with self.lock:
            dx, dy = x2 - x1, y1 - y2      # dy > 0: finger moved up, content moves up
            if abs(dx) < L.TOUCH_SLOP and abs(dy) < L.TOUCH_SLOP:
                # `input swipe x y x y 800` is how adb users long-press
                (self.long_press if duration_ms >= 500 else self.tap)(x1, y1)
                return
            if y1 >= L.BOTTOM and dy > 150:
                self.key("KEYCODE_HOME")
                return
            if (x1 < L.EDGE and dx > 150) or (x1 >= L.WIDTH - L.EDGE and dx < -150):
                self.key("KEYCODE_BACK")
                return
            if y1 < L.TOP:
                return  # the notification shade is not modelled
            root = self._window()
            slider = find(root, x1, y1, lambda n: n.slider is not None and n.enabled)
            if slider is not None and abs(dx) > abs(dy):
                self._slide(slider, x2)
                return
            item = find(root, x1, y1, lambda n: n.swipe is not None and n.enabled)
            if item is not None and abs(dx) > 2 * abs(dy) and abs(dx) > 200:
                run(self, item.swipe, item.ctx)  # a list item swiped away sideways
                return
            box = find(root, x1, y1, lambda n: n.scroll is not None and n.max_scroll > 0)
            if box is not None and abs(dy) >= abs(dx):
                self.frame.scroll[box.scroll] = max(0, min(box.max_scroll, self.frame.scroll.get(box.scroll, 0) + dy))
            elif box is None and dy > 200 and self.screen.get("swipe_up"):
                run(self, self.screen["swipe_up"], self.context())

    def _slide(self, node: Node, x: int) -> None:
        spec, (left, _, right, _) = node.slider, node.bounds
        low, high = spec["min"], spec["max"]
        frac = min(1.0, max(0.0, (x - left - 42) / max(1, right - left - 84)))
        put(node.ctx, spec["bind"], low + round(frac * (high - low)))
        run(self, spec.get("then"), node.ctx)

    def key(self, keycode: str) -> bool:
        with self.lock:
            name = lookup(keycode)
            if name is None:
                return False
            if name in ("BACK", "ESCAPE"):
                self.user_back()
            elif name == "HOME":
                self.go_home()
            elif name == "ENTER":
                self._submit()
            elif name in ("DEL", "FORWARD_DEL"):
                if self.frame.focus:
                    ctx = self.context()
                    put(ctx, self.frame.focus, str(get(ctx, self.frame.focus) or "")[:-1])
            elif char_of(name):
                self.type_text(char_of(name))
            return True

    def _submit(self) -> None:
        focus = self.frame.focus
        if not focus:
            return
        for node in self._window().walk():
            if node.edit == focus and node.submit:
                run(self, node.submit, node.ctx)
                return

    def type_text(self, text: str) -> None:
        with self.lock:
            if self.frame.focus:
                ctx = self.context()
                put(ctx, self.frame.focus, str(get(ctx, self.frame.focus) or "") + text)


def _inside(node: Node, x: int, y: int) -> bool:
    left, top, right, bottom = node.bounds
    return left <= x < right and top <= y < bottom

