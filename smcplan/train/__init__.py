"""Learning: trajectory collection, dataset files, trainers (TRL + PEFT) and their CLI.

The top layer beside :mod:`smcplan.eval` (below the CLI): it may import envs, agents,
planning, llm and eval.  The training libraries themselves (trl, peft, datasets, torch) are
imported only in :mod:`smcplan.llm.finetune`.

* :mod:`~smcplan.train.collect`: episodes into resumable JSONL shards with a header;
* :mod:`~smcplan.train.data`: strict readers (:class:`~smcplan.train.data.DatasetLineError`
  names ``file:line``);
* :mod:`~smcplan.train.world_model`: the learned world model (examples, training, scoring);
* :mod:`~smcplan.train.registry`: trainer names → entry functions;
* :mod:`~smcplan.train.cli`: ``smcplan train ...``.
"""

__all__: list[str] = []
