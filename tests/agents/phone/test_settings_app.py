"""Every Settings task is solvable through the real navigation: a scripted run taps elements found
by their text in the dumped XML (centre of their bounds), scrolls, types and presses keys through
the Phone API only, then the task's check passes — and it fails on the fresh state."""
from __future__ import annotations

from pathlib import Path

import pytest

from agents.phone.device.checks import load_tasks
from agents.phone.device.phone import VirtualPhone
from support.phone_ui import dev_instructions, solve

TASKS = Path(__file__).resolve().parents[3] / "assets" / "phone" / "tasks"
WIFI = "Wi\u2011Fi"  # Settings writes Wi-Fi with a non-breaking hyphen, like AOSP

SOLUTIONS: dict[str, list] = {
    "settings-01": ["Settings", "Connected devices", "Connection preferences", "Bluetooth", "Use Bluetooth"],
    "settings-02": ["Settings", "Connected devices", "Connection preferences", "Bluetooth", "Use Bluetooth"],
    "settings-03": ["Settings", "Wallpaper & style", "Change wallpaper", "Life", "Morning hike", "Set wallpaper",
                    "Home and lock screens"],
    "settings-04": ["Settings", "Network & internet", "Internet", WIFI],
    "settings-05": ["Settings", "Network & internet", "Internet", WIFI],
    "settings-06": ["Settings", "Battery", "Battery usage"],
    "settings-07": ["Settings", "System", "Languages", "System languages", "Add a language", "Search", ("type", "Agh"),
                    "Aghem", "Cancel"],
    "settings-08": ["Settings", "Sound & vibration", "Phone ringtone", "Pixel Sounds", "Copycat"],
    "settings-09": ["Settings", "Location", "Use location"],
    "settings-10": ["Settings", "Location", "Use location"],
    "settings-11": ["Settings", "Storage"],
    "settings-12": ["Settings", "Display", "Display size and text", "Make larger"],
    "settings-13": ["Settings", "Network & internet", "Airplane mode"],
    "settings-14": ["Settings", "Network & internet", "Airplane mode"],
    "settings-15": ["Settings", "Display", "Screen timeout", "1 minute"],
    "settings-16": ["Settings", "Display", "Screen timeout", "30 seconds"],
    "settings-17": ["Settings", "System", "System update", "Check for update"],
    "settings-18": ["Settings", "Apps", "Default apps", "Browser app", "Chrome"],
    "settings-19": ["Settings", "Apps", "Default apps", "Browser app", "Firefox"],
    "settings-x01": ["Settings", "Network & internet", "Internet", "Home-5G", ("type", "sunflower42"), "Connect"],
    "settings-x02": ["Settings", "About phone", "Device name"] + [("key", "KEYCODE_DEL")] * len("Pixel 7")
                    + [("type", "Hexa Phone"), "OK"],
    "settings-x03": ["Settings", "Battery", "Battery percentage"],
    "settings-x04": ["Settings", "Display", "Dark theme"],
    "settings-x05": ["Settings", "System", "Languages", "System languages", "More options", "Remove",
                     "English (United Kingdom)", "Remove", "OK"],
    "settings-x06": ["Settings", "System", "Languages", "System languages", "Add a language", "Français", "Canada",
                     "Change"],
    "settings-x07": ["Settings", "Wallpaper & style", "Change wallpaper", "Cityscapes", "Tokyo night", "Set wallpaper",
                     "Lock screen"],
    "settings-x08": ["Settings", "Connected devices", "Pair new device", "JBL Flip 5", "Pair"],
    "settings-x09": ["Settings", "Sound & vibration", "Default alarm sound", "Classic", "Argo Navis"],
    "settings-x10": ["Settings", "Network & internet", "Data Saver", "Use Data Saver"],
    "settings-x11": ["Settings", "Display", "Display size and text"] + ["Make larger"] * 6,
    "settings-x12": ["Settings", "Display", "Screen timeout", "10 minutes"],
}


def all_tasks():
    return load_tasks(TASKS / "settings.jsonl") + load_tasks(TASKS / "settings_extra.jsonl")




def test_the_dev_set_is_covered_verbatim():
    assert [t.instruction for t in load_tasks(TASKS / "settings.jsonl")] == dev_instructions("settings")


@pytest.mark.parametrize("task", all_tasks(), ids=lambda t: t.id)
def test_every_task_is_solvable_and_not_solved_at_start(task):
    phone = VirtualPhone(overrides=task.setup)
    assert not task.passed(phone.state()), "the check passes before anything was done"
    solve(phone, SOLUTIONS[task.id])
    assert task.passed(phone.state()), (phone.state()["foreground"], phone.state()["settings"])


def test_every_task_has_a_solution():
    assert {t.id for t in all_tasks()} == set(SOLUTIONS)
