"""Driving a phone over real adb as the agent does, for tests that need to stand on a page: open
the app fresh, then tap each label in turn, swiping the list up until it shows."""
from __future__ import annotations


def open_pages(device, package: str, *labels: str):
    """Launch ``package`` and tap through ``labels``; the screen in front at the end."""
    device.launch(package, fresh=True)
    screen = device.observe()
    for label in labels:
        for _ in range(6):
            row = next((e for e in screen.elements if e.label == label), None)
            if row is not None:
                break
            device.swipe("up", screen)
            screen = device.observe()
        device.tap(row)
        screen = device.observe()
    return screen
