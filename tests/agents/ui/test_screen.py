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
