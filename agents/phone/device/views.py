"""The widget interpreter: app-definition widgets (JSON dicts) -> positioned ``Node`` subtrees.

Every builder takes ``(widget, ctx, x, width)`` and returns ``(nodes, height)`` with the nodes laid
out from y=0; containers stack or place them. ``ctx`` is the template context (state namespaces,
``data``, ``local``, ``args`` and, inside a list, ``item``/``index``). The widget catalogue is
documented in ``docs/phone.md``; the classes and resource ids are those of AndroidX
Preference / AppCompat / Material views, so dumps look like a real Pixel's.
"""
from __future__ import annotations

import math
from typing import Any, Callable

from . import layout as L
from .checks import check
from .paths import get, render
from .uixml import Node, shift

Built = tuple[list[Node], int]


def _str(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "On" if value else "Off"
    return str(value)


class View:
    """Builds widgets for one window of ``package``; ``focus`` is the state path of the focused
    EditText, if any."""

    def __init__(self, package: str, focus: str | None = None):
        self.package = package
        self.focus = focus
        self.builders: dict[str, Callable[[dict, dict, int, int], Built]] = {
            name[3:]: getattr(self, name) for name in dir(self) if name.startswith("_w_")}

    # -- helpers -------------------------------------------------------------------------------
    def value(self, value: Any, ctx: dict) -> Any:
        return render(value, ctx, check)

    def text(self, value: Any, ctx: dict) -> str:
        return _str(self.value(value, ctx))

    def holds(self, predicate: Any, ctx: dict) -> bool:
        return check(self.value(predicate, ctx), ctx)

    def path(self, path: str, ctx: dict) -> str:
        """A bound state path; may itself be a template (``settings.{args.kind}``)."""
        return str(render(path, ctx, check)) if "{" in path else path

    def rid(self, name: str | None) -> str:
        if not name:
            return ""
        return name if ":" in name else f"{self.package}:id/{name}"

    def node(self, cls: str, bounds, w: dict | None = None, ctx: dict | None = None, **kw) -> Node:
        """A node; with a widget, its id/desc/tap/long_tap/enabled are applied."""
        n = Node(cls, bounds, **kw)
        if w is not None:
            n.rid = n.rid or self.rid(self.text(w.get("id"), ctx))  # may be a template: digit_{item}
            n.desc = n.desc or self.text(w.get("desc"), ctx)
            if "enabled" in w:
                n.enabled = self.holds(w["enabled"], ctx)
            if "selected" in w:  # a selected message bubble, a chosen tab
                n.selected = self.holds(w["selected"], ctx)
            if w.get("tap") is not None:
                n.tap, n.clickable, n.focusable = list(w["tap"]), True, True
            if w.get("long_tap") is not None:
                n.long_tap, n.long_clickable = list(w["long_tap"]), True
            if w.get("swipe") is not None:
                n.swipe = list(w["swipe"])  # swipe-to-dismiss (ItemTouchHelper): not a flag in the dump
            n.ctx = ctx
        return n

    # -- composition ---------------------------------------------------------------------------
    def build(self, widgets: list | dict, ctx: dict, x: int, width: int) -> Built:
        """Widgets stacked top to bottom."""
        if isinstance(widgets, dict):
            widgets = [widgets]
        out: list[Node] = []
        y = 0
        for w in widgets:
            if "if" in w and not self.holds(w["if"], ctx):
                continue
            builder = self.builders.get(w.get("type", ""))
            if builder is None:
                raise ValueError(f"unknown widget type {w.get('type')!r}")
            nodes, h = builder(w, self._let(w, ctx), x, width)
            for n in nodes:
                shift(n, y)
            out += nodes
            y += h
        return out, y

    def _let(self, w: dict, ctx: dict) -> dict:
        """``let`` on a widget that is not a collection: values its subtree reads (a count in a
        summary); a list's ``let`` is per item (``_each``)."""
        if "let" not in w or w.get("type") in ("list", "grid", "dial"):
            return ctx
        ctx = dict(ctx)
        for key, template in w["let"].items():
            ctx[key] = self.value(template, ctx)
        return ctx

    def _w_group(self, w, ctx, x, width) -> Built:
        pad = w.get("padding", 0)
        kids, h = self.build(w.get("children", []), ctx, x + pad, width - 2 * pad)
        h = max(h + 2 * pad, w.get("height", 0))
        box = self.node(w.get("cls", "android.widget.LinearLayout"), (x, 0, x + width, h), w, ctx)
        for k in kids:
            shift(k, pad)
        return [box.add(*kids)], h

    def _w_row(self, w, ctx, x, width) -> Built:
        items = [c for c in w.get("children", []) if "if" not in c or self.holds(c["if"], ctx)]
        fixed = sum(c.get("width", 0) for c in items)
        weights = sum(c.get("weight", 1) for c in items if "width" not in c) or 1
        free = max(0, width - fixed)
        kids, cx, h = [], x, 0
        for c in items:
            cw = c.get("width") or free * c.get("weight", 1) // weights
            nodes, ch = self.build([c], ctx, cx, cw)
            kids += nodes
            h, cx = max(h, ch), cx + cw
        h = max(h, w.get("height", 0))
        box = self.node(w.get("cls", "android.widget.LinearLayout"), (x, 0, x + width, h), w, ctx)
        return [box.add(*kids)], h

    def _each(self, w, ctx) -> list[dict]:
        """Item contexts of a list/grid: ``each`` (a path) or ``items`` (literal), with the
        per-item values of ``let`` (name -> template), filtered, then ordered by ``sort`` (a path
        in the item context, compared case-insensitively: a contact list stays alphabetical)."""
        source = get(ctx, w["each"]) if "each" in w else w.get("items", [])
        name = w.get("as", "item")
        out = []
        for index, item in enumerate(source or []):
            ictx = dict(ctx, **{name: item, "index": index})
            for key, template in w.get("let", {}).items():
                ictx[key] = self.value(template, ictx)
            if "filter" in w and not self.holds(w["filter"], ictx):
                continue
            out.append(ictx)
        if "sort" in w:
            out.sort(key=lambda c: _str(get(c, w["sort"])).casefold())
        return out

    def _w_list(self, w, ctx, x, width) -> Built:
        out, y = [], 0
        items = self._each(w, ctx)
        if not items and "empty" in w:
            return self.build(w["empty"], ctx, x, width)
        last: Any = object()
        for ictx in items:
            nodes, h = [], 0
            if "section" in w and get(ictx, w["section"]) != last:
                # a header before the first item of each run (the letters of a contact list)
                last = ictx["section"] = get(ictx, w["section"])
                nodes, h = self.build(w.get("section_item", []), ictx, x, width)
            more, mh = self.build(w["item"], ictx, x, width)
            for n in more:
                shift(n, h)
            nodes, h = nodes + more, h + mh
            for n in nodes:
                shift(n, y)
            out += nodes
            y += h
        return out, y

    def _w_grid(self, w, ctx, x, width) -> Built:
        cols = w.get("columns", 3)
        cell_w, cell_h = width // cols, w.get("cell_height", 300)
        out = []
        items = self._each(w, ctx)
        for i, ictx in enumerate(items):
            r, c = divmod(i, cols)
            nodes, _ = self.build(w["cell"], ictx, x + c * cell_w, cell_w)
            for n in nodes:
                shift(n, r * cell_h)
            out += nodes
        return out, -(-len(items) // cols) * cell_h

    def _w_spacer(self, w, ctx, x, width) -> Built:
        return [], w.get("height", 42)

    # -- leaves --------------------------------------------------------------------------------
    def _w_text(self, w, ctx, x, width) -> Built:
        text = self.text(w.get("text", ""), ctx)
        style = w.get("style", "body")
        line_h, char_w = {"headline": (105, 44), "title": (80, 34), "body": (L.TEXT_LINE_H, L.CHAR_W),
                          "small": (50, 22)}.get(style, (L.TEXT_LINE_H, L.CHAR_W))
        h = w.get("height") or L.text_height(text, width, line_h, char_w)
        pad = w.get("padding", L.MARGIN)
        return [self.node("android.widget.TextView", (x + pad, 0, x + width - pad, h), w, ctx, text=text)], h

    def _w_category(self, w, ctx, x, width) -> Built:
        h = L.CATEGORY_H
        box = Node("android.widget.LinearLayout", (x, 0, x + width, h))
        title = Node("android.widget.TextView", (x + L.MARGIN, 52, x + width - L.MARGIN, h - 10),
                     rid="android:id/title", text=self.text(w.get("title", ""), ctx))
        return [box.add(title)], h

    def _w_image(self, w, ctx, x, width) -> Built:
        h = w.get("height", 420)
        pad = w.get("padding", 0)
        return [self.node("android.widget.ImageView", (x + pad, 0, x + width - pad, h), w, ctx)], h

    def _w_button(self, w, ctx, x, width) -> Built:
        text = self.text(w.get("text", ""), ctx)
        h = w.get("height", L.BUTTON_H)
        pad = w.get("padding", L.MARGIN)
        bw = min(width - 2 * pad, w.get("width") or 110 + 30 * len(text))
        align = w.get("align", "center")
        left = {"start": x + pad, "end": x + width - pad - bw, "stretch": x + pad}.get(align, x + (width - bw) // 2)
        right = x + width - pad if align == "stretch" else left + bw
        n = self.node(w.get("cls", "android.widget.Button"), (left, 12, right, h - 12), w, ctx, text=text,
                      clickable=True, focusable=True)
        if "checked" in w:  # a compound button (Switch, CheckBox, a day toggle): checked by a predicate
            n.checkable, n.checked = True, self.holds(w["checked"], ctx)
        return [n], h

    def _w_dial(self, w, ctx, x, width) -> Built:
        """Items on a circle, the first at 12 o'clock, clockwise (a time picker's clock face)."""
        size = min(width, w.get("size", 780))
        cell = w.get("cell_size", 126)
        left = x + (width - size) // 2
        box = self.node(w.get("cls", "android.view.View"), (left, 0, left + size, size), w, ctx)
        items = self._each(w, ctx)
        radius = (size - cell) / 2
        for i, ictx in enumerate(items):
            angle = 2 * math.pi * i / max(1, len(items))
            cx = left + size / 2 + radius * math.sin(angle)
            cy = size / 2 - radius * math.cos(angle)
            nodes, _ = self.build(w["cell"], ictx, round(cx - cell / 2), cell)
            for n in nodes:
                shift(n, round(cy - cell / 2))
            box.add(*nodes)
        return [box], size

    def _w_icon_button(self, w, ctx, x, width) -> Built:
        size = w.get("size", 147)
        left = x + width - size if w.get("align") == "end" else x
        return [self.node("android.widget.ImageButton", (left, 0, left + size, size), w, ctx,
                          clickable=True, focusable=True)], size

    def _w_icon(self, w, ctx, x, width) -> Built:
        """A launcher icon: a TextView with the app's icon above its label."""
        label = self.text(w.get("label", ""), ctx)
        h = w.get("height", 300)
        shown = label if w.get("show_label", True) else ""  # the dock hides labels, keeps content-desc
        n = self.node("android.widget.TextView", (x + 10, 0, x + width - 10, h), w, ctx, text=shown,
                      desc=label, clickable=True, focusable=True, long_clickable=True)
        return [n], h

    def _w_tile(self, w, ctx, x, width) -> Built:
        """A picture tile (wallpaper grids, categories): image and an optional label."""
        h, pad = w.get("height", 600), w.get("padding", 14)
        label = self.text(w.get("label", ""), ctx)
        box = self.node("android.widget.FrameLayout", (x + pad, pad, x + width - pad, h - pad), w, ctx,
                        clickable=True, focusable=True)
        box.add(Node("android.widget.ImageView", box.bounds, rid=self.rid(w.get("image_id")),
                     desc=self.text(w.get("image_desc", ""), ctx)))
        if label:
            box.add(Node("android.widget.TextView", (x + pad + 30, h - pad - 100, x + width - pad - 30, h - pad - 30),
                         rid=self.rid(w.get("label_id")), text=label))
        return [box], h

    def _w_edit(self, w, ctx, x, width) -> Built:
        bind = self.path(w["bind"], ctx)
        value = _str(get(ctx, bind))
        h = w.get("height", L.EDIT_H)
        pad = w.get("padding", L.MARGIN)
        shown = ("•" * len(value) if w.get("password") else value) or self.text(w.get("hint", ""), ctx)
        n = self.node("android.widget.EditText", (x + pad, 10, x + width - pad, h - 10), w, ctx, text=shown,
                      clickable=True, focusable=True, long_clickable=True, focused=self.focus == bind,
                      password=bool(w.get("password")))
        n.edit, n.submit = bind, w.get("submit")
        return [n], h

    def _w_slider(self, w, ctx, x, width) -> Built:
        h = w.get("height", L.SLIDER_H)
        pad = w.get("padding", L.MARGIN)
        n = self.node("android.widget.SeekBar", (x + pad, 0, x + width - pad, h), w, ctx,
                      text=self.text(w.get("text", ""), ctx), clickable=True, focusable=True)
        n.slider = {"bind": self.path(w["bind"], ctx), "min": w.get("min", 0), "max": w.get("max", 100), "then": w.get("then")}
        return [n], h

    def _w_choice(self, w, ctx, x, width) -> Built:
        """A single-choice dialog row (``CheckedTextView``, as AlertDialog's setSingleChoiceItems)."""
        value = self.value(w.get("value"), ctx)
        bind = self.path(w["bind"], ctx)
        on = get(ctx, bind) == value
        n = self.node("android.widget.CheckedTextView", (x, 0, x + width, L.CHOICE_H), w, ctx,
                      rid="android:id/text1", text=self.text(w.get("text", value), ctx), checkable=True,
                      checked=on, clickable=True, focusable=True)
        n.tap = [{"set": bind, "value": value}] + list(w.get("tap", []))
        return [n], L.CHOICE_H

    def _w_tabs(self, w, ctx, x, width) -> Built:
        tabs = w["items"]
        h = w.get("height", 210)
        box = self.node(w.get("cls", "android.widget.LinearLayout"), (x, 0, x + width, h), w, ctx)
        tw = width // max(1, len(tabs))
        bind = self.path(w["bind"], ctx)
        for i, tab in enumerate(tabs):
            left = x + i * tw
            label = self.text(tab.get("text", ""), ctx)
            t = self.node("android.widget.FrameLayout", (left, 0, left + tw, h), tab, ctx, clickable=True,
                          focusable=True, selected=get(ctx, bind) == tab["value"])
            t.desc = t.desc or label
            t.tap = [{"set": bind, "value": tab["value"]}] + list(tab.get("tap", []))
            t.add(Node("android.widget.TextView", (left + 20, h - 80, left + tw - 20, h - 20), text=label))
            box.add(t)
        return [box], h

    def _w_main_switch(self, w, ctx, x, width) -> Built:
        """Settings' "Use Wi-Fi"-style bar (MainSwitchPreference)."""
        h = w.get("height", 231)
        bind = self.path(w["bind"], ctx)
        on = bool(get(ctx, bind))
        frame = Node("android.widget.LinearLayout", (x + 42, 21, x + width - 42, h - 21),
                     rid="com.android.settings:id/frame", clickable=True, focusable=True, checkable=True,
                     checked=on, tap=[{"toggle": bind}] + list(w.get("tap", [])), ctx=ctx)
        frame.add(Node("android.widget.TextView", (x + 105, 66, x + width - 260, h - 66),
                       rid="com.android.settings:id/switch_text", text=self.text(w.get("title", ""), ctx)),
                  Node("android.widget.Switch", (x + width - 240, 60, x + width - 90, h - 60),
                       rid="android:id/switch_widget", checkable=True, checked=on, focusable=True))
        return [Node("android.widget.FrameLayout", (x, 0, x + width, h)).add(frame)], h

    def _w_pref(self, w, ctx, x, width) -> Built:
        """A Preference row: icon, title, summary, and a switch/checkbox/radio widget."""
        summary = self.text(w.get("summary"), ctx)
        h = w.get("height") or (L.ROW_SUMMARY_H if summary else L.ROW_H)
        row = self.node("android.widget.LinearLayout", (x, 0, x + width, h), w, ctx, clickable=True, focusable=True)
        actions: list = []
        left, right = x + L.MARGIN, x + width - L.MARGIN
        if "radio" in w:
            value = self.value(w["radio"]["value"], ctx)
            bind = self.path(w["radio"]["bind"], ctx)
            on = get(ctx, bind) == value
            frame = Node("android.widget.LinearLayout", (x, 0, x + 189, h), rid="android:id/widget_frame")
            row.add(frame.add(Node("android.widget.RadioButton", (x + 63, h // 2 - 32, x + 126, h // 2 + 32),
                                   rid="android:id/checkbox", checkable=True, checked=on)))
            actions.append({"set": bind, "value": value})
            left = x + 189
        if w.get("icon"):
            frame = Node("android.widget.LinearLayout", (x, 0, x + 189, h), rid="android:id/icon_frame")
            row.add(frame.add(Node("android.widget.ImageView", (x + 63, h // 2 - 32, x + 126, h // 2 + 32),
                                   rid="android:id/icon")))
            left = x + 189
        for kind, cls, rid in (("switch", "android.widget.Switch", "android:id/switch_widget"),
                               ("checkbox", "android.widget.CheckBox", "android:id/checkbox")):
            if kind in w:
                # a path (toggled on tap); {"bind": path, "invert": true}: a "Notifications" switch over
                # a muted flag; {"checked": predicate}: shown only, the row's own tap does the work
                spec = w[kind] if isinstance(w[kind], dict) else {"bind": w[kind]}
                if "checked" in spec:
                    on = self.holds(spec["checked"], ctx)
                else:
                    bind = self.path(spec["bind"], ctx)
                    on = bool(get(ctx, bind)) != bool(spec.get("invert"))
                    actions.append({"toggle": bind})
                frame = Node("android.widget.LinearLayout", (x + width - 252, 0, x + width, h),
                             rid="android:id/widget_frame")
                row.add(frame.add(Node(cls, (x + width - 213, h // 2 - 42, x + width - 63, h // 2 + 42),
                                       rid=rid, checkable=True, checked=on, focusable=True)))
                right = x + width - 252
        text_top = (h - (114 if summary else 58)) // 2
        block = Node("android.widget.RelativeLayout", (left, text_top, right, h - text_top))
        block.add(Node("android.widget.TextView", (left, text_top, right, text_top + 58), rid="android:id/title",
                       text=self.text(w.get("title", ""), ctx)))
        if summary:
            block.add(Node("android.widget.TextView", (left, text_top + 60, right, text_top + 114),
                           rid="android:id/summary", text=summary))
        row.children.insert(1 if "radio" in w or w.get("icon") else 0, block)
        if actions or row.tap:
            row.tap = actions + (row.tap or [])
        return [row], h
