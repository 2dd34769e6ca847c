"""The transports behind :class:`smcplan.llm.LanguageModel`: where the model runs.

* :mod:`smcplan.llm.backends.hf`: a transformers causal LM in this process
  (:class:`~smcplan.llm.backends.hf.TransformersLanguageModel`; ``load_model(name)``);
* :mod:`smcplan.llm.backends.llamacpp`: a GGUF on llama-cpp-python in this process
  (:class:`~smcplan.llm.backends.llamacpp.LlamaCppLanguageModel`; ``load_model("llamacpp:...")``);
* :mod:`smcplan.llm.backends.remote`: an OpenAI-compatible serving engine over HTTP
  (:class:`~smcplan.llm.backends.remote.client.RemoteLanguageModel`;
  ``load_model("openai:<base_url>#<model>")``);
* :mod:`smcplan.llm.backends.llamacpp_server`: starting llama.cpp servers on a loopback port
  (tests, benchmarks), and the GGUF files of the registry;
* :mod:`smcplan.llm.backends.base`: the client side they share (prompt rendering, token ids,
  per-call seeds, ``generate``).

Each backend satisfies the :class:`smcplan.llm.protocol.LanguageModel` protocol
(``tests/llm/test_protocol.py``). Nothing is imported here: a backend's heavy dependencies
(torch, llama_cpp) load only when its module is.
"""
