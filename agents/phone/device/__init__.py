"""The device model: ``VirtualPhone`` (``phone.py``), the apps as data and what their taps do,
the widget interpreter and window layout, the view tree as ``uiautomator`` XML, key codes, and the
task checks over the phone's state."""
