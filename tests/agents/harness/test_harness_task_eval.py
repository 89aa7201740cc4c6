"""TaskEval over the virtual phone's own shell (in process: the same `hexa-phone` commands adb runs),
and the task files it loads."""
from __future__ import annotations

import json

import pytest
from support.harness_ui import play

from agents.harness.control import PhoneControl
from agents.harness.task_eval import DEFAULT_TASK_FILES, TASK_DIR, TaskEval, TaskEvalError, load_task_files
from agents.phone.device.checks import Task
from agents.phone.device.phone import VirtualPhone
from agents.phone.shell.sh import Shell


class LocalConn:
    """An adb connection's ``shell`` answered by the phone's shell in process."""

    address = "local"

    def __init__(self, phone: VirtualPhone):
        self.shell_ = Shell(phone)

    def shell(self, command: str) -> str:
        return self.shell_.run(command)


def local() -> tuple[VirtualPhone, PhoneControl]:
    phone = VirtualPhone()
    return phone, PhoneControl(LocalConn(phone))


BLUETOOTH_ON = Task(app="settings", instruction="Turn on Bluetooth.", setup={"settings.bluetooth": False},
                    check={"eq": ["settings.bluetooth", True]}, id="t-1")


def test_initialize_poses_the_task_and_success_is_read_from_the_state():
    phone, control = local()
    task = TaskEval(BLUETOOTH_ON, control)
    assert (task.goal, task.app_names) == ("Turn on Bluetooth.", ("settings",))
    task.initialize()
    assert phone.state()["settings"]["bluetooth"] is False
    assert task.is_successful() is False
    play(phone, ["Settings", "Connected devices", "Connection preferences", "Bluetooth", "Use Bluetooth"])
    assert task.is_successful() is True


def test_tear_down_leaves_a_fresh_phone_and_a_task_that_must_be_initialized_again():
    phone, control = local()
    task = TaskEval(BLUETOOTH_ON, control)
    task.initialize()
    phone.launch("com.android.settings")
    task.tear_down()
    assert phone.state()["settings"]["bluetooth"] is True
    assert phone.state()["foreground"]["screen"] == "launcher:home"
    with pytest.raises(TaskEvalError, match="'t-1' was not initialized"):
        task.is_successful()


def test_initialize_notices_a_setup_that_did_not_land():
    class Forgetful(PhoneControl):
        def reset(self, setup=None):
            super().reset(None)

    phone = VirtualPhone()
    with pytest.raises(TaskEvalError, match=r"'t-1': after the reset settings.bluetooth is true, not false"):
        TaskEval(BLUETOOTH_ON, Forgetful(LocalConn(phone))).initialize()


def test_a_nested_setup_counts_as_landed_when_the_state_holds_it():
    _, control = local()
    task = Task(app="settings", instruction="x", setup={"settings": {"wifi": False}}, check={"truthy": "settings.wifi"})
    evaluation = TaskEval(task, control)
    evaluation.initialize()
    assert evaluation.is_successful() is False


def test_every_shipped_task_file_is_a_default_and_their_tasks_load():
    assert set(DEFAULT_TASK_FILES) == set(TASK_DIR.glob("*.jsonl"))
    tasks = load_task_files()
    assert {t.app for t in tasks} == {"settings", "clock", "contacts", "messages"}
    assert len({t.id for t in tasks}) == len(tasks)
    assert [t.id for t in tasks[:1]] == ["settings-01"]


def test_every_shipped_task_starts_unsolved_through_task_eval():
    phone, control = local()
    for task in load_task_files():
        evaluation = TaskEval(task, control)
        evaluation.initialize()
        assert evaluation.is_successful() is False, task.id


def test_an_id_in_two_files_is_refused(tmp_path):
    line = json.dumps({"id": "a-1", "app": "clock", "instruction": "Open Clock.", "check": {"truthy": "clock"}})
    (tmp_path / "one.jsonl").write_text(line + "\n", encoding="utf-8")
    (tmp_path / "two.jsonl").write_text("\n" + line + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"^two.jsonl: task id 'a-1' already in one.jsonl$"):
        load_task_files([tmp_path / "one.jsonl", tmp_path / "two.jsonl"])
