"""hexa engine package."""
