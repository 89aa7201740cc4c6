"""Virtual-phone app definitions and tasks (see README.md)."""
