"""Model assets, not code: installed as ``smcplan.models`` (the top-level ``models/`` folder).

``registry.json`` names the language models :func:`smcplan.llm.load_model` knows; ``roles/``
holds every model role's prompt template, output schema and settings; ``trained/`` holds the
artifacts smcplan trained (adapters, heads), each in its own folder with a ``manifest.json``.
:mod:`smcplan.llm.paths` finds the folder; :mod:`smcplan.llm.artifacts` finds the trained ones.
"""
