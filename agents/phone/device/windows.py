"""Lays out one window: a full screen (app bar, fixed header, scrolling body, footer, FAB), an
AlertDialog, or a popup menu. The scrolling body is clipped to its viewport: items scrolled out of
view are absent from the tree and half-visible ones get their visible bounds, as in a real dump.
"""
from __future__ import annotations

from . import layout as L
from .uixml import Node, clip, shift
from .views import View

_RECYCLER = "androidx.recyclerview.widget.RecyclerView"


def build_window(screen: dict, frame, ctx: dict, view: View) -> Node:
    kind = screen.get("kind", "screen")
    if kind in ("dialog", "sheet"):
        return _dialog(screen, frame, ctx, view, sheet=kind == "sheet")
    if kind == "menu":
        return _menu(screen, frame, ctx, view)
    return _screen(screen, frame, ctx, view)


def _scroller(nodes: list[Node], content_h: int, box: tuple[int, int, int, int], offset: int,
              frame, key: str, max_scroll: int, cls: str, rid: str) -> Node:
    """A scrolling container over ``nodes`` (laid out from y=0) showing them from ``offset``."""
    left, top, right, bottom = box
    container = Node(cls, box, rid=rid, scrollable=max_scroll > 0, focusable=max_scroll > 0)
    container.scroll, container.max_scroll = key, max_scroll
    for n in nodes:
        shift(n, top - offset)
        visible = clip(n, box)
        if visible is not None:
            container.add(visible)
    return container


def _screen(screen: dict, frame, ctx: dict, view: View) -> Node:
    width = L.WIDTH
    root = Node("android.widget.FrameLayout", (0, 0, L.WIDTH, L.HEIGHT))
    content = Node("android.widget.FrameLayout", (0, L.TOP, width, L.BOTTOM), rid="android:id/content")
    parent = Node("android.widget.LinearLayout", (0, L.TOP, width, L.BOTTOM), rid=view.rid(screen.get("root_id")))
    root.add(Node("android.widget.LinearLayout", (0, 0, L.WIDTH, L.HEIGHT)).add(content.add(parent)))
    bar = screen.get("toolbar", "small")
    style = bar if isinstance(bar, str) else bar.get("style", "small")
    offset = frame.scroll.get("body", 0)
    expanded = {"large": L.TOOLBAR_LARGE_H, "small": L.TOOLBAR_H}.get(style, 0)
    collapse = expanded - L.TOOLBAR_H if style == "large" else 0
    # the body: measured first, since the collapsing bar's height depends on the scroll offset
    body, content_h = view.build(screen.get("body", []), ctx, 0, width)
    header, header_h = view.build(screen.get("header", []), ctx, 0, width)
    footer, footer_h = view.build(screen.get("footer", []), ctx, 0, width)
    vp_bottom = L.BOTTOM - footer_h
    vh_max = vp_bottom - (L.TOP + expanded + header_h)
    vh_min = vp_bottom - (L.TOP + expanded - collapse + header_h)
    max_scroll = 0 if content_h <= vh_max else collapse + max(0, content_h - vh_min)
    offset = max(0, min(offset, max_scroll))
    frame.scroll["body"] = offset
    bar_h = max(expanded - collapse, expanded - offset) if expanded else 0
    y = L.TOP
    if expanded:
        parent.add(_toolbar(screen, bar, style, ctx, view, y, bar_h))
        y += bar_h
    for n in header:
        shift(n, y)
    parent.add(*header)
    y += header_h
    eaten = min(offset, collapse)  # scroll absorbed by collapsing the bar moves nothing else
    box = (0, y, width, vp_bottom)
    if box[1] < box[3]:
        parent.add(_scroller(body, content_h, box, offset - eaten, frame, "body", max_scroll,
                             screen.get("list_cls", _RECYCLER), view.rid(screen.get("list_id", "recycler_view"))))
    for n in footer:
        shift(n, vp_bottom)
    parent.add(*footer)
    if screen.get("fab"):
        fab_nodes, _ = view.build([screen["fab"]], ctx, 0, width)
        for n in fab_nodes:
            fw, fh = n.bounds[2] - n.bounds[0], n.bounds[3] - n.bounds[1]
            left = (width - fw) // 2 if screen["fab"].get("align") == "center" else width - 63 - fw
            shift(n, vp_bottom - 63 - fh)
            dx = left - n.bounds[0]
            for m in n.walk():
                m.bounds = (m.bounds[0] + dx, m.bounds[1], m.bounds[2] + dx, m.bounds[3])
        content.add(*fab_nodes)
    return root


def _toolbar(screen: dict, bar, style: str, ctx: dict, view: View, top: int, h: int) -> Node:
    actions = [a for a in ([] if isinstance(bar, str) else bar.get("actions", []))
               if "if" not in a or view.holds(a["if"], ctx)]
    # "up": true/false, or the button's content-desc ("Cancel" on an edit form), maybe a template
    up = view.value(screen.get("up", True), ctx)
    slots = sum(a.get("width", 147) for a in actions)  # a text action ("Save") is wider than an icon
    title = view.text(screen.get("title", ""), ctx)
    if style == "large":
        box = Node("android.widget.FrameLayout", (0, top, L.WIDTH, top + h), rid=view.rid("collapsing_toolbar"))
        toolbar = Node("android.view.ViewGroup", (0, top, L.WIDTH, top + L.TOOLBAR_H), rid=view.rid("action_bar"))
        box.add(toolbar)
        # expanded: the title sits large under the bar; collapsed: in the bar next to "Navigate up"
        t_top = top + h - 150 if h > L.TOOLBAR_H + 100 else top + 40
        t_left = 63 if h > L.TOOLBAR_H + 100 else 189
        title_node = Node("android.widget.TextView", (t_left, t_top, L.WIDTH - 63, t_top + 100), text=title)
    else:
        box = Node("android.view.ViewGroup", (0, top, L.WIDTH, top + h), rid=view.rid("action_bar"))
        toolbar = box
        title_node = Node("android.widget.TextView", (189 if up else 63, top + 40, L.WIDTH - 63 - slots,
                                                      top + 107), text=title)
    if up:
        toolbar.add(Node("android.widget.ImageButton", (0, top, 147, top + L.TOOLBAR_H),
                         desc=up if isinstance(up, str) else "Navigate up", clickable=True, focusable=True,
                         tap=list(screen.get("on_back") or [{"back": 1}]), ctx=ctx))
    if title:
        (box if style == "large" else toolbar).add(title_node)
    x = L.WIDTH - slots
    for action in actions:
        slot = action.get("width", 147)
        nodes, _ = view.build([dict(action, type=action.get("type", "icon_button"))], ctx, x, slot)
        for n in nodes:
            shift(n, top)
        toolbar.add(*nodes)
        x += slot
    return box


def _dialog(screen: dict, frame, ctx: dict, view: View, sheet: bool = False) -> Node:
    """An AlertDialog in the middle of the screen, or (``sheet``) a bottom sheet: full width, on the
    bottom edge, its panel the Material ``design_bottom_sheet``."""
    width = L.WIDTH - (0 if sheet else 2 * L.DIALOG_MARGIN)
    x = 0 if sheet else L.DIALOG_MARGIN
    title = view.text(screen.get("title", ""), ctx)
    message = view.text(screen.get("message", ""), ctx)
    title_h = 170 if title else 42
    msg_h = L.text_height(message, width) if message else 0
    body, content_h = view.build(screen.get("body", []), ctx, x, width)
    buttons = [b for b in screen.get("buttons", []) if "if" not in b or view.holds(b["if"], ctx)]
    buttons_h = 189 if buttons else 42
    room = L.DIALOG_MAX_H - title_h - msg_h - buttons_h
    body_h = min(content_h, room)
    total = title_h + msg_h + body_h + buttons_h
    top = L.BOTTOM - total if sheet else L.TOP + (L.BOTTOM - L.TOP - total) // 2
    root = Node("android.widget.FrameLayout", (x, top, x + width, top + total))
    panel = Node("android.widget.LinearLayout", root.bounds,
                 rid=view.rid("design_bottom_sheet") if sheet else "android:id/parentPanel")
    content = Node("android.widget.FrameLayout", root.bounds, rid="android:id/content")
    root.add(content.add(panel))
    y = top
    if title:
        panel.add(Node("android.widget.LinearLayout", (x, y, x + width, y + title_h),
                       rid="" if sheet else "android:id/topPanel").add(
            Node("android.widget.TextView", (x + 73, y + 63, x + width - 73, y + 140),
                 rid="" if sheet else "android:id/alertTitle", text=title)))
    y += title_h
    if message:
        panel.add(Node("android.widget.FrameLayout", (x, y, x + width, y + msg_h), rid="android:id/contentPanel").add(
            Node("android.widget.TextView", (x + 73, y, x + width - 73, y + msg_h), rid="android:id/message",
                 text=message)))
        y += msg_h
    if screen.get("body"):
        max_scroll = max(0, content_h - body_h)
        offset = max(0, min(frame.scroll.get("body", 0), max_scroll))
        frame.scroll["body"] = offset
        listed = screen.get("list", False)
        scroller = _scroller(body, content_h, (x, y, x + width, y + body_h), offset, frame, "body", max_scroll,
                             "android.widget.ListView" if listed else "android.widget.ScrollView",
                             "android:id/select_dialog_listview" if listed else "")
        panel.add(Node("android.widget.FrameLayout", (x, y, x + width, y + body_h), rid="android:id/customPanel")
                  .add(scroller))
        y += body_h
    if buttons:
        bar = Node("android.widget.LinearLayout", (x, y, x + width, y + buttons_h), rid="android:id/buttonPanel")
        right = x + width - 42
        ids = {"positive": "android:id/button1", "negative": "android:id/button2", "neutral": "android:id/button3"}
        for b in reversed(buttons):  # laid out from the right edge: positive last in the list, rightmost
            text = view.text(b.get("text", ""), ctx)
            bw = 84 + 32 * len(text)
            node = view.node("android.widget.Button", (right - bw, y + 21, right, y + 168), b, ctx, text=text,
                             rid=ids.get(b.get("role", "positive"), ""), clickable=True, focusable=True)
            bar.children.insert(0, node)
            right -= bw + 21
        panel.add(bar)
    return root


def _menu(screen: dict, frame, ctx: dict, view: View) -> Node:
    width = 588
    x = L.WIDTH - 21 - width
    items, h = view.build(screen.get("body", []), ctx, x, width)
    top = L.TOP + 21
    root = Node("android.widget.FrameLayout", (x, top, x + width, top + h + 42))
    listview = Node("android.widget.ListView", (x, top + 21, x + width, top + 21 + h))
    for n in items:
        shift(n, top + 21)
    root.add(listview.add(*items))
    return root
