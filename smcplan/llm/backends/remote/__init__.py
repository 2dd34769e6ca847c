"""The remote backend: a language model behind an OpenAI-compatible serving engine.

* :mod:`~smcplan.llm.backends.remote.client`: :class:`RemoteLanguageModel` and the
  ``openai:<base_url>#<model>`` spec;
* :mod:`~smcplan.llm.backends.remote.http`: the HTTP client (retries, errors);
* :mod:`~smcplan.llm.backends.remote.engines`: per-engine requests and what each can do;
* :mod:`~smcplan.llm.backends.remote.llamacpp`: scoring on llama-cpp-python's server;
* :mod:`~smcplan.llm.backends.remote.llamaserver`: sampling and scoring on llama.cpp's
  ``llama-server``, and batching over its slots.

Uses only the standard library on the wire (plus the client tokenizer); nothing is imported
here.
"""
