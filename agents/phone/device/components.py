"""Android component names (ComponentName): "pkg/.Main" is short for "pkg/pkg.Main"."""
from __future__ import annotations


def full_class(package: str, activity: str) -> str:
    return package + activity if activity.startswith(".") else activity


def short_name(package: str, activity: str) -> str:
    """ComponentName.flattenToShortString()."""
    cls = full_class(package, activity)
    return f"{package}/{cls[len(package):] if cls.startswith(package + '.') else cls}"
