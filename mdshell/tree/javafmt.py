"""Java formatting that Kafka's shell output depends on: Double.toString, ISO zoned time."""

from __future__ import annotations

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


def _civil(days: int) -> tuple[int, int, int]:
    """(year, month, day) of a day count from 1970-01-01, proleptic Gregorian, any range
    (Howard Hinnant's days-to-civil algorithm; Python's datetime stops at year 9999)."""
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (month <= 2), month, day


def iso_zoned_utc(ms: int) -> str:
    """``DateTimeFormatter.ISO_ZONED_DATE_TIME`` of an epoch-millis instant in zone ``UTC``."""
    days, rest = divmod(ms, 86_400_000)
    year, month, day = _civil(days)
    secs, millis = divmod(rest, 1000)
    hour, secs = divmod(secs, 3600)
    minute, second = divmod(secs, 60)
    frac = "." + f"{millis:03d}".rstrip("0") if millis else ""
    if 0 <= year <= 9999:
        ytext = f"{year:04d}"
    elif year > 9999:
        ytext = f"+{year}"
    else:
        ytext = f"-{-year:04d}"
    return f"{ytext}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}{frac}Z[UTC]"
