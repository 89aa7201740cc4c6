"""Device and server together (DiSCo): where each request starts, and when its decoding moves.

Lives in ``engine`` because the assistant (agents) dispatches through it and agents may import
only memory and engine; it reads no settings itself (the app passes endpoints and prices in)."""
