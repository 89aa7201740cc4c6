"""hexa agents package."""
