"""Parses OpenMetrics text (pgcdc's GET /metrics) from stdin with the Prometheus project's
own parser, which refuses text that breaks the format, and prints one JSON object per sample:
{"name": ..., "labels": {...}, "value": ...}."""
import json
import sys

from prometheus_client.openmetrics.parser import text_string_to_metric_families

for family in text_string_to_metric_families(sys.stdin.read()):
    for s in family.samples:
        print(json.dumps({"name": s.name, "labels": s.labels, "value": s.value, "type": family.type}))
