"""Configuration of the apply job, declared as data and read from a JSON or YAML file.

Property names follow Spark's Kafka source where one exists (``startingOffsets``,
``maxOffsetsPerTrigger``, ``failOnDataLoss``, ``subscribe``, ``subscribePattern``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml


class JobConfigError(ValueError):
    """A job property is unknown or invalid; the message names it, its value and what is accepted."""


@dataclass(frozen=True)
class ApplyJobConfig:
    """Everything the apply job needs.

    ``target_root``: one Delta table per source table at ``<target_root>/<schema>/<table>``
    (``<schema>.<table>`` from the topic name minus the prefix). ``checkpoint_location``: Spark's
    checkpoint; a new checkpoint needs a new ``app_id`` (the Delta idempotent-write id) or every
    write would be skipped as already done, so ``app_id`` defaults to one derived from it.
    """

    bootstrap_servers: str
    target_root: str
    checkpoint_location: str
    subscribe: str | None = None
    subscribe_pattern: str | None = None
    topic_prefix: str | None = None
    starting_offsets: str = "earliest"
    max_offsets_per_trigger: int | None = None
    fail_on_data_loss: bool = True
    trigger_interval: str = "2 seconds"
    available_now: bool = False
    app_id: str | None = None
    tombstone_retention_hours: float = 168.0
    dead_letter_path: str | None = None
    master: str | None = "local[2]"
    spark_conf: dict[str, str] = field(default_factory=dict)

    @property
    def effective_app_id(self) -> str:
        return self.app_id or f"signaller-apply:{self.checkpoint_location}"

    @property
    def effective_dead_letter_path(self) -> str:
        return self.dead_letter_path or f"{self.target_root.rstrip('/')}/_dead_letter"


ALIASES = {
    "kafka.bootstrap.servers": "bootstrap_servers",
    "subscribePattern": "subscribe_pattern",
    "startingOffsets": "starting_offsets",
    "maxOffsetsPerTrigger": "max_offsets_per_trigger",
    "failOnDataLoss": "fail_on_data_loss",
    "checkpointLocation": "checkpoint_location",
}


def load_job_config(path: str | Path) -> ApplyJobConfig:
    """Read ``path`` (JSON or YAML); unknown keys and wrong types raise ``JobConfigError``."""
    text = Path(path).read_text()
    try:
        raw = json.loads(text) if str(path).endswith(".json") else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        msg = f"{path}: not valid JSON/YAML: {exc}"
        raise JobConfigError(msg) from None
    if not isinstance(raw, dict):
        msg = f"{path}: expected a mapping of job properties, got {type(raw).__name__}"
        raise JobConfigError(msg)
    return config_from_mapping(raw, origin=str(path))


def config_from_mapping(raw: dict[str, Any], origin: str = "<mapping>") -> ApplyJobConfig:
    known = {f.name: f for f in fields(ApplyJobConfig)}
    values: dict[str, Any] = {}
    for key, value in raw.items():
        name = ALIASES.get(key, key.replace(".", "_").replace("-", "_"))
        if name not in known:
            msg = f"{origin}: unknown job property {key!r}; accepted: {sorted(known)}"
            raise JobConfigError(msg)
        values[name] = value
    for required in ("bootstrap_servers", "target_root", "checkpoint_location"):
        if not values.get(required):
            msg = f"{origin}: missing required job property {required!r}"
            raise JobConfigError(msg)
    if bool(values.get("subscribe")) == bool(values.get("subscribe_pattern")):
        msg = f"{origin}: set exactly one of 'subscribe' (comma-separated topics) and 'subscribePattern' (a regex)"
        raise JobConfigError(msg)
    return ApplyJobConfig(**values)
