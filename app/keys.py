"""Every key binding of the TUI, by id: default keys and what they do. Each can be remapped in
``config.toml`` under ``[keymap]``; the settings check the ids against this table (no Textual here,
so the command line can validate a config without loading the TUI)."""
from __future__ import annotations

# id -> (default keys, description)
KEYS: dict[str, tuple[str, str]] = {
    "app.quit": ("ctrl+q", "Quit"),
    "app.palette": ("ctrl+p", "Command palette"),
    "app.help": ("f1", "Help: keys and commands"),
    "app.settings": ("f8", "Settings"),
    "mode.next": ("ctrl+t", "Next mode"),
    "mode.assistant": ("f2", "Assistant mode"),
    "mode.summarizer": ("f3", "Summarizer mode"),
    "mode.agent": ("f10", "Agent mode"),
    "chat.send": ("enter", "Send"),
    "chat.newline": ("ctrl+j", "New line in the message"),
    "chat.cancel": ("escape", "Cancel generation"),
    "chat.regenerate": ("ctrl+r", "Regenerate the last response"),
    "chat.continue": ("f5", "Continue the last response"),
    "chat.memory": ("ctrl+l", "Memory for the next message: on/off (context retrieved from past chats)"),
    "session.new": ("ctrl+n", "New session"),
    "session.rename": ("f6", "Rename session"),
    "session.delete": ("f7", "Delete session"),
    "session.system": ("f4", "Edit the session's system prompt"),
    "session.export": ("ctrl+e", "Export session to Markdown"),
    "sessions.toggle": ("ctrl+b", "Show/hide the sessions list"),
    "panels.toggle": ("f9", "Show/hide the live panels"),
    "message.copy": ("c", "Copy the focused message"),
    "message.copy_code": ("k", "Copy the focused message's code block"),
    "message.edit": ("e", "Edit the focused message"),
    "message.delete": ("d", "Delete the focused message"),
    "summary.open": ("ctrl+o", "Open a file to summarize"),
    "summary.style": ("ctrl+s", "Cycle summary style"),
    "agent.explore": ("ctrl+g", "Explore: learn the phone's apps (agent mode)"),
}
