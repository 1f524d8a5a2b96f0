"""Live MIDI outputs as backends loaded by name (as mido's ``backends/``): the factory
``open_output``, ``parse_spec`` and ``list_ports``. The specs are described in
``instruments.ports.base``; each kind's backend module is imported only when a port of that
kind is built (or its spec checked), so nothing needs rtmidi, libjack or pyo until asked.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from instruments.ports.base import (
    DEFAULT_CLIENT_NAME,
    DEFAULT_PORT_NAME,
    OutputPort,
    PortError,
    PortSpec,
    parse_spec_grammar,
)

#: the backend module (under ``instruments.ports``) of each spec kind
BACKENDS: dict[str, str] = {"jack": "jack", "jack-virtual": "jack", "alsa": "rtmidi",
                            "virtual": "rtmidi", "pyo": "pyo", "memory": "memory"}

__all__ = ["BACKENDS", "DEFAULT_CLIENT_NAME", "DEFAULT_PORT_NAME", "OutputPort", "PortError",
           "PortSpec", "backend", "list_ports", "open_output", "parse_spec"]


def backend(kind: str) -> ModuleType:
    """The backend module of a spec kind (imported on first use)."""
    return importlib.import_module("instruments.ports." + BACKENDS[kind])


def parse_spec(spec: str) -> PortSpec:
    """Parse an output spec such as ``jack:bar:in`` or ``memory:rehearsal.jsonl``; a backend
    that checks its names further (pyo's ``pyo:jack:CLIENT``) does so through its
    ``check_spec``."""
    parsed = parse_spec_grammar(spec)
    check = getattr(backend(parsed.kind), "check_spec", None)
    if check is not None:
        check(parsed)
    return parsed


def open_output(spec: str | PortSpec, *, client_name: str = DEFAULT_CLIENT_NAME,
                port_name: str = DEFAULT_PORT_NAME, **options: Any) -> OutputPort:
    """Build (not open) the output port for ``spec``; use ``with`` or ``.open()`` to open it.

    Every backend module names its port class ``OUTPUT``; ``options`` go to it (the ``pyo``
    output's notes to prepare and the instruments' places)."""
    parsed = parse_spec(spec) if isinstance(spec, str) else spec
    output = backend(parsed.kind).OUTPUT
    return output(parsed, client_name=client_name, port_name=port_name, **options)


def list_ports(api: str = "jack") -> list[str]:
    """Names of the MIDI inputs an output can connect to, on ``api`` (jack, alsa or default)."""
    return backend("alsa").list_ports(api)
