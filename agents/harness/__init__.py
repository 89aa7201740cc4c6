"""The UI-agent benchmark harness: the phone's state and reset (``control``), one task's life on the
phone (``task_eval``), and freshly drawn task variants (``variants``). The agent (``agents/ui``) never
imports this package: it is judged by it.

    control = PhoneControl(AdbConnection(address, keys_dir))
    control.reset()
    tasks = load_task_files() + draw(None, k=5, seed=1, fresh_state=control.state())
    for task in tasks:
        ev = TaskEval(task, control)
        ev.initialize()          # the task's start state
        ...                      # the agent works on ev.goal
        ok = ev.is_successful()  # the task's check on the phone's state
        ev.tear_down()
"""
