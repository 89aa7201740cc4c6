"""adb's side of the virtual phone: the wire format, one client's connection and its streams, the
TCP server, the RSA keys of adb's authentication, and the interactive shell's line discipline."""
