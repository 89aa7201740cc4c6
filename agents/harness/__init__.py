"""The UI-agent benchmark harness: the phone's state and reset (``control``), one task's life on the
phone (``task_eval``), and freshly drawn task variants (``variants``). The agent (``agents/ui``) never
imports this package: it is judged by it."""
