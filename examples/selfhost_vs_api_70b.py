"""Is self-hosting Llama 3.1 70B on 2x H100 cheaper than a hosted API at 50M tokens/day, all in?

A guide's question, end to end: the deployment (2 x H100 SXM, FP8 weights, vLLM) is loaded at a chat mix
of 1,000 prompt + 300 output tokens, billed rented (typical GPU-hour of data/prices.toml) and owned
(purchase amortised over four years, electricity x PUE, colocation per kW, the dated defaults of
data/ownership.toml), and compared with the cheapest hosted price of data/api-prices.toml. The answer
names the traffic at which self-hosting would break even and the utilisation that traffic implies, and
shows the same bill in euros at a stated exchange rate.
"""

from gpusizer import ownership, selfhost

TRAFFIC = 50e6  # prompt + output tokens per day
MIX = {"prompt_tokens": 1000, "output_tokens": 300}
EUR = ownership.exchange_rate("EUR", "0.92@2026-12-01")  # your rate and its date: gpusizer reads no network

for label, own in (("rented", None), ("owned", selfhost.Owning())):
    c = selfhost.compare("llama-3.1-70b", "h100-sxm", gpus=2, weights="fp8", tokens_per_day=TRAFFIC, own=own,
                         utilisation=1.0, retries=0.02, **MIX)
    b = c.breakeven
    assert b is not None and b.self_usd_per_day is not None and b.api_usd_per_day is not None
    print(f"{label}: {c.bill.usd_per_hour:.2f} USD/h ({EUR.convert(c.bill.usd_per_month):,.0f} EUR/month); "
          f"capacity {c.capacity_tokens_per_day / 1e6:,.0f}M tokens/day; "
          f"{c.usd_per_million_accepted_tokens:.3f} USD per million accepted output tokens with 2% retries")
    print(f"  at {TRAFFIC / 1e6:.0f}M tokens/day: self-hosted {b.self_usd_per_day:,.2f} USD/day vs "
          f"{b.api.provider} {b.api_usd_per_day:,.2f} USD/day -> {b.cheaper} is cheaper")
    print(f"  break-even {b.tokens_per_day / 1e6:,.0f}M tokens/day ({b.requests_per_second:.2f} req/s), "
          f"{b.utilisation:.0%} of the deployment's capacity")
    if label == "owned":
        ratio = b.self_usd_per_day / b.api_usd_per_day
        verdict = (f"yes: owning costs {ratio:.2f}x the API" if b.cheaper == "self-host" else
                   f"no: owning costs {ratio:.1f}x the API")
        print(f"Answer at {TRAFFIC / 1e6:.0f}M tokens/day, {verdict}; owning pays from "
              f"{b.tokens_per_day / 1e6:,.0f}M tokens/day.")
