"""Test helpers in one place, imported as ``support.<module>`` (tests/ is on the path through its
conftest.py): stand-ins (``fakes``: FakeEngine, HashEmbedder; ``scripted_backend``; ``fake_phone``;
``agent_fakes``), drivers (``phone_ui``, ``harness_ui``, ``cli_phone``, ``tui_helpers``), samples
(``ui_samples``), ``memory_helpers``, ``serve_helpers``, ``llama_server`` (a llama.cpp server for routing
tests), and ``tokenizer`` (the real engine's text side without its
weights). A fake is for fault injection or rendering, never the only proof a feature works."""
