"""hexa app package."""
