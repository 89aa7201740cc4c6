"""The phone's ``sh``: the parser, mksh builtins and toybox commands, text filters for pipes, the
small file system, and the Android commands a shell reaches (``input``, ``am``, ``pm``, ``wm``,
``uiautomator``, ``dumpsys``...)."""
