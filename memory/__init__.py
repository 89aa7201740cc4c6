"""hexa memory package."""
