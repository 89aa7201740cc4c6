"""F8 and F1 as a new user meets them (issue 24): settings open on their first field, Enter or
Ctrl+S saves, the agent's options and the models found on this machine are there; help says how
to reach the messages and how to close it."""
from __future__ import annotations

import tomllib

from textual.widgets import Input, Label, Select

from app.tui.screens.help import HelpScreen
from app.tui.screens.settings import PICK, SettingsScreen
from support.fakes import FakeEngine
from support.synthetic_gguf import write_gguf
from support.tui_helpers import SIZE, hash_memory, make_app, ready, wait


async def open_settings(pilot):
    await ready(pilot)
    await pilot.press("f8")
    await wait(pilot, lambda: isinstance(pilot.app.screen, SettingsScreen), 10, "the settings")
    return pilot.app.screen


async def test_settings_open_on_the_first_field_and_enter_saves(tmp_path):
    app = make_app(FakeEngine(), tmp_path, memory_factory=hash_memory)
    async with app.run_test(size=(120, 40)) as pilot:
        dialog = await open_settings(pilot)
        await pilot.pause()
        assert app.focused is dialog.query_one("#model", Input)
        dialog.query_one("#max_tokens", Input).value = "99"
        await pilot.press("enter")                           # in the model field: saves the form
        await wait(pilot, lambda: not isinstance(app.screen, SettingsScreen), 10, "the settings to close")
        assert tomllib.loads(app.locs.config_file.read_text()) == {"max_tokens": 99}


async def test_ctrl_s_saves_the_agent_options(tmp_path):
    app = make_app(FakeEngine(), tmp_path, memory_factory=hash_memory)
    async with app.run_test(size=(120, 40)) as pilot:
        dialog = await open_settings(pilot)
        dialog.query_one("#device", Input).value = "192.168.1.20:5555"
        dialog.query_one("#agent_steps", Input).value = "30"
        dialog.query_one("#agent_elements").value = "12"
        await pilot.press("ctrl+s")
        await wait(pilot, lambda: not isinstance(app.screen, SettingsScreen), 10, "the settings to close")
        assert tomllib.loads(app.locs.config_file.read_text()) == {
            "device": "192.168.1.20:5555", "agent_steps": 30, "agent_elements": 12}
        assert app.settings.device == "192.168.1.20:5555"


async def test_the_models_found_are_offered_for_the_model_field(tmp_path):
    models = tmp_path / "data" / "models"
    models.mkdir(parents=True)
    mine = write_gguf(models / "tiny-llama.gguf", "llama", file_type=3)
    write_gguf(models / "phi-tiny.gguf", "phi3")                  # not offered: hexa cannot run it
    app = make_app(FakeEngine(), tmp_path, memory_factory=hash_memory)
    async with app.run_test(size=(120, 40)) as pilot:
        dialog = await open_settings(pilot)
        pick = dialog.query_one(f"#{PICK}", Select)
        await wait(pilot, lambda: len(pick._options) > 1, 10, "the models found")
        values = [value for _, value in pick._options if value is not Select.NULL]
        assert str(mine) in values and not any("phi-tiny" in str(v) for v in values)
        assert "" in values                                       # the embedded default
        pick.value = str(mine)
        await pilot.pause()
        assert dialog.query_one("#model", Input).value == str(mine)


async def test_help_says_tab_reaches_the_messages_and_esc_closes_it(tmp_path):
    app = make_app(FakeEngine(), tmp_path, memory_factory=hash_memory)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("f1")
        await wait(pilot, lambda: isinstance(app.screen, HelpScreen), 10)
        text = " ".join(str(label.render()) for label in app.screen.query(Label))
        assert "Tab moves the focus to the messages" in text and "Esc (or F1) closes this help" in text
        await pilot.press("escape")
        await wait(pilot, lambda: not isinstance(app.screen, HelpScreen), 10)
