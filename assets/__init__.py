"""hexa assets package."""
