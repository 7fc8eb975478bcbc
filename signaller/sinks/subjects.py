"""Schema ids for the Avro converter: subjects as Debezium's converters name them, ids from the registry.

:class:`RegistrySubjects` is the :class:`~signaller.wire.avro_serializer.SchemaIds` the Avro record
serializer asks: a schema of topic ``T`` goes under ``T-key`` or ``T-value`` (Confluent's default
``TopicNameStrategy``), registered through the key or value converter's
:class:`~signaller.sinks.registry.SchemaRegistryClient` (ids cached there, per subject and schema
text). Errors are the client's: ``RegistryUnavailableError`` (transient: the capture retries with
backoff and resumes from its last committed offsets, so nothing is lost), ``IncompatibleSchemaError``
(terminal) re-raised with the table named. Built per capture session; holds no state of its own.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from signaller.config import SignallerConfig
from signaller.config.sections import ConnectorSection
from signaller.sinks.registry import IncompatibleSchemaError, SchemaRegistryClient

__all__ = ["RegistrySubjects", "registry_client"]


def registry_client(connector: ConnectorSection, *, key: bool) -> SchemaRegistryClient:
    """The registry client of the key (or value) converter: its ``schema.registry.url`` (the first of a
    comma-separated list) with credentials from ``basic.auth.user.info`` (``USER_INFO``) or the URL's
    user-info part (``URL``, the default)."""
    url = (connector.key_registry_url if key else connector.value_registry_url) or ""
    url = url.split(",")[0].strip()
    source = connector.key_credentials_source if key else connector.value_credentials_source
    secret = connector.key_user_info if key else connector.value_user_info
    user_info = secret.reveal() if source == "USER_INFO" and secret is not None else None
    parts = urlsplit(url)
    if parts.username is not None:
        if source == "URL":
            user_info = f"{parts.username}:{parts.password or ''}"
        url = urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
    return SchemaRegistryClient(url, user_info=user_info)


class RegistrySubjects:
    """Registers schemas under ``<topic>-key`` / ``<topic>-value`` (see the module docstring)."""

    def __init__(self, key_registry: SchemaRegistryClient, value_registry: SchemaRegistryClient) -> None:
        self._key = key_registry
        self._value = value_registry

    @classmethod
    def from_config(cls, config: SignallerConfig) -> RegistrySubjects:
        """The subjects of ``config``'s converters (one client per converter, as Connect has)."""
        return cls(registry_client(config.connector, key=True), registry_client(config.connector, key=False))

    def id_for(self, topic: str, *, key: bool, schema: str, table: str | None) -> int:
        """The id of ``schema`` under ``topic``'s key or value subject, registered if new."""
        subject = f"{topic}-{'key' if key else 'value'}"
        try:
            return (self._key if key else self._value).register(subject, schema)
        except IncompatibleSchemaError as exc:
            if table is None or exc.table is not None:
                raise
            raise IncompatibleSchemaError(exc.subject, exc.reason, table=table) from exc
