"""uiautomator dumps as a Pixel prints them (trimmed to what the tests need)."""

SETTINGS_ROW = ('<node index="{i}" text="" resource-id="" class="android.widget.LinearLayout" '
                'package="com.android.settings" content-desc="" checkable="false" checked="false" '
                'clickable="true" enabled="true" focusable="true" focused="false" scrollable="false" '
                'long-clickable="false" password="false" selected="false" bounds="[0,{y1}][1080,{y2}]">'
                '<node index="0" text="{title}" resource-id="android:id/title" class="android.widget.TextView" '
                'package="com.android.settings" content-desc="" checkable="false" checked="false" '
                'clickable="false" enabled="true" focusable="false" focused="false" scrollable="false" '
                'long-clickable="false" password="false" selected="false" bounds="[189,{t1}][900,{t2}]" />'
                '<node index="1" text="{summary}" resource-id="android:id/summary" class="android.widget.TextView" '
                'package="com.android.settings" content-desc="" checkable="false" checked="false" '
                'clickable="false" enabled="true" focusable="false" focused="false" scrollable="false" '
                'long-clickable="false" password="false" selected="false" bounds="[189,{s1}][900,{s2}]" />'
                '{switch}</node>')
SWITCH = ('<node index="2" text="" resource-id="android:id/switch_widget" class="android.widget.Switch" '
          'package="com.android.settings" content-desc="" checkable="true" checked="{checked}" '
          'clickable="false" enabled="true" focusable="false" focused="false" scrollable="false" '
          'long-clickable="false" password="false" selected="false" bounds="[918,{t1}][1038,{t2}]" />')


def settings_page(title: str, rows: list[tuple[str, str, bool | None]]) -> str:
    body = []
    for i, (name, summary, checked) in enumerate(rows):
        y1 = 400 + i * 200
        sw = "" if checked is None else SWITCH.format(checked=str(checked).lower(), t1=y1 + 50, t2=y1 + 150)
        body.append(SETTINGS_ROW.format(i=i, y1=y1, y2=y1 + 200, title=name, summary=summary,
                                        t1=y1 + 40, t2=y1 + 100, s1=y1 + 100, s2=y1 + 160, switch=sw))
    return ("<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\">"
            '<node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="com.android.settings" '
            'content-desc="" checkable="false" checked="false" clickable="false" enabled="true" focusable="false" '
            'focused="false" scrollable="false" long-clickable="false" password="false" selected="false" '
            'bounds="[0,0][1080,2400]">'
            f'<node index="0" text="{title}" resource-id="com.android.settings:id/collapsing_toolbar" '
            'class="android.widget.TextView" package="com.android.settings" content-desc="" checkable="false" '
            'checked="false" clickable="false" enabled="true" focusable="false" focused="false" scrollable="false" '
            'long-clickable="false" password="false" selected="false" bounds="[63,200][1017,350]" />'
            '<node index="1" text="" resource-id="com.android.settings:id/recycler_view" '
            'class="androidx.recyclerview.widget.RecyclerView" package="com.android.settings" content-desc="" '
            'checkable="false" checked="false" clickable="false" enabled="true" focusable="true" focused="false" '
            'scrollable="true" long-clickable="false" password="false" selected="false" bounds="[0,380][1080,2300]">'
            + "".join(body) + "</node></node></hierarchy>")


BLUETOOTH = settings_page("Bluetooth", [("Use Bluetooth", "", True), ("Device name", "Pixel 7", None),
                                        ("Pair new device", "", None)])
