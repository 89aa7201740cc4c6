"""A value between two step buttons, over real TCP adb: the button toward the value the task
names is tapped until the slider shows it, whichever way it lies and on a scale of words."""
from __future__ import annotations

import pytest

from agents.ui import stepper
from agents.ui.relevance import Relevance
from agents.ui.slots import analyze
from support.adb_nav import open_pages


@pytest.mark.parametrize("now, want, way", [
    ("100%", "150%", 1), ("200%", "85%", -1), ("Default", "Large", 1), ("Larger", "Small", -1),
    ("Large", "Large", 0), ("Medium", "Tiny", 0),
])
def test_the_direction_of_a_value(now, want, way):
    assert stepper.direction(now, want) == way


def _open_display_size(device):
    open_pages(device, "com.android.settings", "Display", "Display size and text")


@pytest.mark.parametrize("task, start, path, want", [
    ("Set the font size to 130%", {"settings.font_size": {"step": 6, "label": "200%"}}, "font_size", 3),
    ("Change the display size to Large", {"settings.display_size": {"step": 0, "label": "Small"}},
     "display_size", 2),
    ("Change the display size to Small", {"settings.display_size": {"step": 3, "label": "Larger"}},
     "display_size", 0),
])
def test_a_value_is_stepped_to_over_adb(device, phone_server, task, start, path, want):
    phone = phone_server[0]
    phone.reset(start)
    font = phone.state()["settings"]["font_size"]["step"]
    _open_display_size(device)
    info = analyze(task)
    rel, tried = Relevance(info, None), {}
    for _ in range(8):
        screen = device.observe()
        sliders = [e for e in screen.elements if e.cls == "SeekBar"]
        step = stepper.toward(screen, sliders, info.slots[0].text, info, rel, tried)
        if step.action == "done":
            break
        device.tap(step.element)
    assert step.action == "done" and phone.state()["settings"][path]["step"] == want
    if path == "display_size":
        assert phone.state()["settings"]["font_size"]["step"] == font     # the other slider stays


def test_one_step_that_way_when_the_task_names_no_value(device, phone_server):
    phone = phone_server[0]
    phone.reset({"settings.font_size": {"step": 1, "label": "100%"}})
    _open_display_size(device)
    info = analyze("Make the text bigger")
    screen = device.observe()
    sliders = [e for e in screen.elements if e.cls == "SeekBar"]
    step = stepper.toward(screen, sliders, sliders[0].label, info, Relevance(info, None), {})
    assert step.finishes and step.element.label == "Make larger"
    device.tap(step.element)
    assert phone.state()["settings"]["font_size"]["step"] == 2
