"""Currencies of price records: ISO 4217 codes, and which quotes may enter a US-dollar figure.

Every bundled price (``data/prices.toml``, ``data/api-prices.toml``, ``data/ownership.toml``) is in US
dollars, and every derived figure (a GPU's min/typical/max price per hour, the cheapest hosted API price,
a purchase price, costs per token) is in US dollars. A quote in another currency may be recorded with its
``currency`` code; gpusizer bundles no exchange rate, so such a quote is **never converted**: it is kept in
the table, shown with its code, and left out of every US-dollar figure, with the reason ``excluded_reason``
gives.

References
----------
.. [1] ISO 4217, "Codes for the representation of currencies", https://www.iso.org/iso-4217-currency-codes.html
   (the active alphabetic codes below are a subset: the currencies cloud and API price pages are quoted in).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator

__all__ = ["BASE", "CODES", "Currency", "check", "excluded_reason"]

#: The currency of every derived figure. [-]
BASE = "USD"

#: Active ISO 4217 alphabetic codes accepted in a price record.
CODES = frozenset({
    "AUD", "BRL", "CAD", "CHF", "CNY", "CZK", "DKK", "EUR", "GBP", "HKD", "IDR", "ILS", "INR", "JPY", "KRW",
    "MXN", "MYR", "NOK", "NZD", "PLN", "SAR", "SEK", "SGD", "THB", "TRY", "TWD", "USD", "VND", "ZAR", "AED",
})  # fmt: skip


def check(code: str) -> str:
    """``code`` if it is one of ``CODES`` (upper case, as ISO 4217 writes it), else ``ValueError`` naming it.

    >>> check("EUR")
    'EUR'
    """
    if not isinstance(code, str) or code not in CODES:
        raise ValueError(f"currency must be an ISO 4217 code such as 'USD' or 'EUR', got {code!r}")
    return code


#: A pydantic field type: an ISO 4217 code of ``CODES``.
Currency = Annotated[str, AfterValidator(check)]


def excluded_reason(code: str) -> str | None:
    """Why a quote in ``code`` is left out of the US-dollar figures; None for a US-dollar quote.

    >>> excluded_reason("USD") is None, excluded_reason("CNY")
    (True, 'in CNY: gpusizer bundles no dated, sourced exchange rate and does not convert it to USD')
    """
    if check(code) == BASE:
        return None
    return f"in {code}: gpusizer bundles no dated, sourced exchange rate and does not convert it to {BASE}"
