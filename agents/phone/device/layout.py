"""Screen geometry of the virtual Pixel 7 (1080x2400 px at 420 dpi, so 1 dp = 2.625 px).

Gesture navigation: the bottom ``NAV_H`` pixels hold the gesture handle (no views, as on a real
Pixel, where the navigation bar is a System UI window ``uiautomator dump`` leaves out, like the
status bar). Swiping up from that strip goes home; swiping inwards from a side edge goes back.
"""
from __future__ import annotations

WIDTH, HEIGHT, DENSITY = 1080, 2400, 420
STATUS_H = 132            # status bar (clock, icons, camera cutout)
NAV_H = 63                # gesture handle strip
TOP, BOTTOM = STATUS_H, HEIGHT - NAV_H   # the app's content area
EDGE = 48                 # width of the back-gesture edges
TOUCH_SLOP = 21           # a drag shorter than this is a tap, not a scroll

TOOLBAR_H = 147           # collapsed app bar (56 dp)
TOOLBAR_LARGE_H = 394     # Settings' expanded collapsing toolbar; it collapses as the list scrolls
MARGIN = 63               # list item side padding (24 dp)

ROW_H = 168               # one-line preference (64 dp)
ROW_SUMMARY_H = 210       # title + summary (80 dp)
CATEGORY_H = 136
BUTTON_H = 147
EDIT_H = 147
CHOICE_H = 147
SLIDER_H = 126
TEXT_LINE_H = 57          # one line of body text
CHAR_W = 25               # average advance of a body-text character

DIALOG_MARGIN = 66        # an AlertDialog's side margin
DIALOG_MAX_H = 1680


def text_height(text: str, width: int, line_h: int = TEXT_LINE_H, char_w: int = CHAR_W) -> int:
    """Height of wrapped body text (an estimate by average character width, as a layout would)."""
    per_line = max(1, (width - 2 * MARGIN) // char_w)
    lines = sum(max(1, -(-len(part) // per_line)) for part in str(text).split("\n"))
    return lines * line_h + 42
