"""The cost-of-ownership flags (``gpusizer cost``/``breakeven``) and the currency of any money shown.

``--own`` with ``--purchase-price``, ``--life-years``, ``--cost-of-capital``, ``--electricity``, ``--pue``,
``--colocation``, ``--colo-kw-month``, ``--hosting-kw`` and ``--rack-units`` become a ``selfhost.Owning``;
``--utilisation``, ``--idle`` and ``--retries`` the factors of the cost per accepted token; ``--currency``
with ``--exchange-rate RATE@DATE`` an ``ownership.ExchangeRate`` (no network: the user states the rate).
Parsing only.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from gpusizer import ownership
from gpusizer.commands import common
from gpusizer.commands.common import CommandError

__all__ = ["add_arguments", "currency", "owning"]


def _fraction(low_open: bool, high_open: bool) -> Any:
    def read(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        low_ok = value > 0 if low_open else value >= 0
        high_ok = value < 1 if high_open else value <= 1
        if not (low_ok and high_ok):
            bounds = f"{'(' if low_open else '['}0, 1{')' if high_open else ']'}"
            raise argparse.ArgumentTypeError(f"must be in {bounds}, got {text!r}")
        return value

    return read


def _non_negative(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (value >= 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text!r}")
    return value


def _at_least_one(text: str) -> float:
    value = common.positive_number(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"a PUE is at least 1, got {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ownership, utilisation and currency flags."""
    table = ownership.ownership_table()
    own = parser.add_argument_group("cost of ownership (docs/ownership.md; defaults: data/ownership.toml)")
    own.add_argument("--own", action="store_true", help="price bought GPUs (amortised purchase + electricity x PUE "
                     "+ hosting) instead of rented GPU-hours")
    own.add_argument("--purchase-price", metavar="USD", type=common.positive_number, default=None,
                     help="USD per GPU (default: the median purchase quote of data/ownership.toml)")
    own.add_argument("--life-years", metavar="YEARS", type=common.positive_number, default=None,
                     help=f"years the purchase is paid off over (default {table.default('life').years:g}, "
                     f"{table.defaults['life']})")
    own.add_argument("--cost-of-capital", metavar="RATE", type=_non_negative, default=0.0,
                     help="yearly interest rate of the money, e.g. 0.08 (default 0: straight line)")
    own.add_argument("--electricity", metavar="USD_PER_KWH", type=common.positive_number, default=None,
                     help=f"USD per kWh (default {table.default('electricity').usd_per_kwh:g}, "
                     f"{table.defaults['electricity']})")
    own.add_argument("--pue", metavar="PUE", type=_at_least_one, default=None,
                     help=f"facility power usage effectiveness (default {table.default('pue').value:g}, "
                     f"{table.defaults['pue']})")
    own.add_argument("--colocation", choices=sorted(table.colocation), default=None,
                     help=f"colocation rate of data/ownership.toml (default {table.defaults['colocation']})")
    own.add_argument("--colo-kw-month", metavar="USD", type=_non_negative, default=None,
                     help="USD per kW of committed power per month, replacing --colocation (0: hosted at home)")
    own.add_argument("--hosting-kw", metavar="KW", type=common.positive_number, default=None,
                     help="kW committed at a per-kW rate (default: the GPUs' TDP)")
    own.add_argument("--rack-units", metavar="U", type=common.count, default=None,
                     help="rack units hosted at a per-cabinet rate (--colocation cabinet-low/-high)")
    use = parser.add_argument_group("utilisation and retries")
    use.add_argument("--utilisation", metavar="U", type=_fraction(True, False), default=1.0,
                     help="mean load while serving as a share of capacity, in (0, 1] (default 1)")
    use.add_argument("--idle", metavar="I", type=_fraction(False, True), default=0.0,
                     help="share of paid hours with no traffic, in [0, 1) (default 0)")
    use.add_argument("--retries", metavar="R", type=_non_negative, default=0.0,
                     help="tokens generated again per delivered token (0.05: 5%% retried; default 0)")
    money = parser.add_argument_group("currency")
    money.add_argument("--currency", metavar="CODE", default=None,
                       help="show money in this ISO 4217 currency, e.g. EUR (needs --exchange-rate; default USD)")
    money.add_argument("--exchange-rate", metavar="RATE@DATE", default=None,
                       help="units of --currency per USD on a date, e.g. 0.92@2026-12-01 (no network: you state it)")


def owning(args: argparse.Namespace) -> Any:
    """The ``selfhost.Owning`` the flags ask for, or None without ``--own``."""
    from gpusizer.selfhost import Owning

    fields = {"purchase_usd": args.purchase_price, "life_years": args.life_years, "usd_per_kwh": args.electricity,
              "pue": args.pue, "colocation": args.colocation, "usd_per_kw_month": args.colo_kw_month,
              "hosting_kw": args.hosting_kw, "rack_units": args.rack_units}
    if not args.own:
        given = [name for name, value in fields.items() if value is not None]
        if given or args.cost_of_capital:
            raise CommandError("--purchase-price, --life-years, --cost-of-capital, --electricity, --pue, "
                               "--colocation, --colo-kw-month, --hosting-kw and --rack-units need --own")
        return None
    return Owning(cost_of_capital=args.cost_of_capital, **fields)


def currency(args: argparse.Namespace) -> ownership.ExchangeRate | None:
    """The ``ExchangeRate`` of ``--currency``/``--exchange-rate``; None for US dollars."""
    code, rate = args.currency, args.exchange_rate
    if rate is None and (code is None or code.strip().upper() == "USD"):
        return None
    if code is None or rate is None:
        raise CommandError("--currency and --exchange-rate go together, e.g. --currency EUR --exchange-rate "
                           "0.92@2026-12-01 (gpusizer reads no rate from the network)")
    try:
        return ownership.exchange_rate(code, rate)
    except ValueError as error:
        raise CommandError(f"--exchange-rate/--currency: {error}") from None
