"""``hexa paths`` and ``hexa doctor``: where hexa keeps its files, and what works on this machine."""
from __future__ import annotations


def register(sub) -> None:
    paths = sub.add_parser("paths", help="print the config, data, cache and log folders")
    paths.set_defaults(func=cmd_paths)
    doctor = sub.add_parser("doctor", help="check the settings, the model, the backends and versions")
    doctor.set_defaults(func=cmd_doctor)


def cmd_paths(args) -> int:
    for name, path in args.locations.items():
        print(f"{name:<7} {path}")
    print(f"{'models':<7} {args.locations.model_cache}")
    return 0


def cmd_doctor(args) -> int:
    from .. import doctor, settings

    # doctor reports a bad setting instead of stopping at it
    loaded = settings.load(args.locations.config_file, flags=settings.flag_values(args), strict=False)
    return doctor.run(loaded, args.locations)
