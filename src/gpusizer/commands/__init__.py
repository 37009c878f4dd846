"""Subcommands beyond ``fit``, ``gpus`` and ``models``: one module each, listed in ``cli.COMMANDS``."""
