"""Java formatting that Kafka's shell output depends on: Double.toString, ISO zoned time."""

from __future__ import annotations

import datetime as dt
import math


def java_double(x: float) -> str:
    """``Double.toString``: shortest digits, plain for 1e-3 <= |x| < 1e7, else ``1.0E7``."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    from decimal import Decimal  # only client quotas need it: keep it off the start-up path

    sign = "-" if x < 0 else ""
    d = Decimal(repr(abs(x)))  # repr gives the shortest round-tripping digits
    digits = "".join(map(str, d.as_tuple().digits)).rstrip("0") or "0"
    exponent = d.adjusted()
    if -3 <= exponent < 7:
        if exponent < 0:
            return f"{sign}0.{'0' * (-exponent - 1)}{digits}"
        whole, frac = digits[:exponent + 1], digits[exponent + 1:]
        whole = whole.ljust(exponent + 1, "0")
        return f"{sign}{whole}.{frac or '0'}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exponent}"


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def iso_zoned_utc(ms: int) -> str:
    """``DateTimeFormatter.ISO_ZONED_DATE_TIME`` of an epoch-millis instant in zone ``UTC``."""
    t = _EPOCH + dt.timedelta(milliseconds=ms)
    frac = ""
    if t.microsecond:
        frac = "." + f"{t.microsecond // 1000:03d}".rstrip("0")
    year = f"{t.year:04d}" if t.year <= 9999 else f"+{t.year}"
    return (f"{year}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}"
            f"{frac}Z[UTC]")
