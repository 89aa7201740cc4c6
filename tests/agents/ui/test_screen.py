"""From uiautomator XML to the elements a user could act on."""
from __future__ import annotations

import pytest

from agents.ui.screen import ScreenError, parse_dump

from support.ui_samples import BLUETOOTH, settings_page


def test_a_settings_row_is_one_element_with_its_title_summary_and_switch():
    screen = parse_dump("UI hierchary dumped to: /sdcard/window_dump.xml\n" + BLUETOOTH)
    assert screen.package == "com.android.settings"
    assert [e.label for e in screen.elements] == ["Use Bluetooth", "Device name", "Pair new device"]
    use = screen.elements[0]
    assert use.checkable and use.checked and use.clickable and use.center == (540, 500)
    assert screen.elements[1].details == ["Pixel 7"] and not screen.elements[1].checkable
    assert use.describe() == '"Use Bluetooth" [switch on]'
    assert screen.elements[1].describe() == '"Device name" (Pixel 7) [button]'
    assert screen.title == "Bluetooth"
    assert screen.scrollable and screen.scrollable[0].bounds == (0, 380, 1080, 2300)


def test_a_switch_state_changes_the_signature():
    off = settings_page("Bluetooth", [("Use Bluetooth", "", False)])
    on = settings_page("Bluetooth", [("Use Bluetooth", "", True)])
    assert parse_dump(off).signature() != parse_dump(on).signature()
    assert parse_dump(on).signature() == parse_dump(on).signature()


def test_disabled_and_zero_size_nodes_are_not_offered():
    xml = BLUETOOTH.replace('bounds="[0,600][1080,800]"', 'bounds="[0,600][0,600]"', 1)
    xml = xml.replace('clickable="true" enabled="true"', 'clickable="true" enabled="false"', 1)
    labels = [e.label for e in parse_dump(xml).elements]
    assert labels == ["Pair new device"]


def test_text_fields_and_escaped_text():
    xml = ("<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\">"
           '<node index="0" text="Search &quot;settings&quot; &amp; more" resource-id="com.x:id/search" '
           'class="android.widget.EditText" package="com.x" content-desc="" checkable="false" checked="false" '
           'clickable="true" enabled="true" focusable="true" focused="false" scrollable="false" '
           'long-clickable="true" password="false" selected="false" bounds="[0,0][1080,200]" /></hierarchy>')
    (e,) = parse_dump(xml).elements
    assert e.editable and e.long_clickable and e.label == 'Search "settings" & more'
    assert e.describe().endswith("[text field]")


@pytest.mark.parametrize("bad", ["", "ERROR: could not get idle state.", "<hierarchy><node",
                                 "<?xml version='1.0' ?><other/>"])
def test_not_a_dump(bad):
    with pytest.raises(ScreenError):
        parse_dump(bad)


def test_like_buttons_without_an_id_are_rows_that_read_the_text_beside_them():
    def node(text="", desc="", cls="android.widget.TextView", bounds="[0,0][1,1]", click="false"):
        return (f'<node index="0" text="{text}" resource-id="" class="{cls}" package="com.x" content-desc="{desc}" '
                f'checkable="false" checked="false" clickable="{click}" enabled="true" focusable="false" '
                f'focused="false" scrollable="false" long-clickable="false" password="false" selected="false" '
                f'bounds="{bounds}" />')
    xml = ("<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\">"
           '<node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="com.x" '
           'content-desc="" checkable="false" checked="false" clickable="false" enabled="true" focusable="false" '
           'focused="false" scrollable="false" long-clickable="false" password="false" selected="false" '
           'bounds="[0,0][1080,2400]">'
           + node("Blocked numbers", bounds="[189,172][1017,239]")
           + node("(212) 555-0103", bounds="[63,582][870,750]")
           + node(desc="Unblock", cls="android.widget.ImageButton", bounds="[933,582][1080,729]", click="true")
           + node("+1 800-555-0175", bounds="[63,750][870,918]")
           + node(desc="Unblock", cls="android.widget.ImageButton", bounds="[933,750][1080,897]", click="true")
           + "</node></hierarchy>")
    screen = parse_dump(xml)
    first, second = [e for e in screen.elements if e.label == "Unblock"]
    assert first.row and second.row
    assert "(212) 555-0103" in screen.row_texts(first) and "+1 800-555-0175" not in screen.row_texts(first)
    assert "+1 800-555-0175" in screen.row_texts(second)
