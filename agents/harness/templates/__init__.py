"""Task templates per app (``settings``, ``clock``, ``contacts``, ``messages``): each a function drawing
one variant of a kind of task; ``base`` says what a template is, ``pools`` holds the values drawn."""
