"""Prometheus text exposition and OpenMetrics: the line parser, the block parser, the writers."""

from collectors.formats.prom.parser import PARSERS
from collectors.formats.prom.writer import date_ins, format_value, write_exposition, write_scrapes

__all__ = ["PARSERS", "date_ins", "format_value", "write_exposition", "write_scrapes"]
