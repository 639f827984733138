"""The unit constants napkin's parser and formatter share (base units: seconds, bytes, joules)."""

from __future__ import annotations

KILO, MEGA, GIGA, TERA, PETA, EXA = 1e3, 1e6, 1e9, 1e12, 1e15, 1e18
KIBI, MEBI, GIBI, TEBI, PEBI = 2.0**10, 2.0**20, 2.0**30, 2.0**40, 2.0**50
MINUTE = 60.0
HOUR = 3600.0
DAY = 86400.0
WEEK = 7 * DAY
YEAR = 365 * DAY
MILLION = MEGA
BITS_PER_BYTE = 8.0
KWH_J = 3.6e6  # joules in one kilowatt-hour
